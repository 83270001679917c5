"""bench/by_engine.py: test-split scores pooled per engine from what `seqx evaluate` writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from by_engine import by_engine  # noqa: E402


def test_scores_are_pooled_per_engine_from_evaluates_free_and_constrained_runs(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "eval").mkdir()
    speakers = {"test-0": "espeak:en-us+m3", "test-1": "flite:slt", "test-2": "flite:kal"}
    (tmp_path / "data" / "test.jsonl").write_text(
        "".join(json.dumps({"id": i, "speaker": s}) + "\n" for i, s in speakers.items())
    )
    header = "id\treference\thypothesis\terrors\n"
    rows = {  # (free, constrained) hypotheses of "check the battery" (3 words)
        "test-0": ("check the battery\t0", "check the battery\t0"),
        "test-1": ("check a battery\t1", "check the battery\t0"),
        "test-2": ("check\t2", "\t3"),
    }
    for k, tag in enumerate(("free", "constrained")):
        lines = "".join(f"{i}\tcheck the battery\t{hyps[k]}\n" for i, hyps in rows.items())
        (tmp_path / "eval" / f"test-{tag}.tsv").write_text(header + lines)
    free = by_engine(tmp_path, "free")
    assert free["flite"] == {"utts": 2, "words": 6, "wer": 50.0, "sentence_acc": 0.0}
    assert free["espeak"]["sentence_acc"] == 100.0 and free["all"]["utts"] == 3
    assert by_engine(tmp_path, "constrained")["flite"]["sentence_acc"] == 50.0
