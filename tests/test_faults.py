"""Faults survived, with real processes: kill -9 anywhere, two runs at once, a full disk, damaged files, a
malicious checkpoint. Each run is `python -m seqx` on a tiny recipe (tests/fault_harness.py), one CPU thread.

The kill chain: one experiment is killed at each unlucky moment of `seqx train` in turn (in the data,
featurize and tokenize stages, mid-epoch, halfway through a checkpoint write, while averaging, between the
bundle's weights and its config), with a full disk three times and a truncated last.pt on the way, each followed
by `seqx train` again; the final bundle must equal an uninterrupted run's byte for byte.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fault_harness import bundle_bytes, error_lines, make_recipe, run, start, warning_lines
from test_train_corpus import one_thread  # noqa: F401

from seqx.errors import SeqxError

KILLED = -9


@pytest.fixture(scope="module")
def wavs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wav")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, wavs: Path) -> dict:
    """Two `seqx train` of one recipe started together: one trains without interruption, one is refused."""
    root = tmp_path_factory.mktemp("reference")
    recipe = make_recipe(root, wavs)
    exp = root / "exp" / "tiny"
    procs = [start(["train", str(recipe)], root) for _ in range(2)]
    results = [(p.pid, p.returncode, out + err) for p in procs for out, err in [p.communicate(timeout=300)]]
    results = [(pid, p.returncode, text) for (pid, _, text), p in zip(results, procs)]
    return {"root": root, "recipe": recipe, "exp": exp, "runs": results, "bundle": bundle_bytes(exp)}


def test_two_runs_at_once_one_trains_the_other_is_refused(reference: dict) -> None:
    (won, code_a, out_a), (lost, code_b, out_b) = sorted(reference["runs"], key=lambda r: r[1])
    assert (code_a, code_b) == (0, 1), out_a + out_b
    assert "bundle written" in out_a, out_a
    lines = [line for line in out_b.splitlines() if line.startswith("error:")]
    # the holder's PID is named once it has written its note (a refusal in the first milliseconds
    # of the other run's hold says "another process")
    named = f"in use by PID {won}" in lines[0] and "started" in lines[0]
    assert len(lines) == 1 and (named or "in use by another process" in lines[0]), out_b
    assert "Traceback" not in out_b
    assert set(reference["bundle"]) == {"config.json", "model.safetensors", "tokenizer.model"}


def test_killed_anywhere_then_run_again_gives_the_uninterrupted_bundle(reference: dict, tmp_path: Path,
                                                                       wavs: Path) -> None:
    recipe = make_recipe(tmp_path, wavs)
    exp = tmp_path / "exp" / "tiny"
    train = ["train", str(recipe)]

    def killed(point: str) -> subprocess.CompletedProcess:
        result = run(train, tmp_path, kill_at=point)
        assert result.returncode == KILLED, f"{point}: not killed there\n{result.stdout}{result.stderr}"
        return result

    killed("data:2")  # between two manifests
    taken = killed("featurize:4")  # mid split, a shard half written
    assert any("took over the lock" in w and "was killed" in w for w in warning_lines(taken)), taken.stderr

    # a full disk while writing a feature shard (RLIMIT_FSIZE below the shard's 60 KB: EFBIG)
    full = run(train, tmp_path, fsize=32 * 1024)
    assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr
    (line,) = error_lines(full)
    assert "shard-00000.f16: disk full" in line and "needs" in line and "limited to 32.0 KB" in line, line

    killed("tokenize")  # the model written, its settings not
    killed("step:5")  # mid-epoch 2, after the step-4 checkpoint
    writing = killed("checkpoint_write:2")  # half of epoch-002.pt on disk
    assert list((exp / "checkpoints").glob("*.tmp*")), "the kill left no half-written checkpoint to clean up"

    # a full disk while writing a checkpoint (1.4 MB, limit 1 MB): one line, last.pt untouched, temporaries gone
    before = (exp / "checkpoints" / "last.pt").read_bytes()
    full = run(train, tmp_path, fsize=1024 * 1024)
    assert full.returncode == 1, full.stdout + full.stderr
    (line,) = error_lines(full)
    assert "epoch-002.pt: disk full" in line and "needs 1.4 MB" in line, line
    assert any("removed 1 half-written temporary" in w for w in warning_lines(full)), full.stderr
    assert (exp / "checkpoints" / "last.pt").read_bytes() == before
    assert not list((exp / "checkpoints").glob("*.tmp*"))
    del writing

    # last.pt truncated (a new file: the epoch checkpoint it was linked to stays good): the newest good one is used
    last = exp / "checkpoints" / "last.pt"
    data = last.read_bytes()
    last.unlink()
    last.write_bytes(data[: len(data) // 3])
    averaging = killed("average:1")
    (warned,) = [w for w in warning_lines(averaging) if "last.pt" in w]
    assert "truncated or corrupt" in warned and "resuming from epoch-001.pt" in warned, warned

    killed("bundle")  # weights written, tokenizer and config not
    # a full disk while writing the bundle's weights (451 KB, limit 300 KB)
    full = run(train, tmp_path, fsize=300 * 1024)
    assert full.returncode == 1, full.stdout + full.stderr
    (line,) = error_lines(full)
    assert "model.safetensors: disk full" in line and "needs" in line, line

    final = run(train, tmp_path)
    assert final.returncode == 0, final.stdout + final.stderr
    assert bundle_bytes(exp) == reference["bundle"]
    assert not list(exp.rglob("*.tmp[0-9]*"))


def test_damaged_store_cmvn_tokenizer_and_bundle_are_named_and_made_again(reference: dict) -> None:
    exp, recipe, root = reference["exp"], reference["recipe"], reference["root"]
    shard = exp / "feats" / "train" / "shard-00000.f16"
    index, cmvn = exp / "feats" / "valid" / "index.json", exp / "feats" / "cmvn.json"
    bpe = exp / "tokenizer" / "bpe.model"
    weights = exp / "model" / "model.safetensors"
    good = {p: p.read_bytes() for p in (shard, index, cmvn, bpe)}

    for path, damage, problem in [
        (shard, good[shard][:1000], "feature shard is 1000 bytes"),
        (index, b'{"n_feats": 40, "ids": [', "corrupt feature index"),
        (cmvn, b'{"mean": [NaN], "std": [1.0]}', "corrupt CMVN statistics"),
    ]:
        path.write_bytes(damage)
        result = run(["featurize", str(recipe)], root)
        assert result.returncode == 0, result.stderr
        (line,) = [w for w in warning_lines(result) if str(path) in w]
        assert problem in line and "featurizing again" in line, line
        assert all(p.read_bytes() == b for p, b in good.items()), f"{path}: not made again the same"

    bpe.write_bytes(good[bpe][:500])
    result = run(["tokenize", str(recipe)], root)
    (line,) = [w for w in warning_lines(result) if str(bpe) in w]
    assert "not a readable sentencepiece model" in line and "training the tokenizer again" in line, line
    assert bpe.read_bytes() == good[bpe]

    flipped = bytearray(weights.read_bytes())
    flipped[-100] ^= 0xFF  # in a weight, not the header: only the checksum sees it
    weights.write_bytes(bytes(flipped))
    result = run(["train", str(recipe)], root)
    assert result.returncode == 0, result.stderr
    (line,) = [w for w in warning_lines(result) if str(weights) in w]
    assert "checksum mismatch" in line and "writing the bundle again" in line, line
    assert bundle_bytes(exp) == reference["bundle"]


@pytest.mark.usefixtures("one_thread")
def test_bundle_files_and_versions_are_checked_when_loading(reference: dict, tmp_path: Path) -> None:
    import shutil

    from seqx.decode.bundle import load_bundle

    def copy() -> Path:
        folder = tmp_path / f"b{len(list(tmp_path.iterdir()))}"
        shutil.copytree(reference["exp"] / "model", folder)
        return folder

    load_bundle(copy())  # intact

    old = copy()  # a bundle of seqx 0.1: no format, no checksums
    config = json.loads((old / "config.json").read_text())
    del config["format"], config["files"]
    (old / "config.json").write_text(json.dumps(config))
    assert load_bundle(old).dims.d_model == 48

    newer = copy()
    (newer / "config.json").write_text(json.dumps({**config, "format": 7, "seqx_version": "9.1.0"}))
    with pytest.raises(SeqxError, match=r"config.json: bundle format 7 written by seqx 9.1.0.*use seqx 9.1.0 or newer"):
        load_bundle(newer)

    for name, damage, problem in [
        ("config.json", b"{not json", "corrupt bundle config"),
        ("model.safetensors", b"\x08\x00", "bytes, the bundle wrote"),
        ("tokenizer.model", b"", "bytes, the bundle wrote"),
    ]:
        folder = copy()
        (folder / name).write_bytes(damage)
        with pytest.raises(SeqxError) as caught:
            load_bundle(folder)
        message = str(caught.value)
        assert message.startswith(str(folder / name)) and problem in message and "\n" not in message, message
    legacy = copy()  # without checksums a damaged file is still one line (safetensors/sentencepiece refuse it)
    (legacy / "config.json").write_text(json.dumps(config))
    (legacy / "tokenizer.model").write_bytes(b"garbage")
    with pytest.raises(SeqxError, match="tokenizer.model: not a readable sentencepiece model"):
        load_bundle(legacy)


class Exploit:
    """Unpickling this runs `touch MARKER`: what a checkpoint handed to you by a stranger can do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        import os

        return (os.system, (f"touch {self.marker}",))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.usefixtures("one_thread")
