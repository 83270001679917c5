"""The exported model and the torch-free runtime: the same transcripts as the torch bundle, log-probs
within 1e-4, numpy features within 1e-3 of torchaudio's, int8 close, each front-end exports, a broken
folder is one line, and `seqx.runtime` never imports torch.

One tiny model (fbank + conv2d + CTC head, char tokens) is trained once for the module, as in
tests/test_decode.py; the front-end tests export randomly initialized models (equality does not
need a trained model, and each would cost a minute of training).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ESPEAK_ONLY

from seqx.data.manifest import read_manifest
from seqx.decode.bundle import Bundle, load_bundle, save_bundle
from seqx.decode.transcribe import featurize, transcribe_files
from seqx.errors import SeqxError
from seqx.export.onnx_export import export_bundle
from seqx.model.transformer import Seq2SeqTransformer
from seqx.recipe import FeatureSettings, Recipe, load_recipe
from seqx.runtime import load_exported, settings_for
from seqx.runtime import transcribe_files as runtime_transcribe
from seqx.runtime.features import NumpyFeatures
from seqx.train.stage import run_train_stage

REPO = Path(__file__).resolve().parents[1]
TINY = [
    "device_profiles={}",
    "data.size=64",
    "data.synth.templates=['open the {app}', 'check the battery', 'scroll {way}']",
    "data.synth.slots={app: [terminal, browser], way: [up, down]}",
    *ESPEAK_ONLY,
    "data.synth.accents=[en-us]",
    "data.synth.variants=['', m3, f2]",
    "data.synth.valid_voices=1",
    "data.synth.test_voices=1",
    "data.synth.heldout_command_share=0",
    "data.synth.empty_share=0.2",
    "data.synth.noise_share=0",
    "data.synth.rate_wpm=[170, 170]",
    "data.synth.oog_share=0",  # the corpus these tests were written for: commands only
    "features.kind=fbank",  # the runtime twin is under test, on the cheapest features
    # the runtime has no Silero gate, intent parsing or free-beam rejection yet (docs/export.md): compare like with like
    "decode.vad_threshold=0",
    "decode.grammar=none",
    "decode.free_beam=0",
    "features.n_mels=40",
    "features.specaugment=false",
    "tokenizer.kind=char",
    "model.d_model=48",
    "model.heads=2",
    "model.enc_layers=2",
    "model.dec_layers=1",
    "model.d_ff=96",
    "model.dropout=0",
    "model.frontend=conv2d",
    "model.conv_channels=8",
    "train.epochs=40",
    "train.lr=0.005",
    "train.label_smoothing=0",
    "train.warmup_steps=10",
    "train.max_frames=600",
    "train.workers=0",
    "train.valid_max_utts=8",
    "train.device=cpu",
    "decode.max_len=40",
    "decode.max_len_ratio=1.5",
    "decode.beam=4",
    "decode.precision=fp32",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recipe, Bundle, Path]:
    root = tmp_path_factory.mktemp("runtime")
    recipe = load_recipe("recipes/commands.yaml", [f"exp_dir={root}", *TINY])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run_train_stage(recipe, device="cpu")
    finally:
        torch.set_num_threads(threads)
    bundle = load_bundle(recipe.bundle_dir)
    export_bundle(bundle, root / "onnx")
    return recipe, bundle, root / "onnx"


def _split_audio(recipe: Recipe, split: str) -> list[str]:
    return [u.audio for u in read_manifest(recipe.data_dir / f"{split}.jsonl")]


def _texts(results: list) -> list[str]:  # noqa: ANN001
    return [r.text for r in results]


def test_fp32_export_transcribes_the_test_split_like_torch(trained: tuple[Recipe, Bundle, Path]) -> None:
    recipe, bundle, onnx_dir = trained
    paths = _split_audio(recipe, "test") + _split_audio(recipe, "valid")
    exported = load_exported(onnx_dir, threads=1)
    for options in ({}, {"greedy": True}, {"nbest": 3}):
        torch_results = transcribe_files(bundle, paths, bundle.decode.merged(**options))
        onnx_results = runtime_transcribe(exported, paths, settings_for(exported, **options))
        assert _texts(onnx_results) == _texts(torch_results), options
        for a, b in zip(onnx_results, torch_results, strict=True):
            assert [h["text"] for h in a.nbest] == [h["text"] for h in b.nbest]
            assert a.score == pytest.approx(b.score, abs=1e-4)
            assert a.no_speech == b.no_speech
            assert (a.ctc_gap is None) == (b.ctc_gap is None)
            if a.ctc_gap is not None:
                assert a.ctc_gap == pytest.approx(b.ctc_gap, abs=1e-4)
    assert any(r.text for r in onnx_results), "the tiny model should recognize something"


def test_log_probs_agree_within_1e4(trained: tuple[Recipe, Bundle, Path]) -> None:
    recipe, bundle, onnx_dir = trained
    exported = load_exported(onnx_dir, threads=1)
    from seqx.featurize.audio import load_audio
    from seqx.runtime.transcribe import encode

    waves = [load_audio(p, bundle.sample_rate) for p in _split_audio(recipe, "test")[:6]]
    feats = [featurize(bundle, w) for w in waves]
    np_feats = [exported.features(w.numpy()) for w in waves]
    for a, b in zip(np_feats, feats, strict=True):
        assert np.abs(a - b.numpy()).max() < 1e-3  # the stated feature tolerance
    # the graphs themselves, on the same (torch) features: log-probs within 1e-4
    memory_t, lens_t = bundle.model.encode(torch.nn.utils.rnn.pad_sequence(feats, batch_first=True), torch.tensor([f.shape[0] for f in feats]))
    ctc_t = bundle.model.ctc_logprobs(memory_t).detach().numpy()
    _, lens, ctc, ck, cv = encode(exported, [f.numpy() for f in feats])
    assert np.array_equal(lens, lens_t.numpy())
    mask = np.arange(ctc.shape[1])[None, :] < lens[:, None]
    assert np.abs(ctc - ctc_t)[mask].max() < 1e-4
    cache = bundle.model.new_cache(memory_t.detach())
    tokens = torch.full((len(feats), 1), bundle.dims.bos_id)
    L, H = bundle.dims.dec_layers, bundle.dims.heads
    k = np.zeros((L, len(feats), H, 0, bundle.dims.d_model // H), np.float32)
    v = k
    for step in range(4):  # a few cached steps, feeding the same tokens to both
        ref = torch.log_softmax(bundle.model.decode(tokens, memory_t, lens_t, cache)[:, -1], -1).detach().numpy()
        got, k, v = exported.step.run(None, {
            "token": tokens.numpy(), "self_k": k, "self_v": v, "cross_k": ck, "cross_v": cv, "mem_lens": lens,
        })  # fmt: skip
        assert np.abs(got - ref).max() < 1e-4, step
        tokens = torch.from_numpy(ref.argmax(-1))[:, None]


def test_int8_changes_few_transcripts(trained: tuple[Recipe, Bundle, Path], tmp_path: Path) -> None:
    recipe, bundle, onnx_dir = trained
    report = export_bundle(bundle, tmp_path / "int8", int8=True)
    fp32_size = sum(p.stat().st_size for p in onnx_dir.glob("*.onnx"))
    assert sum(v for k, v in report.sizes.items() if k.endswith(".onnx")) < fp32_size
    paths = _split_audio(recipe, "test") + _split_audio(recipe, "valid") + _split_audio(recipe, "train")
    fp32 = _texts(runtime_transcribe(load_exported(onnx_dir, threads=1), paths))
    int8 = _texts(runtime_transcribe(load_exported(tmp_path / "int8", threads=1), paths))
    changed = sum(a != b for a, b in zip(fp32, int8, strict=True))
    assert changed <= 0.1 * len(paths), f"int8 changed {changed} of {len(paths)} transcripts"


@pytest.mark.parametrize("frontend", ["none", "linear", "conv2d"])
def test_each_front_end_exports_and_decodes_alike(
    trained: tuple[Recipe, Bundle, Path], tmp_path: Path, frontend: str
) -> None:
    recipe, bundle, _ = trained
    torch.manual_seed(0)
    d_model = bundle.dims.n_feats if frontend == "none" else 32
    dims = replace(bundle.dims, frontend=frontend, d_model=d_model, heads=2, d_ff=64, conv_channels=4, dec_layers=2)
    model = Seq2SeqTransformer(dims).eval()
    folder = save_bundle(tmp_path / "bundle", model, bundle.features, bundle.sample_rate, bundle.cmvn, bundle.tokenizer, bundle.decode)
    random_bundle = load_bundle(folder)
    report = export_bundle(random_bundle, tmp_path / "onnx")
    assert max(report.max_abs_diff.values()) < 1e-4
    paths = _split_audio(recipe, "test")[:6]
    exported = load_exported(tmp_path / "onnx", threads=1)
    settings = random_bundle.decode.merged(max_ctc_gap=0.0)  # an untrained model's gaps are huge: keep its texts
    torch_nbest = [r.nbest for r in transcribe_files(random_bundle, paths, settings)]
    onnx_nbest = [r.nbest for r in runtime_transcribe(exported, paths, settings_for(exported, max_ctc_gap=0.0))]
    assert [[h["text"] for h in n] for n in onnx_nbest] == [[h["text"] for h in n] for n in torch_nbest]


@pytest.mark.parametrize("kind", ["fbank", "mfcc"])
def test_numpy_features_match_torchaudio(espeak_wav, tmp_path: Path, kind: str) -> None:  # noqa: ANN001
    from seqx.featurize.audio import load_audio
    from seqx.featurize.features import FeatureExtractor

    settings = FeatureSettings(kind=kind, n_mels=80)
    for text, voice in (("check the battery", "en-us"), ("scroll down", "en-gb-scotland+f2")):
        wave = load_audio(espeak_wav(tmp_path / f"{voice}.wav", text, voice), 16000)
        for piece in (wave, wave[:100], wave[:1]):  # a whole command, a click, one sample
            ref = FeatureExtractor(settings, 16000)(piece).numpy()
            got = NumpyFeatures(settings.model_dump(), 16000, {"mean": [0.0], "std": [1.0]}).frames(piece.numpy())
            assert got.shape == ref.shape
            assert np.abs(got - ref).max() < 1e-3


def test_incomplete_or_corrupt_folder_is_one_line(trained: tuple[Recipe, Bundle, Path], tmp_path: Path) -> None:
    import shutil

    _, _, onnx_dir = trained
    broken = tmp_path / "broken"
    shutil.copytree(onnx_dir, broken)
    (broken / "decoder_step.onnx").unlink()
    with pytest.raises(SeqxError, match="missing decoder_step.onnx"):
        load_exported(broken)
    shutil.copyfile(onnx_dir / "decoder_step.onnx", broken / "decoder_step.onnx")
    (broken / "encoder.onnx").write_bytes(b"not a graph")
    with pytest.raises(SeqxError, match="encoder.onnx: not a loadable ONNX graph"):
        load_exported(broken)
    shutil.copyfile(onnx_dir / "encoder.onnx", broken / "encoder.onnx")
    (broken / "config.json").write_text("{")
    with pytest.raises(SeqxError, match="config.json: broken export config"):
        load_exported(broken)
    run = subprocess.run(
        [sys.executable, "-m", "seqx", "transcribe", "--model", str(broken), str(broken / "tokenizer.model")],
        capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "COLUMNS": "300", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert run.returncode == 1
    lines = [line for line in run.stdout.splitlines() + run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "broken export config" in lines[0], lines


def test_runtime_and_cli_never_import_torch(trained: tuple[Recipe, Bundle, Path]) -> None:
    recipe, _, onnx_dir = trained
    wav = _split_audio(recipe, "test")[0]
    code = (
        "import sys, runpy\n"
        "from seqx.runtime import load_exported, transcribe_files\n"
        f"r = transcribe_files(load_exported({str(onnx_dir)!r}), [{wav!r}])\n"
        "assert r[0].error is None\n"
        f"sys.argv = ['seqx', 'transcribe', '--model', {str(onnx_dir)!r}, {wav!r}]\n"
        "from seqx.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.') or m == 'torchaudio')\n"
        "print('IMPORTED', bad)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr
    assert "IMPORTED []" in run.stdout


def test_python_m_seqx_runtime_prints_the_text(trained: tuple[Recipe, Bundle, Path]) -> None:
    recipe, bundle, onnx_dir = trained
    wav = next(u.audio for u in read_manifest(recipe.data_dir / "test.jsonl") if u.text)
    expected = transcribe_files(bundle, [wav], bundle.decode)[0].text
    run = subprocess.run(
        [sys.executable, "-m", "seqx.runtime", str(onnx_dir), wav, "--json"], capture_output=True, text=True,
        cwd=REPO, env={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["text"] == expected


class _TorchGrammarMask:
    """The grammar scorer as seqx/decode/scorers.py's docstring specifies it (the torch twin the grammar
    package brings): 0 where the automaton allows a token, -inf elsewhere; states follow the beams."""

    partial, weight = False, 1.0

    def __init__(self, automaton) -> None:  # noqa: ANN001
        self.automaton = automaton

    def init(self, rows: int) -> None:
        self.state = torch.full((rows,), self.automaton.start, dtype=torch.long)

    def score(self, cand: torch.Tensor | None) -> torch.Tensor:
        allowed = self.automaton.allowed(self.state)
        return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))

    def select(self, rows: torch.Tensor | None, tokens: torch.Tensor) -> None:
        self.state = self.automaton.advance(self.state if rows is None else self.state[rows], tokens)


def test_grammar_mask_decodes_like_the_torch_scorer(trained: tuple[Recipe, Bundle, Path], tmp_path: Path) -> None:
    """A grammar in the export's config.json constrains the runtime's beam exactly as a torch scorer does."""
    import shutil

    from seqx.decode.search import beam_search, max_output_len
    from seqx.grammar.load import grammar_from_templates
    from seqx.grammar.tokens import compile_tokens
    from seqx.runtime.transcribe import search as runtime_search

    recipe, bundle, onnx_dir = trained
    # a grammar narrower than the training one: the mask has to do work
    grammar = grammar_from_templates(["open the {app}", "scroll {way}"], {"app": ["terminal"], "way": ["up", "down"]})
    automaton = compile_tokens(grammar, bundle.tokenizer)
    folder = tmp_path / "with_grammar"
    shutil.copytree(onnx_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config["grammar"] = automaton.to_dict()
    (folder / "config.json").write_text(json.dumps(config))
    exported = load_exported(folder, threads=1)
    assert exported.grammar is not None
    from seqx.featurize.audio import load_audio

    waves = [load_audio(p, bundle.sample_rate) for p in _split_audio(recipe, "test")[:8]]
    settings = bundle.decode.merged(nbest=3)
    feats = [featurize(bundle, w) for w in waves]
    with torch.inference_mode():
        batch = torch.nn.utils.rnn.pad_sequence(feats, batch_first=True)
        memory, mem_lens = bundle.model.encode(batch, torch.tensor([f.shape[0] for f in feats]))
        ref = beam_search(
            bundle.model, memory, mem_lens, beam=settings.beam, nbest=settings.nbest, ctc_weight=settings.ctc_weight,
            length_penalty=settings.length_penalty, max_len=max_output_len(mem_lens, settings),
            scorers=[_TorchGrammarMask(automaton)],
        )  # fmt: skip
    got, _ = runtime_search(exported, [f.numpy() for f in feats], settings_for(exported, nbest=3))
    assert [[h.tokens for h in n] for n in got] == [[h.tokens for h in n] for n in ref]
    for nbest in got:
        assert all(automaton.accepts(h.tokens) for h in nbest if not h.flagged)


def test_cli_export_then_transcribe_prints_the_torch_text(trained: tuple[Recipe, Bundle, Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from seqx.cli.app import app

    recipe, bundle, _ = trained
    runner = CliRunner()
    done = runner.invoke(app, ["export", "--model", str(recipe.bundle_dir), "--out", str(tmp_path / "x"), "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert not report["int8"] and set(report["sizes"]) >= {"encoder.onnx", "decoder_step.onnx", "config.json", "tokenizer.model"}
    wav = next(u.audio for u in read_manifest(recipe.data_dir / "test.jsonl") if u.text)
    said = runner.invoke(app, ["transcribe", "--model", str(tmp_path / "x"), wav])
    assert said.exit_code == 0, said.output
    assert said.output.strip() == transcribe_files(bundle, [wav], bundle.decode)[0].text


def test_speech_embedding_features_run_without_torch(espeak_wav, tmp_path: Path) -> None:  # noqa: ANN001
    """features.kind speech_embedding: openwakeword's two ONNX models, 96-d every 80 ms (680 ms of
    silence each side, as seqx.featurize.embedding pads), and +fbank appends the pooled log-Mel."""
    from seqx.runtime.transcribe import load_audio

    wave = load_audio(espeak_wav(tmp_path / "a.wav", "check the battery"), 16000)[:32000]
    wave = np.pad(wave, (0, 32000 - wave.size))  # exactly 2 s
    base = {"win_ms": 25.0, "hop_ms": 10.0, "n_mels": 40, "embed_pad_ms": 680.0}
    emb = NumpyFeatures({**base, "kind": "speech_embedding"}, 16000, {"mean": [0.0], "std": [1.0]}).frames(wave)
    padded = 32000 + 2 * 10880
    assert emb.shape == ((((padded - 512) // 160 + 1) - 76) // 8 + 1, 96)
    both = NumpyFeatures({**base, "kind": "speech_embedding+fbank"}, 16000, {"mean": [0.0], "std": [1.0]}).frames(wave)
    assert both.shape == (emb.shape[0], 96 + 40) and np.allclose(both[:, :96], emb)


DEMO = REPO / "exp" / "commands"


@pytest.mark.slow
@pytest.mark.skipif(not (DEMO / "model" / "config.json").is_file(), reason="no demo model (seqx train recipes/commands.yaml)")
def test_demo_model_export_transcribes_its_whole_test_split_like_torch(tmp_path: Path) -> None:
    """The issue's acceptance check on the trained demo model, when this checkout has one."""
    bundle = load_bundle(DEMO / "model")
    export_bundle(bundle, tmp_path / "onnx")
    paths = [u.audio for u in read_manifest(DEMO / "data" / "test.jsonl")]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        same = {"precision": "fp32", "vad_threshold": 0.0, "grammar": "none", "free_beam": 0}  # what the runtime does
        expected = _texts(transcribe_files(bundle, paths, bundle.decode.model_copy(update=same)))
    finally:
        torch.set_num_threads(threads)
    exported = load_exported(tmp_path / "onnx", threads=1)
    assert _texts(runtime_transcribe(exported, paths)) == expected
