"""The exported model and the torch-free runtime: the same transcripts as the torch bundle, log-probs
within 1e-4, numpy features within 1e-3 of torchaudio's, int8 close, each front-end exports, a broken
folder is one line, and `seqx.runtime` never imports torch.

One tiny model (fbank + conv2d + CTC head, char tokens, a three-intent grammar) is trained once for
the module, as in tests/test_decode.py, and compared with every gate on; the front-end tests export randomly initialized models (equality does not
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

from seqx.data.manifest import read_manifest
from seqx.decode.bundle import Bundle, load_bundle, save_bundle
from seqx.decode.gap_span import longest_by_words
from seqx.decode.reject import CHECKS_OFF
from seqx.decode.transcribe import featurize, transcribe_files
from seqx.errors import SeqxError
from seqx.export.onnx_export import export_bundle
from seqx.model.transformer import Seq2SeqTransformer
from seqx.recipe import FeatureSettings, Recipe
from seqx.runtime import load_exported, settings_for
from seqx.runtime import transcribe_files as runtime_transcribe
from seqx.runtime.features import NumpyFeatures
from tiny import FBANK, TEMPLATES, train_tiny

REPO = Path(__file__).resolve().parents[1]
TINY = [
    *TEMPLATES,
    *FBANK,  # the runtime twin is under test, on the cheapest features
    "data.size=64",
    "data.synth.empty_share=0.2",
    # every gate on, as the recipe has them (Silero no-speech gate at 0.5, the training grammar with its
    # intent/slot parse, a free beam of 4 beside the constrained one); the two rejection thresholds are
    # set rather than calibrated (`auto` would render negatives for a minute): both rules then act
    "decode.reject_margin=1.0",
    "decode.reject_distance=0.3",
    "model.conv_channels=8",
    "train.epochs=40",
    "decode.precision=fp32",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recipe, Bundle, Path]:
    root = tmp_path_factory.mktemp("runtime")
    recipe, bundle = train_tiny(root, TINY)
    export_bundle(bundle, root / "onnx")
    return recipe, bundle, root / "onnx"


def _split_audio(recipe: Recipe, split: str) -> list[str]:
    return [u.audio for u in read_manifest(recipe.data_dir / f"{split}.jsonl")]


def _texts(results: list) -> list[str]:  # noqa: ANN001
    return [r.text for r in results]


VERDICT = ("text", "understood", "no_speech", "reason", "intent", "slots", "free_text", "ctc_text", "free_distance")


def _same_results(onnx_results: list, torch_results: list, what: object) -> None:  # noqa: ANN001
    """The runtime decided as the bundle did: verdict, parse and signals equal, scores within 1e-4."""
    for a, b in zip(onnx_results, torch_results, strict=True):
        assert {k: getattr(a, k) for k in VERDICT} == {k: getattr(b, k) for k in VERDICT}, (what, a.path)
        assert [h["text"] for h in a.nbest] == [h["text"] for h in b.nbest], (what, a.path)
        assert [h["score"] for h in a.nbest] == pytest.approx([h["score"] for h in b.nbest], abs=1e-4)
        # the intent/slot heads' vote, where the model has heads (tests/test_slot_heads.py)
        slot_a, slot_b = [h.get("slot_score") for h in a.nbest], [h.get("slot_score") for h in b.nbest]
        assert [x is None for x in slot_a] == [y is None for y in slot_b], (what, a.path)
        # within 1e-4, or 1e-4 of a large vote: an unlikely slot value's log-probability is the far tail of
        # a softmax, where onnxruntime's and torch's kernels part sooner (-12.00211 against -12.00229)
        want = pytest.approx([y for y in slot_b if y is not None], abs=1e-4, rel=1e-4)
        assert [x for x in slot_a if x is not None] == want
        assert a.score == pytest.approx(b.score, abs=1e-4)
        for key in ("ctc_gap", "free_gap", "command_lead"):
            x, y = getattr(a, key), getattr(b, key)
            assert (x is None) == (y is None) and (x is None or x == pytest.approx(y, abs=1e-4)), (what, key, a.path)


def test_fp32_export_transcribes_the_test_split_like_torch(trained: tuple[Recipe, Bundle, Path]) -> None:
    """With every gate on: Silero, the grammar and its parse, the free beam, both rejection rules."""
    recipe, bundle, onnx_dir = trained
    paths = _split_audio(recipe, "test") + _split_audio(recipe, "valid")
    exported = load_exported(onnx_dir, threads=1)
    assert exported.grammar is not None and bundle.decode.free_beam > 0 and bundle.decode.vad_threshold > 0
    reasons: set[str | None] = set()
    # free_ctc_weight: the free beam beside the grammar's, and free decoding, at another CTC weight
    for options in ({}, {"greedy": True}, {"nbest": 3}, {"grammar": "none"}, {"free_ctc_weight": 0.0},
                    {"grammar": "none", "free_ctc_weight": 0.1}, {"reject_nbest_margin": 50.0},
                    {"vad_gate": 0.5},  # the gate at vad_threshold: the corpus's noise files no speech
                    {"floor_snr_db": 40.0}):  # a noise floor under the part the model hears, the same in both
        torch_results = transcribe_files(bundle, paths, bundle.decode.merged(**options))
        onnx_results = runtime_transcribe(exported, paths, settings_for(exported, **options))
        _same_results(onnx_results, torch_results, options)
        reasons |= {r.reason for r in onnx_results}
    # the whole file rather than the speech and decode.speech_margin_s around it (both paths cut alike)
    whole = {"speech_margin_s": None}
    onnx_whole = runtime_transcribe(exported, paths, {**settings_for(exported), **whole})
    _same_results(onnx_whole, transcribe_files(bundle, paths, bundle.decode.model_copy(update=whole)), whole)
    results = runtime_transcribe(exported, paths)
    understood = [r for r in results if r.understood]
    assert understood and all(r.intent for r in understood), "the tiny model should understand commands"
    # the distance rule alone decided some: rejected with a CTC gap the margin lets through
    assert any(r.reason == "rejected" and r.ctc_gap is not None and r.ctc_gap <= 1.0 for r in results + onnx_whole)
    # the gates had work to do: the corpus's empty files are no speech to Silero (at 0.5; at the default
    # vad_gate 0.1 some go on to the checks), and some answers are rejected
    assert {"no speech", "rejected"} <= reasons, reasons
    # decode.reject_nbest_margin at its strictest: every answer with another command in its n-best is
    # ambiguous, in both paths alike (above), and a result still reports decode.nbest answers
    assert "ambiguous" in reasons and all(len(r.nbest) <= 1 for r in results)


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


@pytest.mark.parametrize(("frontend", "conv_kernel"), [("none", 0), ("linear", 0), ("conv2d", 0), ("linear", 5)])
def test_each_front_end_exports_and_decodes_alike(
    trained: tuple[Recipe, Bundle, Path], tmp_path: Path, frontend: str, conv_kernel: int
) -> None:
    recipe, bundle, _ = trained
    torch.manual_seed(0)
    d_model = bundle.dims.n_feats if frontend == "none" else 32
    dims = replace(
        bundle.dims, frontend=frontend, d_model=d_model, heads=2, d_ff=64, conv_channels=4, dec_layers=2,
        conv_kernel=conv_kernel,
    )
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


def test_speech_embedding_export_is_self_contained_and_decodes_like_torch(
    trained: tuple[Recipe, Bundle, Path], tmp_path: Path
) -> None:
    """A speech-embedding bundle's export carries the mel graph and the whole-utterance embedding
    graph; the runtime's features from them equal the torch path's (seqx.featurize.embedding, window
    by window) to the bit, and the n-best lists are the same."""
    from seqx.featurize.audio import load_audio
    from seqx.featurize.cmvn import Cmvn
    from seqx.featurize.features import FeatureExtractor
    from seqx.model.transformer import ModelDimensions
    from seqx.recipe import ModelSettings
    from seqx.runtime.embedding import STREAM_MODEL

    recipe, bundle, _ = trained
    features = FeatureSettings(kind="speech_embedding")
    settings = ModelSettings(d_model=32, heads=2, enc_layers=1, dec_layers=1, d_ff=64, frontend="linear")
    dims = ModelDimensions.from_settings(settings, features.n_feats, bundle.tokenizer)
    torch.manual_seed(0)
    cmvn = Cmvn(torch.randn(96), torch.rand(96) + 0.5)
    decode = bundle.decode.model_copy(update={"max_ctc_gap": 0.0})  # an untrained model: keep its texts
    model = Seq2SeqTransformer(dims).eval()
    folder = save_bundle(tmp_path / "bundle", model, features, 16000, cmvn, bundle.tokenizer, decode)
    random_bundle = load_bundle(folder)
    report = export_bundle(random_bundle, tmp_path / "onnx")
    assert {"melspectrogram.onnx", STREAM_MODEL} <= set(report.sizes)
    exported = load_exported(tmp_path / "onnx", threads=1)
    paths = _split_audio(recipe, "test")[:6]
    torch_features = FeatureExtractor(features, 16000)
    for path in paths:
        wave = load_audio(path, 16000)
        assert np.array_equal(exported.features.frames(wave.numpy()), torch_features(wave).numpy())
        # decode.views: the mean of four shifted views, the same in both
        np.testing.assert_allclose(exported.features.frames(wave.numpy(), 4), torch_features.averaged(wave, 4).numpy(),
                                   atol=1e-6)  # fmt: skip
    for views in (1, 4):
        torch_nbest = [r.nbest for r in transcribe_files(random_bundle, paths, random_bundle.decode.merged(views=views))]
        onnx_nbest = [r.nbest for r in runtime_transcribe(exported, paths, settings_for(exported, views=views))]
        assert [[h["text"] for h in n] for n in onnx_nbest] == [[h["text"] for h in n] for n in torch_nbest]


def test_seqx_transcribe_on_an_export_prints_what_the_typer_command_prints(
    trained: tuple[Recipe, Bundle, Path],
) -> None:
    """`seqx transcribe --model EXPORTED FILE` skips the Typer app (start-up); its output is the
    Typer command's, and it imports neither typer, pydantic, the recipe schema nor torch. Two files
    go to the Typer command (which imports typer and, through it, pydantic; still no recipe schema)."""
    from typer.testing import CliRunner

    from seqx.cli.app import build_app

    recipe, _, onnx_dir = trained
    wavs = _split_audio(recipe, "test")[:2]
    cases = (([wavs[0]], True), ([wavs[1], "--beam", "2"], True), (["--greedy", wavs[0]], True), (wavs, False))
    for extra, short in cases:
        argv = ["transcribe", "--model", str(onnx_dir), *extra]
        code = (
            "import sys\n"
            f"sys.argv = ['seqx', *{argv!r}]\n"
            "from seqx.cli.app import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code\n"
            "print('IMPORTED', sorted(m for m in ('seqx.recipe', 'typer', 'pydantic', 'torch') if m in sys.modules))\n"
        )
        env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
        fast = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env)
        assert fast.returncode == 0, fast.stderr
        *lines, imported = fast.stdout.splitlines()
        assert imported == "IMPORTED []" if short else imported == "IMPORTED ['pydantic', 'typer']"
        typer_run = CliRunner().invoke(build_app(), argv)
        assert typer_run.exit_code == 0, typer_run.output
        assert lines == typer_run.output.splitlines()


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
    """The runtime, `seqx transcribe --model EXPORTED` and `seqx listen --model EXPORTED --input FILE`
    (Silero gate, grammar parse and free beam included)."""
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
        f"sys.argv = ['seqx', 'listen', '--model', {str(onnx_dir)!r}, '--input', {wav!r}, '--json']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.') or m == 'torchaudio')\n"
        "print('IMPORTED', bad)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr
    assert "IMPORTED []" in run.stdout


# an installation of the core alone (`pip install seqx`): the packages of the `train` extra cannot be imported
WITHOUT_TRAIN = (
    "import sys, importlib.abc\n"
    "class NotInstalled(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.partition('.')[0] in {'torch', 'torchaudio', 'librosa', 'safetensors', 'jiwer', 'tensorboard',"
    " 'matplotlib', 'openwakeword'}:\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, NotInstalled())\n"
    "from seqx.cli.app import main\n"
    "main()\n"
)


def test_the_core_install_runs_an_export_and_names_the_extra_for_the_rest(
    trained: tuple[Recipe, Bundle, Path], tmp_path: Path
) -> None:
    """Without the `train` extra's packages (blocked at import, as if not installed) `seqx transcribe
    --model EXPORTED` works through the Typer app, and `seqx train` is one line naming the extra."""
    recipe, bundle, onnx_dir = trained
    wav = next(u.audio for u in read_manifest(recipe.data_dir / "test.jsonl") if u.text)
    env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "COLUMNS": "400"}

    def seqx(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", WITHOUT_TRAIN, *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env)  # fmt: skip

    run = seqx("transcribe", "--model", str(onnx_dir), "--json", wav)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)[0]["text"] == transcribe_files(bundle, [wav], bundle.decode)[0].text
    run = seqx("train", str(REPO / "recipes/commands.yaml"), "--set", f"exp_dir={tmp_path}")
    assert run.returncode == 1
    assert run.stderr.strip().count("\n") == 0 and "pip install 'seqx[train]'" in run.stderr, run.stderr
    assert "seqx train needs" in run.stderr


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


def test_grammar_mask_decodes_like_the_torch_scorer(trained: tuple[Recipe, Bundle, Path], tmp_path: Path) -> None:
    """A grammar in the export's config.json (as data and as a token automaton) constrains the runtime's
    beam exactly as the torch path's grammar scorer does, and parses the answers the same."""
    import shutil

    from seqx.decode.transcribe import search
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
    config["grammar"], config["automaton"] = grammar.to_dict(), automaton.to_dict()
    (folder / "config.json").write_text(json.dumps(config))
    exported = load_exported(folder, threads=1)
    assert exported.grammar is not None and exported.grammar.to_dict() == grammar.to_dict()
    from seqx.featurize.audio import load_audio

    waves = [load_audio(p, bundle.sample_rate) for p in _split_audio(recipe, "test")[:8]]
    feats = [featurize(bundle, w) for w in waves]
    for options in ({"nbest": 3}, {"greedy": True}):  # greedy with a grammar: a beam of 1 without CTC
        ref, _ = search(bundle, feats, bundle.decode.merged(**options), automaton=automaton)
        got, _ = runtime_search(exported, [f.numpy() for f in feats], settings_for(exported, **options))
        assert [[h.tokens for h in n] for n in got] == [[h.tokens for h in n] for n in ref], options
        for nbest in got:
            assert all(automaton.accepts(h.tokens) for h in nbest)


def test_export_with_another_grammar_decides_as_torch_with_it(
    trained: tuple[Recipe, Bundle, Path], tmp_path: Path
) -> None:
    """`seqx export --grammar FILE`: the folder carries that grammar (data and automaton) and decodes
    as the bundle does with `--grammar FILE`; slot outputs other than the words come through the parse."""
    from typer.testing import CliRunner

    from seqx.cli.app import app

    recipe, bundle, _ = trained
    grammar_file = tmp_path / "narrow.yaml"
    grammar_file.write_text("intents:\n  scroll: ['scroll {way}']\n  battery: ['check the battery']\n"
                            "slots:\n  way: ['up: 1', 'down: -1']\n")
    done = CliRunner().invoke(app, ["export", "--model", str(recipe.bundle_dir), "--out", str(tmp_path / "x"),
                                    "--grammar", str(grammar_file), "--json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    exported = load_exported(tmp_path / "x", threads=1)
    assert exported.decode["grammar"] == "recipe" and set(exported.grammar.intents) == {"scroll", "battery"}
    paths = _split_audio(recipe, "test") + _split_audio(recipe, "valid")
    expected = transcribe_files(bundle, paths, bundle.decode.merged(grammar=str(grammar_file)))
    got = runtime_transcribe(exported, paths)
    _same_results(got, expected, "narrow grammar")
    assert {r.intent for r in got} <= {None, "scroll", "battery"}
    scrolls = [r for r in got if r.intent == "scroll"]
    assert scrolls and all(r.slots["way"] in (1, -1) for r in scrolls)  # outputs, not words


def test_a_long_file_is_cut_and_decided_as_torch_does(trained: tuple[Recipe, Bundle, Path], tmp_path: Path) -> None:
    """A recording longer than decode.max_segment_s (2 s here): cut at the same pauses, each piece
    decided alike, the same joined text and segments."""
    import soundfile as sf

    from seqx.featurize.samples import read_samples

    recipe, bundle, onnx_dir = trained
    commands = [u.audio for u in read_manifest(recipe.data_dir / "test.jsonl") if u.text][:3]
    pause = np.zeros(bundle.sample_rate // 2, np.float32)
    wave = np.concatenate([part for path in commands for part in (read_samples(path, bundle.sample_rate), pause)])
    long_file = tmp_path / "long.wav"
    sf.write(long_file, wave, bundle.sample_rate)
    exported = load_exported(onnx_dir, threads=1)
    expected = transcribe_files(bundle, [str(long_file)], bundle.decode.merged(max_segment_s=2.0))[0]
    got = runtime_transcribe(exported, [str(long_file)], settings_for(exported, max_segment_s=2.0))[0]
    assert got.segments is not None and len(got.segments) >= 2
    assert got.segments == expected.segments
    assert (got.text, got.understood, got.intent, got.slots) == (expected.text, expected.understood, expected.intent,
                                                                  expected.slots)  # fmt: skip


def test_an_old_export_with_a_grammar_but_no_automaton_is_one_line(
    trained: tuple[Recipe, Bundle, Path], tmp_path: Path
) -> None:
    import shutil

    _, _, onnx_dir = trained
    folder = tmp_path / "old"
    shutil.copytree(onnx_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    del config["automaton"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(SeqxError, match="no token automaton.*run `seqx export` again"):
        load_exported(folder)


def test_negatives_are_not_understood_by_either(trained: tuple[Recipe, Bundle, Path], espeak_wav, tmp_path: Path) -> None:  # noqa: ANN001
    """Loud noise (Silero: no speech) is "not understood" by the export as by the bundle, and
    out-of-grammar speech gets the same verdict for the same reason from both, rejections
    included. Which sentences a model of three memorized templates rejects is its luck (one
    machine's CPU kernels train it to reject both, another's to hear "please call my mother now"
    as "check the battery" in its free beam too), so the test asks that the export's own checks
    decide each, not which way."""
    import soundfile as sf

    _, bundle, onnx_dir = trained
    noise = tmp_path / "noise.wav"
    sf.write(noise, np.random.default_rng(0).uniform(-0.3, 0.3, 16000).astype(np.float32), 16000)
    oog = [espeak_wav(tmp_path / f"oog{i}.wav", text) for i, text in enumerate(["what is the weather tomorrow",
                                                                                  "please call my mother now"])]
    paths = [str(noise), *map(str, oog)]
    exported = load_exported(onnx_dir, threads=1)
    torch_results = transcribe_files(bundle, paths, bundle.decode)
    onnx_results = runtime_transcribe(exported, paths)
    _same_results(onnx_results, torch_results, "negatives")
    verdicts = [(r.text, r.free_text, r.ctc_gap, r.free_distance, r.reason) for r in onnx_results]
    assert not onnx_results[0].understood and onnx_results[0].reason == "no speech", verdicts
    # (an AMD EPYC without AVX-512 trained it to hear both as "check the battery", its free beam too, on
    # 2026-11-30): so each is either turned away by the export's own checks, or answered only as far
    # as every check lets it through; and a floor above its answers' confidence turns them all away
    margin = exported.decode["reject_margin"]
    for r in onnx_results[1:]:
        if r.understood:
            assert r.ctc_gap <= margin, verdicts
        else:
            assert r.reason in ("rejected", "low confidence"), verdicts
    # (the checks run in order: one the margin turned away stays "rejected", one it let through is now
    # turned away by the floor)
    floor = settings_for(exported, min_confidence=1.0)
    floored = runtime_transcribe(exported, paths[1:], floor)
    assert not any(r.understood for r in floored), verdicts
    assert [r.reason for r in floored] == [r.reason if not r.understood else "low confidence" for r in onnx_results[1:]]


def test_the_forgiving_gap_is_decided_alike(trained: tuple[Recipe, Bundle, Path]) -> None:
    """decode.gap_forgives_insertions on: the export measures and judges the gap as the bundle does,
    and no gap is larger than without it."""
    recipe, bundle, onnx_dir = trained
    exported = load_exported(onnx_dir, threads=1)
    paths = _split_audio(recipe, "test") + _split_audio(recipe, "valid")
    forgiving = bundle.decode.model_copy(update={"gap_forgives_insertions": True})
    expected = transcribe_files(bundle, paths, forgiving)
    _same_results(runtime_transcribe(exported, paths, {**settings_for(exported), "gap_forgives_insertions": True}),
                  expected, "forgiving gap")  # fmt: skip
    strict = transcribe_files(bundle, paths, bundle.decode)
    pairs = [(f.ctc_gap, s.ctc_gap) for f, s in zip(expected, strict) if f.ctc_gap is not None and s.ctc_gap is not None]
    assert pairs and all(f <= s + 1e-6 for f, s in pairs)


def test_cli_export_then_transcribe_prints_the_torch_text(trained: tuple[Recipe, Bundle, Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from seqx.cli.app import app

    recipe, _, _ = trained
    runner = CliRunner()
    done = runner.invoke(app, ["export", "--model", str(recipe.bundle_dir), "--out", str(tmp_path / "x"), "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert not report["int8"] and set(report["sizes"]) >= {"encoder.onnx", "decoder_step.onnx", "config.json", "tokenizer.model"}
    wavs = [u.audio for u in read_manifest(recipe.data_dir / "test.jsonl")]
    said = runner.invoke(app, ["transcribe", "--model", str(tmp_path / "x"), wavs[0]])
    heard = runner.invoke(app, ["transcribe", "--model", str(recipe.bundle_dir), "--device", "cpu", wavs[0]])
    assert said.exit_code == 0 and heard.exit_code == 0, said.output + heard.output
    # the recipe names its model, as for `seqx train RECIPE`: `seqx export RECIPE`, `--model RECIPE`
    recipe_file = tmp_path / "mine.yaml"
    recipe_file.write_text(f"name: {recipe.name}\nexp_dir: {recipe.exp_dir}\n")
    again = runner.invoke(app, ["export", str(recipe_file), "--out", str(tmp_path / "y"), "--json"])
    assert again.exit_code == 0 and json.loads(again.output)["sizes"] == report["sizes"], again.output
    by_recipe = runner.invoke(app, ["transcribe", "--model", str(recipe_file), "--device", "cpu", wavs[0]])
    assert by_recipe.output == heard.output
    untrained = tmp_path / "untrained.yaml"
    untrained.write_text(f"name: nothing\nexp_dir: {recipe.exp_dir}\n")
    missing = runner.invoke(app, ["export", str(untrained)])
    assert "no trained model bundle here: run `seqx train" in str(missing.exception), missing.output
    assert said.stdout.strip() == heard.stdout.strip()  # `open the browser   open_the_app {app=browser}`
    as_json = [runner.invoke(app, ["transcribe", "--model", m, "--device", "cpu", "--json", *wavs]) for m in
               (str(tmp_path / "x"), str(recipe.bundle_dir))]
    exported, bundled = (json.loads(r.stdout) for r in as_json)
    keys = ("path", "text", "intent", "slots", "understood", "reason")
    assert [{k: r[k] for k in keys} for r in exported] == [{k: r[k] for k in keys} for r in bundled]
    assert any(r["intent"] for r in exported)
    # --set decode.KEY=VALUE lays a decode setting over the model's own, on both paths alike: one
    # output token leaves no whole command
    capped = [runner.invoke(app, ["transcribe", "--model", m, "--device", "cpu", "--json", "--set", "decode.max_len=1",
                                  *wavs]) for m in (str(tmp_path / "x"), str(recipe.bundle_dir))]
    assert all(r.exit_code == 0 for r in capped), capped[0].output + capped[1].output
    exported_capped, bundled_capped = (json.loads(r.stdout) for r in capped)
    assert [{k: r[k] for k in keys} for r in exported_capped] == [{k: r[k] for k in keys} for r in bundled_capped]
    assert not any(r["intent"] for r in exported_capped)
    for bad, said in (("model.d_model=8", "takes only decode.KEY=VALUE"), ("decode.bean=2", "did you mean decode.beam")):
        refused = runner.invoke(app, ["transcribe", "--model", str(recipe.bundle_dir), "--set", bad, wavs[0]])
        assert refused.exit_code != 0 and said in str(refused.exception), refused.output  # main() prints it, one line


