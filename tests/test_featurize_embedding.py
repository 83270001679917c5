"""The speech-embedding front-end on real espeak-ng speech, with the real ONNX models from openwakeword."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from seqx.errors import SeqxError
from seqx.featurize import embedding
from seqx.featurize.audio import load_audio
from seqx.featurize.cmvn import Cmvn
from seqx.featurize.embedding import DIM, FRAME_SECONDS, SpeechEmbedding
from seqx.featurize.features import FeatureExtractor
from seqx.recipe import DecodeSettings, FeatureSettings, ModelSettings, RecipeError, TokenizerSettings, recipe_from_dict

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def waves(tmp_path_factory: pytest.TempPathFactory) -> list[torch.Tensor]:
    import subprocess

    folder = tmp_path_factory.mktemp("emb")
    out = []
    for i, (text, voice) in enumerate(
        [("set the volume to twenty five", "en-us"), ("stop", "en-gb"), ("scroll down", "en-us+f3")]
    ):
        wav = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True).stdout
        (folder / f"{i}.wav").write_bytes(wav)
        out.append(load_audio(folder / f"{i}.wav", 16000))
    return out


def test_shape_and_frame_rate(waves: list[torch.Tensor]) -> None:
    emb = SpeechEmbedding(pad_ms=680)
    for wave in waves:
        frames = emb(wave.numpy())
        seconds = wave.numel() / 16000 + 2 * 0.68
        # one 96-d vector per 80 ms once the first 760 ms window is full
        expected = int((seconds - 0.76) / FRAME_SECONDS) + 1
        assert frames.shape[1] == DIM and frames.dtype == np.float32
        assert abs(frames.shape[0] - expected) <= 1, (frames.shape, expected)
        assert np.isfinite(frames).all()
    # without padding, a 0.5 s word would give nothing: the pad is what makes short commands work
    assert SpeechEmbedding(pad_ms=0)(waves[1].numpy()[:8000]).shape[0] == 1  # padded at the end to one window
    assert SpeechEmbedding(pad_ms=680)(waves[1].numpy()[:8000]).shape[0] >= 10


def test_batched_equals_one_at_a_time(waves: list[torch.Tensor]) -> None:
    emb = SpeechEmbedding(max_windows=7)  # several embedding-model calls per batch too
    batch = emb.batch([w.numpy() for w in waves])
    for wave, got in zip(waves, batch):
        np.testing.assert_allclose(got, emb(wave.numpy()), rtol=1e-5, atol=1e-5)


def test_extractor_kinds_and_utterance_cmvn(waves: list[torch.Tensor]) -> None:
    wave = waves[0]
    plain = FeatureExtractor(FeatureSettings(kind="speech_embedding"), 16000)
    both = FeatureExtractor(FeatureSettings(kind="speech_embedding+fbank", n_mels=40), 16000)
    centered = FeatureExtractor(FeatureSettings(kind="speech_embedding", cmvn="utterance"), 16000)
    a, b, c = plain(wave), both(wave), centered(wave)
    assert a.shape[1] == plain.n_feats == 96 and b.shape == (a.shape[0], 136) and plain.hop_seconds == 0.08
    assert torch.equal(b[:, :96], a)
    # frame 0 pools the first 80 ms of the wave; the last frames pool the trailing silence
    assert b[a.shape[0] // 2, 96:].mean() > b[-1, 96:].mean() + 5
    torch.testing.assert_close(c, a - a.mean(0, keepdim=True))
    assert c.mean(0).abs().max() < 1e-5
    fb = FeatureExtractor(FeatureSettings(kind="fbank", cmvn="utterance"), 16000)(wave)
    assert fb.mean(0).abs().max() < 1e-4


def test_recipe_rejects_conv2d_on_80ms_frames() -> None:
    with pytest.raises(RecipeError, match="model.frontend: conv2d"):
        recipe_from_dict({"features": {"kind": "speech_embedding"}, "model": {"frontend": "conv2d"}})
    with pytest.raises(RecipeError, match="16 kHz"):
        recipe_from_dict(
            {"data": {"sample_rate": 8000}, "features": {"kind": "speech_embedding"}, "model": {"frontend": "linear"}}
        )
    recipe = recipe_from_dict({"features": {"kind": "speech_embedding+fbank"}, "model": {"frontend": "linear"}})
    assert recipe.features.n_feats == 96 + 80 and recipe.features.frame_ms == 80


def test_featurize_stage_with_speech_embedding(tmp_path: Path, waves: list[torch.Tensor]) -> None:
    import soundfile as sf

    from seqx.featurize.stage import run_featurize_stage
    from seqx.featurize.store import FeatureStore

    rows = {"train": [], "valid": [], "test": []}
    texts = ["set the volume to twenty five", "stop", "scroll down"]
    for i, wave in enumerate(waves):
        path = tmp_path / "wav" / f"{i}.wav"
        path.parent.mkdir(exist_ok=True)
        sf.write(path, wave.numpy(), 16000)
        for split, split_rows in rows.items():
            split_rows.append(
                {"id": f"{split}{i}", "audio": str(path), "text": texts[i], "duration": 1.0, "speaker": "s"}
            )
    recipe = recipe_from_dict({
        "name": "t", "exp_dir": str(tmp_path),
        "data": {"source": "manifest", "manifest": {"train": str(tmp_path / "unused.jsonl")}},
        "features": {"kind": "speech_embedding", "workers": 2}, "model": {"frontend": "linear"},
    })  # fmt: skip
    recipe.data_dir.mkdir(parents=True)
    for split, r in rows.items():
        (recipe.data_dir / f"{split}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in r))
    # the parent has sessions already: the forked workers must make their own
    FeatureExtractor(recipe.features, 16000)(waves[0])
    report = run_featurize_stage(recipe)
    assert report.n_feats == 96 and not report.skipped
    store = FeatureStore(recipe.feats_dir / "train")
    want = FeatureExtractor(recipe.features, 16000)(load_audio(rows["train"][0]["audio"], 16000)).numpy()
    np.testing.assert_allclose(store[0].astype(np.float32), want, atol=2e-2, rtol=2e-3)  # float16 store
    assert len(Cmvn.load(recipe.feats_dir / "cmvn.json").mean) == 96


def test_bundle_round_trip_decodes_with_embedding(tmp_path: Path, waves: list[torch.Tensor]) -> None:
    import soundfile as sf

    from seqx.decode.transcribe import featurize, transcribe_files
    from seqx.decode.bundle import load_bundle, save_bundle
    from seqx.model.transformer import ModelDimensions, Seq2SeqTransformer
    from seqx.tokenize.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(
        ["stop", "scroll down", "set the volume"], tmp_path / "tok", TokenizerSettings(kind="char", vocab_size=30)
    )
    features = FeatureSettings(kind="speech_embedding")
    dims = ModelDimensions.from_settings(
        ModelSettings(d_model=32, heads=2, enc_layers=1, dec_layers=1, d_ff=64, frontend="linear"),
        features.n_feats,
        tokenizer,
    )
    torch.manual_seed(0)
    cmvn = Cmvn(torch.randn(96), torch.rand(96) + 0.5)
    save_bundle(
        tmp_path / "model",
        Seq2SeqTransformer(dims).eval(),
        features,
        16000,
        cmvn,
        tokenizer,
        DecodeSettings(beam=2, max_len=8),
    )
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert config["feature_model"] == {"package": "openwakeword", "version": embedding.model_version()}

    bundle = load_bundle(tmp_path / "model")
    assert bundle.features == features
    want = cmvn(FeatureExtractor(features, 16000)(waves[2]))
    torch.testing.assert_close(featurize(bundle, waves[2]), want)
    path = tmp_path / "a.wav"
    sf.write(path, waves[2].numpy(), 16000)
    (result,) = transcribe_files(bundle, [str(path)], bundle.decode)
    assert result.error is None and result.duration > 0  # an untrained model: any text, but it decodes

    config["feature_model"]["version"] = "0.0.1"
    (tmp_path / "model" / "config.json").write_text(json.dumps(config))
    with pytest.raises(SeqxError, match="openwakeword 0.0.1"):
        load_bundle(tmp_path / "model")
