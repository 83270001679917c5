"""Checkpoints: atomic writes, averaging of known state dicts (and the greedy soup), the schedule as a pure function."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from seqx.train.checkpoint import (
    average_checkpoints,
    bundle_weights,
    greedy_soup,
    load_checkpoint,
    read_models,
    save_checkpoint,
)
from seqx.train.schedule import learning_rate


def test_average_of_two_known_state_dicts(tmp_path: Path) -> None:
    a = {"w": torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "b": torch.tensor([0.5]), "steps": torch.tensor(3)}
    b = {"w": torch.tensor([[3.0, 6.0], [-3.0, 0.0]]), "b": torch.tensor([1.5]), "steps": torch.tensor(7)}
    save_checkpoint(tmp_path / "a.pt", {"model": a})
    save_checkpoint(tmp_path / "b.pt", {"model": b})
    avg = average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"])
    assert torch.equal(avg["w"], torch.tensor([[2.0, 4.0], [0.0, 2.0]]))
    assert torch.equal(avg["b"], torch.tensor([1.0]))
    assert avg["w"].dtype == torch.float32
    assert int(avg["steps"]) in (3, 7)  # integer buffers are not averaged
    # one checkpoint averages to itself
    assert torch.equal(average_checkpoints([tmp_path / "a.pt"])["w"], a["w"])


def test_averaging_a_real_model_keeps_it_loadable(tmp_path: Path) -> None:
    from seqx.model.transformer import ModelDimensions, Seq2SeqTransformer

    dims = ModelDimensions(n_feats=8, vocab_size=12, d_model=16, heads=2, enc_layers=1, dec_layers=1, d_ff=32)
    models = [Seq2SeqTransformer(dims) for _ in range(2)]
    for i, m in enumerate(models):
        save_checkpoint(tmp_path / f"{i}.pt", {"model": m.state_dict()})
    avg = average_checkpoints([tmp_path / "0.pt", tmp_path / "1.pt"])
    target = Seq2SeqTransformer(dims)
    target.load_state_dict(avg)
    name = next(k for k, v in avg.items() if v.is_floating_point() and v.dim() == 2)
    expected = (models[0].state_dict()[name] + models[1].state_dict()[name]) / 2
    assert torch.allclose(target.state_dict()[name], expected)


def _ranked(tmp_path: Path, weights: dict[str, float]) -> list[tuple[Path, dict[str, torch.Tensor]]]:
    for name, w in weights.items():
        save_checkpoint(tmp_path / f"{name}.pt", {"model": {"w": torch.tensor([w], dtype=torch.float64)}})
    return read_models([tmp_path / f"{name}.pt" for name in weights])


def test_greedy_soup_keeps_only_the_checkpoints_whose_mean_does_not_get_worse(tmp_path: Path) -> None:
    # ranked best first; the "valid error" of weights w is how far w is from 1.1
    ranked = _ranked(tmp_path, {"best": 1.0, "second": 1.2, "far": 5.0, "tie": 1.1})
    scored: list[float] = []

    def error(weights: dict[str, torch.Tensor]) -> float:
        scored.append(float(weights["w"]))
        return abs(float(weights["w"]) - 1.1)

    paths, weights, err = greedy_soup(ranked, error)
    # best alone 0.1; + second: mean 1.1, error 0 (kept); + far: mean 2.4 (left out); + tie: mean 1.1, same error (kept)
    assert [p.stem for p in paths] == ["best", "second", "tie"]
    assert torch.allclose(weights["w"], torch.tensor([1.1], dtype=torch.float64)) and err < 1e-12
    assert scored == pytest.approx([1.0, 1.1, 2.4, 1.1])


def test_the_bundle_is_the_mean_unless_it_validates_clearly_worse_than_the_best_alone(tmp_path: Path) -> None:
    def error(weights: dict[str, torch.Tensor]) -> float:  # valid error as a function of the one weight
        return abs(float(weights["w"]) - 1.0) / 10 + 0.1

    # a long run: the mean (1.1 -> error 0.11) a little worse than the best alone (0.10): noise, the mean stays
    close = _ranked(tmp_path / "close", {"e16": 1.0, "e18": 1.1, "e14": 1.2})
    paths, weights, err = bundle_weights(close, error)
    assert [p.stem for p in paths] == ["e16", "e18", "e14"] and err == pytest.approx(0.11)
    assert torch.allclose(weights["w"], torch.tensor([1.1], dtype=torch.float64))
    # a short run: the first epoch far off (mean 2.4 -> 0.24, over 1.25 x 0.1 + 0.005): the soup, without it
    short = _ranked(tmp_path / "short", {"e4": 1.0, "e3": 1.2, "e1": 5.0})
    paths, weights, err = bundle_weights(short, error)
    assert [p.stem for p in paths] == ["e4"] and err == pytest.approx(0.1)
    assert float(weights["w"]) == 1.0  # the checkpoint itself
    assert err < error(average_checkpoints([p for p, _ in short]))  # what the plain mean would have been
    # the best one's error as its epoch logged it is not computed again: one pass, for the mean
    calls: list[float] = []

    def counted(weights: dict[str, torch.Tensor]) -> float:
        calls.append(float(weights["w"]))
        return error(weights)

    assert [p.stem for p in bundle_weights(close, counted, first_error=0.1)[0]] == ["e16", "e18", "e14"]
    assert calls == pytest.approx([1.1])


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "ck" / "last.pt"
    save_checkpoint(path, {"step": 1})
    save_checkpoint(path, {"step": 2})
    assert load_checkpoint(path)["step"] == 2
    assert [p.name for p in path.parent.iterdir()] == ["last.pt"]


def test_schedules_warm_up_then_decay() -> None:
    peak, warmup, total = 1e-3, 10, 100
    for kind in ("cosine", "noam"):
        lrs = [learning_rate(s, peak, warmup, total, kind) for s in range(1, total + 1)]
        assert all(x < y for x, y in zip(lrs[:warmup - 1], lrs[1:warmup])), kind  # rising
        assert math.isclose(max(lrs), peak) and lrs.index(max(lrs)) == warmup - 1, kind
        assert all(x >= y for x, y in zip(lrs[warmup:], lrs[warmup + 1:])), kind  # falling
        assert lrs == [learning_rate(s, peak, warmup, total, kind) for s in range(1, total + 1)]  # pure
    assert math.isclose(learning_rate(total, peak, warmup, total, "cosine"), 0.1 * peak)
    # train.lr_floor: where the cosine ends, as a fraction of the peak; half-way it is half-way down
    assert learning_rate(total, peak, warmup, total, "cosine", floor=0.0) == 0.0
    assert math.isclose(learning_rate(55, peak, warmup, total, "cosine", floor=0.0), peak / 2)


def _keeper(folder: Path, run_key: str = "k"):  # noqa: ANN202
    from seqx.recipe import TrainSettings
    from seqx.train.checkpoint import CheckpointKeeper
    from seqx.train.distributed import DistInfo

    return CheckpointKeeper(folder, run_key, TrainSettings(), DistInfo(), torch.device("cpu"))


def test_resume_falls_back_from_a_damaged_last_to_the_newest_good_epoch(tmp_path: Path) -> None:
    import pytest

    from seqx.errors import SeqxError

    for name, step in (("epoch-001.pt", 3), ("epoch-002.pt", 6), ("last.pt", 8)):
        save_checkpoint(tmp_path / name, {"run_key": "k", "step": step, "model": {"w": torch.ones(3) * step}})
    assert _keeper(tmp_path).resumable(print) == tmp_path / "last.pt"

    (tmp_path / "last.pt").write_bytes((tmp_path / "last.pt").read_bytes()[:200])
    (tmp_path / "epoch-002.pt").write_bytes(b"PK\x03\x04 not a checkpoint")
    said: list[str] = []
    assert _keeper(tmp_path).resumable(said.append) == tmp_path / "epoch-001.pt"
    assert len(said) == 1 and said[0].startswith(f"{tmp_path / 'last.pt'}: truncated or corrupt")
    assert said[0].endswith("resuming from epoch-001.pt, the newest good checkpoint")

    (tmp_path / "epoch-001.pt").unlink()
    with pytest.raises(SeqxError, match=r"last.pt: truncated or corrupt .*no good earlier checkpoint.*--restart"):
        _keeper(tmp_path).resumable(said.append)

    save_checkpoint(tmp_path / "last.pt", {"run_key": "other", "model": {}})  # another run's: never skipped over
    with pytest.raises(SeqxError, match="made with other settings or data"):
        _keeper(tmp_path).resumable(said.append)
    assert _keeper(tmp_path / "none").resumable(said.append) is None  # no last.pt: a fresh start


def test_checkpoint_of_a_newer_seqx_names_the_version_to_use(tmp_path: Path) -> None:
    import pytest

    from seqx.train.checkpoint import CorruptCheckpoint, content_digest

    body = {"format": "seqx-checkpoint", "version": 9, "seqx_version": "3.0.0", "model": {}}
    body["checksum"] = content_digest(body)
    torch.save(body, tmp_path / "new.pt")
    with pytest.raises(CorruptCheckpoint, match=r"new.pt: checkpoint version 9 written by seqx 3.0.0.*use seqx 3.0.0"):
        load_checkpoint(tmp_path / "new.pt")