def test_speech_embedding_features_run_without_torch(espeak_wav, tmp_path: Path) -> None:  # noqa: ANN001
    """features.kind speech_embedding: openwakeword's two ONNX models, 96-d every 80 ms (680 ms of
    silence each side, as seqx.featurize.embedding pads), and +fbank appends the pooled log-Mel."""
    from seqx.featurize.samples import read_samples

    wave = read_samples(espeak_wav(tmp_path / "a.wav", "check the battery"), 16000)[:32000]
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
        expected = transcribe_files(bundle, paths, bundle.decode.model_copy(update={"precision": "fp32"}))
    finally:
        torch.set_num_threads(threads)
    exported = load_exported(tmp_path / "onnx", threads=1)
    _same_results(runtime_transcribe(exported, paths), expected, "demo")


def test_the_gap_over_a_long_part_is_decided_alike(trained: tuple[Recipe, Bundle, Path]) -> None:
    """decode.gap_spans: training measured them on its own split; a part longer than the limit gets
    a larger gap, the same in the export as in the bundle; a limit past every part changes nothing."""
    recipe, bundle, onnx_dir = trained
    train = read_manifest(recipe.data_dir / "train.jsonl")
    assert bundle.decode.gap_spans == longest_by_words((u.text, u.duration) for u in train)
    exported = load_exported(onnx_dir, threads=1)
    paths = _split_audio(recipe, "test") + _split_audio(recipe, "valid")
    # every check off, for both paths: every answer's gap measured
    plain = transcribe_files(bundle, paths, bundle.decode.model_copy(update={**CHECKS_OFF, "gap_spans": None}))
    roomy = transcribe_files(bundle, paths, bundle.decode.model_copy(update={**CHECKS_OFF, "gap_spans": [60.0]}))
    assert [r.ctc_gap for r in roomy] == [r.ctc_gap for r in plain]
    tight = {**CHECKS_OFF, "gap_spans": [0.1], "gap_span_factor": 1.0}  # every part is longer than 0.1 s
    expected = transcribe_files(bundle, paths, bundle.decode.model_copy(update=tight))
    _same_results(runtime_transcribe(exported, paths, {**settings_for(exported), **tight}), expected, "tight span")
    # the sum over the part heard, over 0.1 s of it
    pairs = [(t.ctc_gap, p.ctc_gap * t.heard_seconds / 0.1) for t, p in zip(expected, plain)
             if p.ctc_gap is not None and p.ctc_gap > 0]  # fmt: skip
    assert pairs and all(t == pytest.approx(want, rel=1e-6) for t, want in pairs)