def test_malicious_and_corrupt_checkpoints_are_refused_and_nothing_runs(reference: dict, tmp_path: Path) -> None:
    from seqx.train.checkpoint import CorruptCheckpoint, load_checkpoint

    marker = tmp_path / "pwned"
    zipped, raw = tmp_path / "zip.pt", tmp_path / "raw.pt"
    torch.save({"model": {}, "state": Exploit(marker)}, zipped)
    raw.write_bytes(pickle.dumps({"model": {}, "state": Exploit(marker)}, protocol=4))  # a plain pickle file
    for path, names in ((zipped, r" \((posix|os)\.system\)"), (raw, "")):
        with pytest.raises(CorruptCheckpoint, match=rf"{path.name}: refused: it holds Python objects{names}, not only"):
            load_checkpoint(path)
    assert not marker.exists(), "loading the checkpoint ran its code"
    # the pickle is a real exploit: unsafe loading (what seqx 0.1 did) runs it
    unsafe = f"import torch; torch.load({str(zipped)!r}, weights_only=False)"
    subprocess.run([sys.executable, "-c", unsafe], check=True, capture_output=True)
    assert marker.exists()

    good = reference["exp"] / "checkpoints" / "last.pt"
    assert load_checkpoint(good)["version"] == 2
    data = bytearray(good.read_bytes())
    flipped = tmp_path / "flipped.pt"
    data[len(data) // 2] ^= 0xFF  # inside a tensor: torch's reader does not check CRCs, the checksum does
    flipped.write_bytes(bytes(data))
    with pytest.raises(CorruptCheckpoint, match="checksum mismatch"):
        load_checkpoint(flipped)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[:5000])
    with pytest.raises(CorruptCheckpoint, match=r"truncated.pt: truncated or corrupt"):
        load_checkpoint(truncated)
