"""Decoding a trained bundle: exact transcripts, bad files among good ones, silence and noise, evaluation.

One tiny model is trained once for the module on a small espeak-ng grammar whose corpus
includes noise-only utterances with empty transcripts, as the default recipe's does.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from conftest import REPO
from typer.testing import CliRunner

from seqx.data.manifest import read_manifest, write_manifest
from seqx.data.noise import NOISE_KINDS, make_noise
from seqx.decode.bundle import Bundle
from seqx.decode.evaluate import evaluate
from seqx.decode.result import Result, gate, speech_bounds, speech_part
from seqx.decode.transcribe import transcribe_files
from seqx.errors import SeqxError
from seqx.featurize.span import speech_span
from seqx.recipe import Recipe
from tiny import FBANK, TEMPLATES, TINY_BASE, train_tiny

TINY = [*TEMPLATES, *FBANK, "data.size=64", "data.synth.empty_share=0.4", "train.epochs=60"]
# empty_share 0.4: enough noise of each kind to learn that it means nothing


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recipe, Bundle]:
    return train_tiny(tmp_path_factory.mktemp("decode"), TINY)


def _train_utts(recipe: Recipe) -> list:
    return read_manifest(recipe.data_dir / "train.jsonl")


def test_training_utterances_come_back_exactly(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    utts = _train_utts(recipe)
    assert any(not u.text for u in utts)  # noise-only utterances are part of it
    for beam in (1, 4):
        settings = bundle.decode.model_copy(update={"beam": beam})
        results = transcribe_files(bundle, [u.audio for u in utts], settings)
        assert [r.text for r in results] == [u.text for u in utts]
        assert all(r.no_speech == (not u.text) for r, u in zip(results, utts))


def test_batched_equals_one_at_a_time_and_cache_changes_nothing(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    paths = [u.audio for u in _train_utts(recipe)[:10]]
    fp32 = bundle.decode.model_copy(update={"precision": "fp32"})  # a property of the search, so exact maths
    batched = transcribe_files(bundle, paths, fp32.model_copy(update={"batch_size": 16}))
    single = transcribe_files(bundle, paths, fp32.model_copy(update={"batch_size": 1}), use_cache=False)
    assert [r.text for r in batched] == [r.text for r in single]
    assert np.allclose([r.score for r in batched], [r.score for r in single], atol=1e-4)


def test_prepared_files_are_read_gated_and_featurized_once(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    """A second decode of the same files with another search reuses the first one's reading, gate
    and features (`seqx evaluate`'s free and constrained passes): the results are those of reading
    the files again, even once the files are gone; another gate setting reads them again."""
    import shutil

    from seqx.decode.transcribe import PreparedFiles

    recipe, bundle = trained
    paths = [str(shutil.copy(u.audio, tmp_path / f"{k}.wav")) for k, u in enumerate(_train_utts(recipe)[:12])]
    prepared = PreparedFiles()
    transcribe_files(bundle, paths, bundle.decode.model_copy(update={"beam": 1}), prepared=prepared)
    beam = bundle.decode.model_copy(update={"beam": 4})
    want = transcribe_files(bundle, paths, beam)
    assert any(r.no_speech for r in want) and any(r.text for r in want)  # both ways through the gate
    for path in paths:
        Path(path).unlink()
    got = transcribe_files(bundle, paths, beam, prepared=prepared)
    assert [replace(r, decode_seconds=0.0) for r in got] == [replace(r, decode_seconds=0.0) for r in want]
    again = transcribe_files(bundle, paths, beam.model_copy(update={"vad_threshold": 0.4}), prepared=prepared)
    assert all(r.error for r in again)  # not kept for this gate: read again, and gone


def _rounded(result: object) -> object:
    """A result's fields with floats to 5 significant digits and no timing: what threads may change."""
    if hasattr(result, "__dataclass_fields__"):
        return _rounded({k: v for k, v in asdict(result).items() if k != "decode_seconds"})
    if isinstance(result, dict):
        return {k: _rounded(v) for k, v in result.items()}
    if isinstance(result, list | tuple):
        return [_rounded(v) for v in result]
    return float(f"{result:.5g}") if isinstance(result, float) else result


def test_files_read_side_by_side_decode_as_read_one_by_one(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    """Several reading threads (torch's thread count) give every file the result one thread gives: the
    gate's no-speech files, a corrupt file in its place, a file long enough to be cut at pauses."""
    from seqx.decode.transcribe import read_threads

    recipe, bundle = trained
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt ")
    paths = [u.audio for u in _train_utts(recipe)[:14]]
    paths.insert(5, str(corrupt))
    settings = bundle.decode.model_copy(update={"max_segment_s": 2.0})  # the longer files are cut at pauses
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = transcribe_files(bundle, paths, settings)
        torch.set_num_threads(3)
        assert read_threads(len(paths)) == 3
        three = transcribe_files(bundle, paths, settings)
    finally:
        torch.set_num_threads(before)
    assert [_rounded(r) for r in three] == [_rounded(r) for r in one]  # the search's sums differ in thread count
    assert three[5].error and any(r.no_speech for r in three) and any(r.text for r in three)
    assert any(r.duration > 2.0 and r.segments is not None for r in three)  # a long file, cut at pauses
    # Silero's LSTM state goes from window to window: each reading thread has its own, kept for its next file
    from concurrent.futures import ThreadPoolExecutor

    from seqx.decode.result import _silero

    with ThreadPoolExecutor(1) as pool:
        theirs = pool.submit(lambda: (_silero(), _silero())).result()
    assert theirs[0] is theirs[1] is not _silero() is _silero()


def test_bf16_transcribes_like_fp32(trained: tuple[Recipe, Bundle]) -> None:
    """bf16 (what `precision: auto` picks on a GPU or a CPU with native bf16) changes scores a little, not words."""
    recipe, bundle = trained
    paths = [u.audio for u in _train_utts(recipe)[:16]]
    fp32 = transcribe_files(bundle, paths, bundle.decode.model_copy(update={"precision": "fp32"}))
    bf16 = transcribe_files(bundle, paths, bundle.decode.model_copy(update={"precision": "bf16"}))
    assert [r.text for r in bf16] == [r.text for r in fp32]
    assert np.allclose([r.score for r in bf16], [r.score for r in fp32], atol=0.1)
    assert [r.score for r in bf16] != [r.score for r in fp32]  # bf16 really ran: the maths is not the same


def test_corrupt_file_among_good_ones(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    recipe, bundle = trained
    utts = [u for u in _train_utts(recipe) if u.text][:2]
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt ")
    paths = [utts[0].audio, str(corrupt), utts[1].audio, str(tmp_path / "missing.flac")]
    results = transcribe_files(bundle, paths, bundle.decode)
    assert [r.text for r in results] == [utts[0].text, "", utts[1].text, ""]
    assert [r.error is not None for r in results] == [False, True, False, True]
    assert results[3].error == "no such file"


def test_silence_and_noise_give_empty_text(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    """Digital silence is gated; fresh noise of every kind the corpus mixes in, at levels
    across its range, is recognised as nothing said by the model itself."""
    _, bundle = trained
    rng = np.random.default_rng(12345)  # not a seed the corpus used
    paths = [tmp_path / "silence.wav"]
    sf.write(paths[0], np.zeros(16000), 16000)
    for kind in NOISE_KINDS:
        for dbfs in (-50, -40, -30):
            paths.append(tmp_path / f"{kind}{dbfs}.wav")
            sf.write(paths[-1], make_noise(kind, 24000, 16000, rng) * 10 ** (dbfs / 20), 16000)
    for result in transcribe_files(bundle, [str(p) for p in paths], bundle.decode):
        assert result.text == "" and result.no_speech, result


def test_seconds_of_silence_around_a_command_are_cut_before_the_model_hears_it(
    trained: tuple[Recipe, Bundle], tmp_path: Path
) -> None:
    """A person's recording often has seconds of silence around the command, where training files
    have a fraction of one: Silero and loudness find the speech and `decode.speech_margin_s` either
    side of it is all the model hears, so the padded file decodes much as the file itself does."""
    recipe, bundle = trained
    utts = [u for u in _train_utts(recipe) if u.text][:8]
    paths, lengths = [], []
    for utt in utts:
        audio, rate = sf.read(utt.audio, dtype="float32")
        paths.append(str(tmp_path / f"padded-{Path(utt.audio).name}"))
        sf.write(paths[-1], np.concatenate([np.zeros(2 * rate), audio, np.zeros(2 * rate)]), rate)
        lengths.append(len(audio))
    margin = bundle.decode.speech_margin_s
    assert margin is not None and bundle.decode.vad_threshold > 0  # on by default
    padded = transcribe_files(bundle, paths, bundle.decode)
    # (not every one need be: this memorizing model's answers can move with a lead-in a few ms off its files';
    # 6 of 8 on most machines, 5 on an AMD EPYC without AVX-512); the cut itself is checked exactly below
    assert sum(r.text == u.text for r, u in zip(padded, utts, strict=True)) >= len(utts) // 2
    cut_paths = []
    for path, length in zip(paths, lengths, strict=True):
        wave, rate = sf.read(path, dtype="float32")
        first, last = speech_bounds(wave, rate, bundle.decode.vad_threshold)  # type: ignore[misc]
        assert 2 * rate - 512 <= first < last <= 2 * rate + length + 512  # inside the speech, to a VAD window
        loud = speech_span(wave, rate)  # digital silence around: exactly the file's own sound
        assert 2 * rate <= loud[0] < loud[1] <= 2 * rate + length
        begin, end = min(first, loud[0]), max(last, loud[1])  # whatever either finds is kept
        part = speech_part(wave, rate, bundle.decode.vad_threshold, margin)
        assert part is not None and len(part) == min(len(wave), end + round(margin * rate)) - (begin - round(margin * rate))
        assert len(part) < len(wave) - 2 * rate  # most of the 4 s of silence is gone
        assert speech_part(wave, rate, bundle.decode.vad_threshold, None) is wave  # null: the whole file
        cut_paths.append(path.replace("padded-", "cut-"))
        sf.write(cut_paths[-1], part, rate)
    # what decoding heard of each padded file is that part: the same answer with the same score
    cut = transcribe_files(bundle, cut_paths, bundle.decode.model_copy(update={"speech_margin_s": None}))
    assert [r.score for r in padded] == pytest.approx([r.score for r in cut], abs=1e-5)
    noise = make_noise("white", 32000, 16000, np.random.default_rng(7)) * 0.3
    assert speech_part(noise, 16000, bundle.decode.vad_threshold, margin) is None  # Silero hears no speech


def test_speech_through_a_radio_band_passes_the_gate_and_loudness_marks_it(espeak_wav, tmp_path: Path) -> None:
    """Silero VAD hears speech without its lows (a radio's or a cheap microphone's 800-5000 Hz) as
    hardly speech: the old gate (vad_threshold) called it no speech. decode.vad_gate lets it through,
    and the part the model hears is the loudness span with its margin, as no VAD window says where."""
    from scipy import signal

    from seqx.featurize.samples import read_samples

    speech = read_samples(espeak_wav(tmp_path / "c.wav"), 16000)
    band = signal.butter(6, [800, 5000], btype="band", fs=16000, output="sos")
    radio = signal.sosfilt(band, speech)
    radio = np.concatenate([np.zeros(16000), 0.5 * radio / np.abs(radio).max(), np.zeros(16000)]).astype(np.float32)
    assert speech_part(radio, 16000, 0.5, 0.5) is None  # no window reaches 0.5
    assert speech_part(radio, 16000, 0.5, 0.5, vad_gate=0.5) is None  # never above vad_threshold's gate
    part = speech_part(radio, 16000, 0.5, 0.5, vad_gate=0.1)
    first, last = speech_span(radio, 16000)
    assert part is not None and len(part) == min(len(radio), last + 8000) - max(0, first - 8000) < len(radio)
    assert speech_part(radio, 16000, 0.5, None, vad_gate=0.1) is radio  # margin null: the whole file
    assert speech_part(radio, 16000, 0.0, 0.5, vad_gate=0.1) is not None  # vad_threshold 0: no gate at all


def test_a_quiet_command_is_heard_and_quiet_noise_is_not(espeak_wav, tmp_path: Path) -> None:
    """A microphone's gain turned down: "turn on the light" with its peaks 45 and 50 dB below full
    scale was "no speech" for Silero (and at -50 "silence" for the -60 dBFS gate); it reaches the
    model now. White noise that quiet is raised the same way and stays no speech; a file is never
    lowered."""
    from seqx.decode.result import at_vad_level
    from seqx.featurize.samples import read_samples
    from seqx.recipe import DecodeSettings

    speech = read_samples(espeak_wav(tmp_path / "q.wav", "turn on the light"), 16000)
    silence_dbfs = DecodeSettings().silence_dbfs
    for peak_db in (-45, -50):
        quiet = (speech / np.abs(speech).max() * 10 ** (peak_db / 20)).astype(np.float32)
        result = Result(path="q")
        assert gate(result, quiet, 16000, silence_dbfs, 0.5, margin_s=0.5) is not None, (peak_db, result.reason)
    noise = np.random.default_rng(0).normal(0, 10 ** (-50 / 20), 32000).astype(np.float32)
    result = Result(path="n")
    assert gate(result, noise, 16000, silence_dbfs, 0.5, margin_s=0.5) is None and result.reason == "no speech"
    loud = (speech / np.abs(speech).max() * 0.9).astype(np.float32)
    assert at_vad_level(loud, 16000) is loud


def test_the_noise_floor_fills_digital_silence_the_same_way_every_time(espeak_wav, tmp_path: Path) -> None:
    """decode.floor_snr_db: a noise-gated recording (exact zeros around the word) reaches the model
    over pink noise that far below the speech, seeded, so a file decodes the same every run; null
    leaves the part as it was."""
    from seqx.featurize.samples import read_samples

    speech = read_samples(espeak_wav(tmp_path / "c.wav"), 16000)
    gated = np.concatenate([np.zeros(8000), np.where(np.abs(speech) > 0.01, speech, 0.0), np.zeros(8000)])
    gated = gated.astype(np.float32)
    plain = gate(Result(path="x"), gated, 16000, -60.0, 0.5, margin_s=0.5)
    floored = gate(Result(path="x"), gated, 16000, -60.0, 0.5, margin_s=0.5, floor_snr_db=40.0)
    assert plain is not None and floored is not None and floored.shape == plain.shape
    assert np.mean(plain == 0) > 0.2 and np.mean(floored == 0) < 0.001  # the zeros are gone
    added = floored - plain
    loud = plain[np.abs(plain) > 0.02 * np.abs(plain).max()]
    assert 10 * np.log10(np.mean(loud**2) / np.mean(added**2)) == pytest.approx(40.0, abs=0.1)
    again = gate(Result(path="x"), gated, 16000, -60.0, 0.5, margin_s=0.5, floor_snr_db=40.0)
    assert again is not None and np.array_equal(again, floored)
    silent = gate(Result(path="x"), np.zeros(16000, np.float32), 16000, -60.0, 0.5, floor_snr_db=40.0)
    assert silent is None  # digital silence is still silence: the floor comes after the gates


def test_clipped_starts_are_not_passed_off_as_commands(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    """A command with its first half cut off: with the CTC-gap guard on (the default) the model
    says nothing far more often than without it, and whatever it still says the CTC head heard."""
    recipe, bundle = trained
    paths = []
    for utt in [u for u in _train_utts(recipe) if u.text][:12]:
        audio, rate = sf.read(utt.audio)
        first, last = speech_span(audio, rate)
        paths.append(tmp_path / f"cut-{Path(utt.audio).name}")
        sf.write(paths[-1], audio[first + (last - first) // 2 :], rate)
    guarded = transcribe_files(bundle, [str(p) for p in paths], bundle.decode)
    off = {"max_ctc_gap": 0, "reject_margin": 0.0}  # the guard is reject_margin with the grammar, max_ctc_gap without
    unguarded = transcribe_files(bundle, [str(p) for p in paths], bundle.decode.model_copy(update=off))
    margin = bundle.decode.margin(constrained=bundle.grammar is not None)
    assert margin > 0
    assert all(r.ctc_gap is not None for r in unguarded)
    said = [r for r in guarded if r.text]
    assert all(r.ctc_gap <= margin for r in said)  # type: ignore[operator]
    silent = sum(r.no_speech for r in guarded)
    assert silent >= len(paths) // 2 and silent > sum(r.no_speech for r in unguarded)  # 10 and 0 when written


def test_evaluate_scores_the_corpus_copies_as_their_own_subsets(trained: tuple[Recipe, Bundle]) -> None:
    """Ids ending in -tight (a whole command, no lead-in) and -clipped (a start cut off) are
    scored as "no lead-in" and "clipped start", not mixed into the commands or no-speech rows."""
    recipe, bundle = trained
    utts = [u for u in _train_utts(recipe) if u.text][:6]
    copies = [replace(u, id=u.id + "-tight") for u in utts[:4]]
    copies += [replace(u, id=u.id + "-clipped", text="") for u in utts[4:]]
    write_manifest(recipe.data_dir / "copies.jsonl", copies)
    report = evaluate(recipe, bundle, bundle.decode, split="copies")
    assert report.subsets["no lead-in"].utterances == 4 and report.subsets["clipped start"].utterances == 2
    assert not {"seen commands", "held-out commands", "no speech"} & set(report.subsets)
    assert report.overall.utterances == 6


def test_evaluate_scores_and_writes_reports(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    report = evaluate(recipe, bundle, bundle.decode, split="train")
    assert report.overall.wer == 0.0 and report.overall.sentence_accuracy == 1.0
    assert report.subsets["no speech"].utterances > 0
    summary = json.loads(Path(report.summary_path).read_text())
    assert summary["overall"]["utterances"] == report.overall.utterances
    lines = Path(report.details_path).read_text().splitlines()
    header = lines[0].split("\t")
    assert header == ["id", "reference", "hypothesis", "errors", "confidence", "ctc_gap", "error"]
    assert len(lines) == report.overall.utterances + 1
    # answers pass the guard (a rejected file's gap is above it: noise the no-speech gate let through)
    gaps = [row.split("\t")[5] for row in lines[1:] if row.split("\t")[2]]
    assert gaps and all(g == "" or float(g) <= bundle.decode.max_ctc_gap for g in gaps)
    assert summary["decode"]["precision"] in ("fp32", "bf16")  # what `auto` became here


def test_cli_transcribe_json_and_exit_code(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    from seqx.cli.app import COMMAND_MODULES, app

    for name in COMMAND_MODULES:
        importlib.import_module(f"seqx.cli.{name}")
    recipe, _ = trained
    good = next(u for u in _train_utts(recipe) if u.text)
    runner = CliRunner()
    model = ["--model", str(recipe.bundle_dir)]
    ok = runner.invoke(app, ["transcribe", good.audio, *model, "--device", "cpu", "--max-ctc-gap", "0.5", "--json"])
    assert ok.exit_code == 0, ok.output
    result = json.loads(ok.stdout)[0]
    assert result["text"] == good.text
    assert {"score", "confidence", "nbest", "duration", "rtf", "ctc_gap"} <= set(result)
    absent = str(tmp_path / "take[draft].wav")
    bad = runner.invoke(app, ["transcribe", good.audio, absent, "--model", str(recipe.bundle_dir)])
    assert bad.exit_code == 1
    assert good.text in bad.stdout
    flat = "".join(bad.output.split())  # rich wraps long lines at the terminal width
    assert "take[draft].wav:nosuchfile" in flat  # brackets are text, not rich markup
    assert flat.count("take[draft].wav") == 1  # said once, in its place, not also as a warning while reading
    odd = runner.invoke(app, ["transcribe", good.audio, "--model", str(recipe.bundle_dir), "--precision", "fp16"])
    assert isinstance(odd.exception, SeqxError)
    assert "--precision fp16: expected auto, fp32 or bf16" in str(odd.exception)
    # the real entry point (main(), not CliRunner) must exit 1 too: a script checks $?
    entry = subprocess.run([sys.executable, "-m", "seqx", "transcribe", good.audio, absent, *model],
                           capture_output=True, text=True, timeout=300, check=False)
    assert entry.returncode == 1, entry.stderr
    assert good.text in entry.stdout
    path, said = entry.stdout.splitlines()[0].split("\t")  # several files: PATH<tab>RESULT, a tab to split on
    assert path == good.audio and said.startswith(good.text)
    wave, rate = sf.read(good.audio, dtype="float32")
    sf.write(tmp_path / "loud.wav", np.clip(4 * wave / np.abs(wave).max(), -1, 1), rate)  # the gain too high
    loud = runner.invoke(app, ["transcribe", good.audio, str(tmp_path / "loud.wav"), *model])
    assert loud.exit_code == 0 and "".join(loud.output.split()).count("clipped") == 1  # the loud file's warning
    assert "loud.wav:clipped(" in "".join(loud.output.split())
    missing = runner.invoke(app, ["transcribe", good.audio, "--model", str(tmp_path)])
    assert isinstance(missing.exception, SeqxError)  # main() turns it into one red line, exit 1
    assert "no trained model bundle" in str(missing.exception)


def test_evaluate_set_decode_reaches_the_bundle_settings() -> None:
    """`seqx evaluate --set decode.KEY=V` overrides the bundle's decode settings (which the recipe's
    section alone would not reach); other keys and `auto` thresholds leave the bundle's alone."""
    from seqx.cli.cmd_decode import decode_overrides
    from seqx.recipe import DecodeSettings, load_recipe

    sets = ["decode.beam=3", "decode.free_ctc_weight=0.2", "decode.reject_distance=auto", "train.epochs=2"]
    recipe = load_recipe(REPO / "recipes/commands.yaml", sets)
    trained = DecodeSettings(beam=8, ctc_weight=0.5, reject_margin=0.4, reject_distance=0.3)
    merged = trained.merged(**decode_overrides(recipe.decode, sets))
    assert (merged.beam, merged.free_ctc_weight, merged.ctc_weight) == (3, 0.2, 0.5)
    assert (merged.reject_margin, merged.reject_distance) == (0.4, 0.3)  # chosen at training, kept
    assert decode_overrides(recipe.decode, None) == {}


def test_evaluate_prints_its_tables(trained: tuple[Recipe, Bundle]) -> None:
    """`seqx evaluate` without --json, as `make demo` ends: the figures, the subsets and the
    negatives' tables, free and constrained (a name shadowed in the table code once broke it)."""
    from seqx.cli.app import app

    recipe, _ = trained
    args = ["evaluate", str(REPO / "recipes/commands.yaml"), "--split", "valid", "--limit", "6", "--oog", "3",
            "--device", "cpu"]  # fmt: skip
    for key in [f"exp_dir={recipe.exp_dir}", *TINY_BASE, *TINY]:
        args += ["--set", key]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for heading in (" utterances (beam", "subsets: sentence accuracy", "false accepts % by negative kind", "constrained"):
        assert heading in result.output, result.output


def test_evaluate_on_your_own_recordings(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    """`seqx evaluate --on FOLDER`: a folder of recordings with .txt transcripts, scored as a split is; one
    whose transcript the grammar does not hold is an out-of-grammar negative, a phone's m4a is read, a
    broken file is skipped and named, and nothing else is lost."""
    import av

    from seqx.cli.app import app

    recipe, _ = trained
    commands = [u for u in _train_utts(recipe) if u.text][:3]
    for k, utt in enumerate(commands):
        (tmp_path / f"c{k}.wav").write_bytes(Path(utt.audio).read_bytes())
        (tmp_path / f"c{k}.txt").write_text(utt.text + "\n")
    wave, rate = sf.read(commands[0].audio, dtype="float32")
    with av.open(str(tmp_path / "phone.m4a"), "w") as out:  # the first command again, as a phone records it
        stream = out.add_stream("aac", rate=44100)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(wave[None, :], format="flt", layout="mono")
        frame.sample_rate = rate
        for chunk in av.AudioResampler(format=stream.format.name, layout="mono", rate=44100).resample(frame):
            for packet in stream.encode(chunk):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    (tmp_path / "phone.txt").write_text(commands[0].text)
    subprocess.run(["espeak-ng", "-w", str(tmp_path / "other.wav"), "what is the capital of france"], check=True)
    (tmp_path / "other.txt").write_text("What is the capital of France?")
    (tmp_path / "broken.wav").write_text("not audio\n" * 10)
    (tmp_path / "broken.txt").write_text(commands[1].text)
    noise = np.random.default_rng(0).normal(0, 0.05, 24000).astype(np.float32)  # the user's room: no command
    sf.write(tmp_path / "room.wav", noise, 16000)
    (tmp_path / "room.txt").write_text("")
    sf.write(tmp_path / "untold.wav", noise, 16000)  # no .txt at all: skipped and named, not taken for noise
    args = ["evaluate", str(REPO / "recipes/commands.yaml"), "--on", str(tmp_path), "--json", "--device", "cpu"]
    for key in [f"exp_dir={recipe.exp_dir}", *TINY_BASE, *TINY]:
        args += ["--set", key]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    flat = "".join(result.output.split())
    assert f"{tmp_path / 'broken.wav'}:unreadableaudio" in flat  # rich wraps, mid-path too
    assert f"{tmp_path / 'untold.wav'}:missingtranscript" in flat
    report = json.loads(result.output[result.output.index("{"):])
    for mode in ("free", "constrained"):
        assert report[mode]["commands"]["commands"] == 4  # c0-c2 and the phone's, not the broken one
        assert report[mode]["negatives"]["oog"] == 1 and report[mode]["negatives"]["noise"] == 1
    rows = (recipe.eval_dir / "recordings-constrained.tsv").read_text().splitlines()
    assert sorted(row.split("\t")[0] for row in rows[1:]) == ["c0", "c1", "c2", "phone"]
    missing = CliRunner().invoke(app, [*args[:3], str(tmp_path / "nope"), *args[4:]])
    assert missing.exit_code != 0 and "no such file or folder" in str(missing.exception)