def test_an_export_carries_its_wake_word_and_listens_for_it_without_openwakeword(
    trained: tuple[Recipe, Bundle, Path], tmp_path: Path
) -> None:
    """`seqx export --wake-word "hey jarvis"` of an fbank model: the folder holds the wake model and the
    graphs it listens through; the detector with them scores as with openwakeword's own window-by-window
    graph, and `seqx listen --model DIR` (openwakeword blocked, as on a device without it) decodes only
    the command after the word."""
    import soundfile as sf

    from seqx.featurize.audio import load_audio
    from seqx.listen.wake import EXPORT_FILE, WakeDetector, exported_wake_word, wake_model_path

    recipe, bundle, _ = trained
    folder = tmp_path / "onnx-wake"
    report = export_bundle(bundle, folder, wake_word="hey jarvis")
    assert {EXPORT_FILE, "melspectrogram.onnx", "embedding_stream.onnx"} <= set(report.sizes)
    assert exported_wake_word(folder) == "hey jarvis"
    with pytest.raises(SeqxError, match="unknown wake word"):
        export_bundle(bundle, tmp_path / "never", wake_word="ok google")
    said = tmp_path / "word.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(said), "hey jarvis"], check=True)
    word = load_audio(str(said), 16000).numpy()
    spoken = [u.audio for u in read_manifest(recipe.data_dir / "test.jsonl") if u.text]
    first, second = (load_audio(p, 16000).numpy() for p in spoken[:2])
    gap = np.zeros(24000, np.float32)
    wave = np.concatenate([gap, word, first, gap, second, gap])
    traces = []
    for graphs in (folder, None):
        detector = WakeDetector(folder / EXPORT_FILE if graphs else wake_model_path("hey jarvis"), graphs_folder=graphs)
        detector.trace = []
        for i in range(0, wave.size, 512):
            detector.feed(wave[i : i + 512])
        traces.append([s for _, s in detector.trace])
    np.testing.assert_allclose(traces[0], traces[1], atol=1e-4)
    assert max(traces[0]) >= 0.5
    path = tmp_path / "stream.wav"
    sf.write(path, wave, 16000, subtype="PCM_16")
    run = subprocess.run([sys.executable, "-c", WITHOUT_TRAIN, "listen", "--model", str(folder), "--json", str(path)],
                         capture_output=True, text=True, cwd=tmp_path, check=False,
                         env={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "COLUMNS": "400"})
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    second_at = (2 * gap.size + word.size + first.size) / 16000
    assert [e["wake"] is not None for e in events] == [e["start"] < second_at for e in events], events
    assert not any(e["understood"] for e in events if e["start"] >= second_at)
    assert "energy gate" not in run.stderr  # the export's own Silero, without openwakeword
