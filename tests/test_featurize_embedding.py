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


def test_whole_utterance_graph_equals_window_by_window(waves: list[torch.Tensor]) -> None:
    """The featurizer runs the embedding once over the utterance; openwakeword's one run per 76-frame
    window (`windowed`, the reference) gives the same numbers to the bit, also when a long input
    is cut into parts of `max_windows` windows."""
    pytest.importorskip("onnx")  # what makes the whole-utterance graph
    assert embedding._graphs()[2] is not None  # the whole-utterance graph is what runs here
    for wave in waves:
        want = SpeechEmbedding().windowed(wave.numpy())
        np.testing.assert_array_equal(SpeechEmbedding()(wave.numpy()), want)
        np.testing.assert_array_equal(SpeechEmbedding(max_windows=5)(wave.numpy()), want)
    features = FeatureExtractor(FeatureSettings(kind="speech_embedding"), 16000)(waves[0]).numpy()
    np.testing.assert_array_equal(features, SpeechEmbedding().windowed(waves[0].numpy()))


def test_whole_utterance_graph_is_made_once_per_user_and_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    onnx = pytest.importorskip("onnx")
    from seqx.featurize.embedding_graph import REWRITE_VERSION, check_stream_model, stream_model_path

    monkeypatch.delenv("SEQX_CACHE_DIR")  # the suite's own folder (conftest): the user's default here
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "embedding_model.onnx"
    shutil.copyfile(embedding.model_dir() / "embedding_model.onnx", source)
    made = stream_model_path(source)
    assert made is not None and made.parent == tmp_path / "cache" / "seqx"
    assert f"openwakeword-{embedding.model_version()}-" in made.name and made.name.endswith(f"-r{REWRITE_VERSION}.onnx")
    assert check_stream_model(source, made) == 0.0
    stamp = made.stat().st_mtime_ns
    assert stream_model_path(source) == made and made.stat().st_mtime_ns == stamp  # found, not made again
    assert [p.name for p in made.parent.iterdir()] == [made.name]  # no temporary file left
    # another graph (another package version would ship one) is another file
    model = onnx.load(str(source))
    model.doc_string = "another build"  # another digest, the same layers
    other = tmp_path / "other.onnx"
    onnx.save(model, str(other))
    assert stream_model_path(other) not in (None, made)
    # a cache that cannot be written: None, and the featurizer runs window by window
    monkeypatch.setenv("XDG_CACHE_HOME", str(source))  # a file, not a folder
    assert stream_model_path(source) is None
    monkeypatch.setenv("SEQX_CACHE_DIR", str(tmp_path / "own"))  # SEQX_CACHE_DIR wins over XDG_CACHE_HOME
    assert stream_model_path(source) == tmp_path / "own" / made.name


def test_views_share_stages_and_equal_one_whole_run_each(waves: list[torch.Tensor]) -> None:
    """2, 4 and 8 views from the graph cut at its time poolings are, to the bit, one whole-graph run per
    view: on speech, on a wave too short for the later views' windows, and on a long one cut into parts."""
    pytest.importorskip("onnx")  # what makes the stage graphs
    from seqx.featurize.embedding import views_of_mel

    assert embedding._stage_sessions(1) is not None  # the stages are what runs here
    emb = SpeechEmbedding(pad_ms=0)
    short = waves[1].numpy()[: embedding.MIN_SAMPLES + 3 * embedding.MEL_HOP]  # one window; shifts of 4+ frames: none
    for wave in [w.numpy() for w in waves] + [short]:
        mel = emb.mel(wave)
        for n in (2, 4, 8):
            got, want = emb.views(wave, n), views_of_mel(mel, n, emb.from_mel)
            assert len(got) == n and [v.shape for v in got] == [v.shape for v in want]
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b)
    first, *rest = emb.views(short, 8)
    assert any(np.array_equal(v, first) for v in rest[3:])  # too short for a window: the first view's frames
    long_wave = np.concatenate([w.numpy() for w in waves])
    np.testing.assert_array_equal(
        SpeechEmbedding(pad_ms=0, max_windows=5).views(long_wave, 4)[2], views_of_mel(emb.mel(long_wave), 4, emb.from_mel)[2]
    )


def test_stage_graphs_are_made_checked_and_kept_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    pytest.importorskip("onnx")
    from seqx.featurize.embedding_graph import stream_model_path
    from seqx.featurize.embedding_stages import STAGES_VERSION, stage_model_paths

    monkeypatch.setenv("SEQX_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "embedding_model.onnx"
    shutil.copyfile(embedding.model_dir() / "embedding_model.onnx", source)
    stream = stream_model_path(source)
    assert stream is not None
    made = stage_model_paths(stream)
    assert made is not None and len(made) == 3
    assert all(p.parent == stream.parent and p.name.endswith(f"-s{STAGES_VERSION}.onnx") for p in made)
    stamps = [p.stat().st_mtime_ns for p in made]
    assert stage_model_paths(stream) == made and [p.stat().st_mtime_ns for p in made] == stamps  # found again
    assert sorted(p.name for p in stream.parent.iterdir()) == sorted([stream.name] + [p.name for p in made])
    (stream.parent / made[1].name).unlink()  # one missing: made again
    assert stage_model_paths(stream) == made and made[1].is_file()


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


@pytest.mark.timeout(180)  # a worker deadlocked on a lock copied from this process would hang here
@pytest.mark.usefixtures("threaded_process")
def test_featurize_stage_with_speech_embedding(tmp_path: Path, waves: list[torch.Tensor]) -> None:
    import soundfile as sf

    from seqx.featurize.stage import run_featurize_stage
    from seqx.featurize.store import FeatureStore, to_float16

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
    # this process runs sessions and threads already (threaded_process): workers must not be its forks
    FeatureExtractor(recipe.features, 16000)(waves[0])
    report = run_featurize_stage(recipe)
    assert report.n_feats == 96 and not report.skipped
    store = FeatureStore(recipe.feats_dir / "train")
    want = FeatureExtractor(recipe.features, 16000)(load_audio(rows["train"][0]["audio"], 16000)).numpy()
    np.testing.assert_array_equal(store[0], to_float16(want))  # a worker's features are this process's
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
