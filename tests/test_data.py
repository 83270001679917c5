"""The data stage: a deterministic espeak-ng command corpus, disjoint splits, importers that skip bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from seqx.data.grammar import expand_grammar, vocabulary
from seqx.data.manifest import read_manifest
from seqx.data.stage import run_data_stage
from seqx.errors import SeqxError
from seqx.recipe import load_recipe, recipe_from_dict

SMALL = ["data.size=40", "data.synth.valid_voices=2", "data.synth.test_voices=2"]


def _recipe(tmp_path: Path, *extra: str):  # noqa: ANN202
    return load_recipe("recipes/commands.yaml", [f"exp_dir={tmp_path}", *SMALL, *extra])


def test_default_grammar_size() -> None:
    synth = load_recipe("recipes/commands.yaml").data.synth
    commands = expand_grammar(synth.templates, synth.slots)
    assert len(commands) >= 300
    assert 60 <= len(vocabulary(commands)) <= 120
    assert "set a timer for twenty five minutes" in commands


def test_grammar_names_unknown_slot() -> None:
    with pytest.raises(SeqxError, match="unknown slot"):
        expand_grammar(["open the {thing}"], {})


def test_synth_is_deterministic_and_splits_are_disjoint(tmp_path: Path) -> None:
    first, second = _recipe(tmp_path / "a"), _recipe(tmp_path / "b")
    report = run_data_stage(first)
    run_data_stage(second)
    assert sum(report.counts.values()) == 40 and not report.skipped
    for split in ("train", "valid", "test"):
        a, b = (r.data_dir / f"{split}.jsonl" for r in (first, second))
        assert a.read_bytes() == b.read_bytes()
        for utt in read_manifest(a):
            other = Path(utt.audio.replace(str(first.data_dir), str(second.data_dir)))
            assert Path(utt.audio).read_bytes() == other.read_bytes()
    splits = {s: read_manifest(first.data_dir / f"{s}.jsonl") for s in ("train", "valid", "test")}
    speakers = {s: {u.speaker for u in utts} for s, utts in splits.items()}
    assert not speakers["test"] & (speakers["train"] | speakers["valid"])
    assert not speakers["valid"] & speakers["train"]
    heldout = set((first.data_dir / "heldout_commands.txt").read_text().splitlines())
    assert heldout and not heldout & {u.text for u in splits["train"]}


def test_synth_audio_is_real_speech(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, "data.synth.empty_share=0")
    run_data_stage(recipe)
    utt = read_manifest(recipe.data_dir / "train.jsonl")[0]
    audio, rate = sf.read(utt.audio)
    assert rate == 16000 and audio.ndim == 1
    assert abs(len(audio) / rate - utt.duration) < 1e-3 and 0.5 < utt.duration < 6
    assert np.abs(audio).max() > 0.05


def test_cache_is_a_no_op_and_settings_changes_redo(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    assert not run_data_stage(recipe).fresh
    stamp = (recipe.data_dir / "train.jsonl").stat().st_mtime_ns
    assert run_data_stage(recipe).fresh
    assert (recipe.data_dir / "train.jsonl").stat().st_mtime_ns == stamp
    assert not run_data_stage(_recipe(tmp_path, "data.seed=1")).fresh


def _wav(path: Path, seconds: float = 0.5, silent: bool = False) -> str:
    wav = subprocess.run(["espeak-ng", "-v", "en-us", "--stdout", "check the battery"], capture_output=True, check=True)
    path.write_bytes(wav.stdout)
    if silent:
        sf.write(path, np.zeros(int(16000 * seconds)), 16000)
    return str(path)


def _bad_inputs(folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    good = _wav(folder / "good.wav")
    corrupt = folder / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt garbage")
    return {
        "good": good,
        "corrupt": str(corrupt),
        "silent": _wav(folder / "silent.wav", silent=True),
        "empty_text": _wav(folder / "empty_text.wav"),
        "missing": str(folder / "missing.wav"),
    }


def _manifest_recipe(tmp_path: Path, train: str, **manifest: str):  # noqa: ANN202
    return recipe_from_dict(
        {"name": "imp", "exp_dir": str(tmp_path / "exp"), "data": {"source": "manifest", "manifest": {"train": train, **manifest}}}
    )


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "tsv", "kaldi", "folder"])
def test_importers_keep_good_and_report_bad(tmp_path: Path, fmt: str) -> None:
    files = _bad_inputs(tmp_path / "audio")
    texts = {"good": "check the battery", "corrupt": "x", "silent": "y", "empty_text": "", "missing": "z"}
    if fmt == "jsonl":
        source = tmp_path / "m.jsonl"
        source.write_text("".join(json.dumps({"audio": files[k], "text": t}) + "\n" for k, t in texts.items()))
    elif fmt in ("csv", "tsv"):
        sep = "," if fmt == "csv" else "\t"
        source = tmp_path / f"m.{fmt}"
        source.write_text(f"audio{sep}text\n" + "".join(f"{files[k]}{sep}{t}\n" for k, t in texts.items()))
    elif fmt == "kaldi":
        source = tmp_path / "kaldi"
        source.mkdir()
        (source / "wav.scp").write_text("".join(f"{k} {files[k]}\n" for k in texts))
        (source / "text").write_text("".join(f"{k} {t}\n" for k, t in texts.items()))
    else:
        source = tmp_path / "audio"
        for key, text in texts.items():
            if key != "missing":
                (source / f"{key}.txt").write_text(text)
    recipe = _manifest_recipe(tmp_path, str(source), valid=str(source), test=str(source))
    report = run_data_stage(recipe)
    kept = read_manifest(recipe.data_dir / "train.jsonl")
    assert [Path(u.audio).name for u in kept] == ["good.wav"]
    assert kept[0].text == "check the battery"
    reasons = {Path(what).name: reason for what, reason in report.skipped}
    assert reasons["corrupt.wav"].startswith("unreadable audio")
    assert reasons["silent.wav"].startswith("silent audio")
    assert reasons["empty_text.wav"] == "empty transcript"
    if fmt != "folder":  # a folder lists only files that exist
        assert reasons["missing.wav"] == "missing audio file"


def test_manifest_without_valid_and_test_carves_them_by_speaker(tmp_path: Path) -> None:
    rows = []
    for i in range(12):
        path = tmp_path / f"u{i}.wav"
        sf.write(path, 0.1 * np.sin(np.arange(8000) * 0.05 * (i + 1)), 16000)
        rows.append({"audio": str(path), "text": f"command {i}", "speaker": f"s{i % 4}"})
    source = tmp_path / "all.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = _manifest_recipe(tmp_path, str(source))
    report = run_data_stage(recipe)
    assert sum(report.counts.values()) == 12
    speakers = {s: {u.speaker for u in read_manifest(recipe.data_dir / f"{s}.jsonl")} for s in ("train", "valid", "test")}
    assert speakers["valid"] and speakers["test"]
    assert not speakers["train"] & (speakers["valid"] | speakers["test"])


def test_cli_prints_the_summary_table(tmp_path: Path) -> None:
    import importlib

    from seqx.cli.app import COMMAND_MODULES, app

    for name in COMMAND_MODULES:  # as main() does: register every command
        importlib.import_module(f"seqx.cli.{name}")

    args = ["data", "recipes/commands.yaml", "--set", f"exp_dir={tmp_path}", *sum((["--set", s] for s in SMALL), [])]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "utterances" in result.output and "train" in result.output
    again = CliRunner().invoke(app, args)
    assert "nothing to do" in again.output
