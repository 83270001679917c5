"""features.embed_views: training sees each utterance through speech embeddings whose windows start
at shifted offsets; valid and test stores keep the first (unshifted) one. decode.views: decoding hears
the mean of such views."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from seqx.featurize.audio import load_audio
from seqx.featurize.embedding import STRIDE, SpeechEmbedding
from seqx.featurize.features import FeatureExtractor
from seqx.featurize.store import FeatureStore, FeatureStoreWriter, to_float16
from seqx.recipe import RecipeError, recipe_from_dict

pytest.importorskip("onnxruntime")

TEXTS = ["set the volume to twenty five", "stop", "scroll down"]


@pytest.fixture(scope="module")
def wavs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("views")
    paths = []
    for i, (text, voice) in enumerate(zip(TEXTS, ["en-us", "en-gb", "en-us+f3"])):
        wav = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True).stdout
        paths.append(folder / f"{i}.wav")
        paths[-1].write_bytes(wav)
    return paths


def test_views_are_shifted_windows_and_the_first_is_the_plain_embedding(wavs: list[Path]) -> None:
    wave = load_audio(wavs[0], 16000).numpy()
    emb = SpeechEmbedding()
    views = emb.views(wave, 4)
    np.testing.assert_array_equal(views[0], emb(wave))
    mel = emb.mel(wave)
    for k, view in enumerate(views[1:], 1):  # view k: the reference window-by-window run, k * 2 mel frames later
        np.testing.assert_allclose(view, emb.embed(emb.windows(mel[k * STRIDE // 4 :])), atol=1e-4)
        assert abs(view.shape[0] - views[0].shape[0]) <= 1
        assert np.abs(view[:10] - views[0][:10]).mean() > 0.1  # really another look, not a copy


def test_recipe_checks_views() -> None:
    linear = {"model": {"frontend": "linear"}}
    assert recipe_from_dict({"features": {"kind": "speech_embedding", "embed_views": 2}, **linear}).features.embed_views == 2
    with pytest.raises(RecipeError, match="embed_views: 3 does not divide"):
        recipe_from_dict({"features": {"kind": "speech_embedding", "embed_views": 3}, **linear})
    # another kind ignores it: `--set features.kind=fbank` on the commands recipe just works
    assert recipe_from_dict({"features": {"kind": "fbank", "embed_views": 2}}).features.views == 1


def test_decode_views_hear_the_mean_of_the_shifted_views(wavs: list[Path]) -> None:
    wave = load_audio(wavs[0], 16000)
    emb = SpeechEmbedding()
    views = emb.views(wave.numpy(), 4)
    mean = emb.averaged(wave.numpy(), 4)
    assert mean.shape == views[0].shape  # the first view's frames, its 80 ms grid
    t = min(v.shape[0] for v in views)
    np.testing.assert_allclose(mean[:t], np.mean([v[:t] for v in views], axis=0), atol=1e-6)
    for tail in range(t, mean.shape[0]):  # a frame only some views have: the mean of those
        having = [v[tail] for v in views if v.shape[0] > tail]
        np.testing.assert_allclose(mean[tail], np.mean(having, axis=0), atol=1e-6)
    np.testing.assert_array_equal(emb.averaged(wave.numpy(), 1), views[0])
    se = FeatureExtractor(recipe_from_dict({"features": {"kind": "speech_embedding"},
                                            "model": {"frontend": "linear"}}).features, 16000)  # fmt: skip
    assert torch.equal(se.averaged(wave, 4), torch.from_numpy(mean))
    assert not torch.equal(se.averaged(wave, 4), se(wave))
    fbank = FeatureExtractor(recipe_from_dict({"features": {"kind": "fbank"}}).features, 16000)
    assert torch.equal(fbank.averaged(wave, 4), fbank(wave))  # another kind has no views: ignored
    assert recipe_from_dict({"decode": {"views": 8}}).decode.views == 8
    with pytest.raises(RecipeError, match="decode.views: 3 does not divide"):
        recipe_from_dict({"decode": {"views": 3}})


@pytest.mark.timeout(180)
def test_featurize_stage_writes_train_views_only(tmp_path: Path, wavs: list[Path]) -> None:
    from seqx.featurize.stage import featurize_stage_key, run_featurize_stage
    from seqx.data.manifest import read_manifest

    raw = {
        "name": "t", "exp_dir": str(tmp_path),
        "data": {"source": "manifest", "manifest": {"train": str(tmp_path / "unused.jsonl")}},
        "features": {"kind": "speech_embedding", "workers": 1, "embed_views": 2}, "model": {"frontend": "linear"},
    }  # fmt: skip
    recipe = recipe_from_dict(raw)
    recipe.data_dir.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        rows = [{"id": f"{split}{i}", "audio": str(p), "text": t, "duration": 1.0, "speaker": "s"}
                for i, (p, t) in enumerate(zip(wavs, TEXTS))]  # fmt: skip
        (recipe.data_dir / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_featurize_stage(recipe)
    train, view = FeatureStore(recipe.feats_dir / "train"), FeatureStore(recipe.feats_dir / "train.view1")
    assert view.ids == train.ids and view.texts == train.texts
    assert not (recipe.feats_dir / "valid.view1").exists() and not (recipe.feats_dir / "test.view1").exists()
    extractor = FeatureExtractor(recipe.features, 16000)
    both = extractor.views(load_audio(wavs[1], 16000), 2)
    np.testing.assert_array_equal(train[1], to_float16(both[0].numpy()))
    np.testing.assert_array_equal(view[1], to_float16(both[1].numpy()))
    np.testing.assert_array_equal(FeatureStore(recipe.feats_dir / "valid")[1], train[1])
    # one view: the key a store made before the setting existed had
    utts = {s: read_manifest(recipe.data_dir / f"{s}.jsonl") for s in ("train", "valid", "test")}
    one = recipe_from_dict({**raw, "features": {"kind": "speech_embedding", "workers": 1}})
    assert featurize_stage_key(one, utts) != featurize_stage_key(recipe, utts)
    assert "embed_views" not in json.dumps(one.features.model_dump(exclude={"embed_views"}))


def test_dataset_draws_every_view(tmp_path: Path) -> None:
    from seqx.featurize.cmvn import Cmvn
    from seqx.tokenize.tokenizer import train_tokenizer
    from seqx.recipe import TokenizerSettings
    from seqx.train.dataset import UtteranceDataset

    stores = []
    for k in range(3):  # three views of one utterance: frames all k
        writer = FeatureStoreWriter(tmp_path / f"v{k}", 4)
        writer.add("u0", np.full((5, 4), float(k), np.float32), "stop")
        writer.close()
        stores.append(FeatureStore(tmp_path / f"v{k}"))
    tokenizer = train_tokenizer(["stop"], tmp_path / "tok", TokenizerSettings(kind="char", vocab_size=12))
    cmvn = Cmvn(torch.zeros(4), torch.ones(4))
    data = UtteranceDataset(stores[0], tokenizer, cmvn, views=stores[1:])
    torch.manual_seed(0)
    seen = [float(data[0][0][0, 0]) for _ in range(60)]
    assert set(seen) == {0.0, 1.0, 2.0}
    assert UtteranceDataset(stores[0], tokenizer, cmvn)[0][0].abs().max() == 0  # no views: the store itself
    writer = FeatureStoreWriter(tmp_path / "other", 4)
    writer.add("u9", np.zeros((5, 4), np.float32), "stop")
    writer.close()
    with pytest.raises(ValueError, match="not the utterances"):
        UtteranceDataset(stores[0], tokenizer, cmvn, views=[FeatureStore(tmp_path / "other")])
