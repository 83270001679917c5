"""Manifest sources: every format keeps good utterances and reports bad ones by name and reason, never fatally."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from seqx.data.manifest import read_manifest
from seqx.data.stage import run_data_stage
from seqx.errors import SeqxError
from seqx.recipe import Recipe, recipe_from_dict
from seqx.report import Collect

SPLITS = ("train", "valid", "test")


def _recipe(tmp_path: Path, train: str, **manifest: object) -> Recipe:
    data = {"source": "manifest", "max_duration": 5.0, "manifest": {"train": train, **manifest}}
    return recipe_from_dict({"name": "imp", "exp_dir": str(tmp_path / "exp"), "data": data})


def _inputs(folder: Path, espeak_wav) -> dict[str, str]:
    """One good utterance and one of each kind of bad input."""
    espeak_wav(folder / "good.wav")
    espeak_wav(folder / "empty_text.wav")
    espeak_wav(folder / "untold.wav")
    (folder / "corrupt.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt garbage")
    sf.write(folder / "silent.wav", np.zeros(8000), 16000)
    sf.write(folder / "long.wav", 0.1 * np.sin(np.arange(16000 * 6) * 0.05), 16000)
    return {k: str(folder / f"{k}.wav") for k in ("good", "corrupt", "silent", "empty_text", "untold", "long", "missing")}


# untold: no transcript at all (no text key, a short CSV row, no line in Kaldi's text, no .txt)
TEXTS = {"good": "check  the battery", "corrupt": "x", "silent": "y", "empty_text": "", "untold": None, "long": "z",
         "missing": "w"}  # fmt: skip
REASONS = {
    "corrupt.wav": "unreadable audio",
    "silent.wav": "silent audio",
    "empty_text.wav": "empty transcript",
    "untold.wav": "missing transcript",
    "long.wav": "longer than data.max_duration",
    "missing.wav": "missing audio file",
}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "tsv", "kaldi", "folder"])
def test_importers_keep_good_and_report_bad(tmp_path: Path, fmt: str, espeak_wav) -> None:
    files = _inputs(tmp_path / "audio", espeak_wav)
    # relative paths resolve against the manifest's folder, not the working directory
    rel = {k: os.path.relpath(v, tmp_path) for k, v in files.items()}
    if fmt == "jsonl":
        source = tmp_path / "m.jsonl"
        rows = [{"audio": rel[k], **({"text": t} if t is not None else {})} for k, t in TEXTS.items()]
        source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    elif fmt in ("csv", "tsv"):
        sep = "," if fmt == "csv" else "\t"
        source = tmp_path / f"m.{fmt}"
        table = f"audio{sep}text\n" + "".join(f"{rel[k]}{sep}{t}\n" if t is not None else f"{rel[k]}\n"
                                               for k, t in TEXTS.items())  # fmt: skip
        source.write_bytes(table.replace("\n", "\r\n").encode("utf-8-sig"))  # as Excel's "CSV UTF-8" saves it
    elif fmt == "kaldi":
        source = tmp_path / "kaldi"
        source.mkdir()
        scp = "".join(f"{k} {files[k]}\n" for k in TEXTS) + "piped sox in.flac -t wav - |\n"
        (source / "wav.scp").write_text(scp)
        (source / "text").write_text("".join(f"{k} {t}\n" for k, t in TEXTS.items() if t is not None) + "piped hello\n")
        (source / "utt2spk").write_text("good alice\n")
    else:
        source = tmp_path / "audio"
        for key, text in TEXTS.items():
            if key != "missing" and text is not None:
                (source / f"{key}.txt").write_text(text, encoding="utf-8-sig")  # Notepad's byte-order mark
    recipe = _recipe(tmp_path, str(source), valid=str(source), test=str(source))
    report = run_data_stage(recipe)
    kept = read_manifest(recipe.data_dir / "train.jsonl")
    assert [(Path(u.audio).name, u.text) for u in kept] == [("good.wav", "check the battery")]
    assert kept[0].audio == files["good"] and kept[0].duration == pytest.approx(
        sf.info(files["good"]).duration, abs=1e-4
    )
    if fmt == "kaldi":
        assert kept[0].speaker == "alice"
    reasons = {what if what.startswith("piped:") else Path(what).name: reason for what, reason in report.skipped}
    expected = {
        k: v for k, v in REASONS.items() if not (fmt == "folder" and k == "missing.wav")
    }  # a folder lists what exists
    if fmt == "kaldi":
        expected["piped: sox in.flac -t wav - |"] = "piped wav.scp command"
    assert {name: reasons[name][: len(why)] for name, why in expected.items()} == expected
    assert len(report.skipped) == 3 * len(expected)  # the same bad files for each split


def test_manifest_without_valid_and_test_carves_them_by_speaker(tmp_path: Path) -> None:
    rows = []
    for i in range(12):
        path = tmp_path / f"u{i}.wav"
        sf.write(path, 0.1 * np.sin(np.arange(8000) * 0.05 * (i + 1)), 16000)
        rows.append({"audio": str(path), "text": f"command {i}", "speaker": f"s{i % 4}"})
    source = tmp_path / "all.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = _recipe(tmp_path, str(source))
    report = run_data_stage(recipe)
    assert sum(report.counts.values()) == 12
    speakers = {s: {u.speaker for u in read_manifest(recipe.data_dir / f"{s}.jsonl")} for s in SPLITS}
    assert speakers["valid"] and speakers["test"]
    assert not speakers["train"] & (speakers["valid"] | speakers["test"])


def test_folder_ids_are_unique_across_subfolders_and_cache_sees_changed_files(tmp_path: Path, espeak_wav) -> None:
    for speaker in ("ann", "bob", "cat"):
        espeak_wav(tmp_path / "corpus" / speaker / "1.wav", "open the browser")
        (tmp_path / "corpus" / speaker / "1.txt").write_text("open the browser")
    corpus = str(tmp_path / "corpus")
    recipe = _recipe(tmp_path, corpus, valid=corpus, test=corpus)
    assert run_data_stage(recipe).counts == {"train": 3, "valid": 3, "test": 3}
    assert sorted(u.id for u in read_manifest(recipe.data_dir / "train.jsonl")) == ["ann-1", "bob-1", "cat-1"]
    assert run_data_stage(recipe).fresh
    (tmp_path / "corpus" / "bob" / "1.txt").write_text("close the browser")  # a file inside the folder changed
    again = run_data_stage(recipe)
    assert not again.fresh
    assert "close the browser" in {u.text for u in read_manifest(recipe.data_dir / "train.jsonl")}


def test_bad_sources_fail_with_the_setting_named(tmp_path: Path) -> None:
    with pytest.raises(SeqxError, match="data.manifest.train: required"):
        run_data_stage(recipe_from_dict({"exp_dir": str(tmp_path), "data": {"source": "manifest"}}))
    with pytest.raises(SeqxError, match="no such manifest"):
        run_data_stage(_recipe(tmp_path, str(tmp_path / "nope.jsonl")))
    kaldi = tmp_path / "kaldi"
    kaldi.mkdir()
    (kaldi / "wav.scp").write_text("rec1 /x/rec1.wav\n")
    (kaldi / "segments").write_text("u1 rec1 0.0 1.5\n")
    with pytest.raises(SeqxError, match="segments are not supported"):
        run_data_stage(_recipe(tmp_path, str(kaldi)))
    one = tmp_path / "one.jsonl"
    sf.write(tmp_path / "one.wav", 0.1 * np.sin(np.arange(4000) * 0.05), 16000)
    one.write_text(json.dumps({"audio": "one.wav", "text": "open the browser"}) + "\n")
    with pytest.raises(SeqxError, match="data.manifest.valid: not set, and 1 usable training utterance"):
        run_data_stage(_recipe(tmp_path, str(one)))


def test_one_speaker_manifest_is_carved_by_utterance(tmp_path: Path) -> None:
    rows = []
    for i in range(40):
        path = tmp_path / f"u{i}.wav"
        sf.write(path, 0.1 * np.sin(np.arange(4000) * 0.05 * (i + 1)), 16000)
        rows.append({"audio": str(path), "text": f"command {i}", "speaker": "only"})
    source = tmp_path / "all.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reporter = Collect()
    report = run_data_stage(_recipe(tmp_path, str(source)), reporter)
    assert report.counts == {"train": 36, "valid": 2, "test": 2}
    assert report.speakers == {"train": 1, "valid": 1, "test": 1}
    assert any("by utterance" in line for line in reporter.infos)


def test_own_recordings_join_train_only_repeated_and_bad_ones_are_skipped(tmp_path: Path, espeak_wav) -> None:
    """`data.synth.recordings`: a folder of the user's voice (audio + .txt) beside the made voices;
    valid and test stay made voices never heard."""
    mine = tmp_path / "mine" / "me"
    espeak_wav(mine / "1.wav", "open the terminal")
    (mine / "1.txt").write_text("Open the terminal!")
    (mine / "2.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt garbage")
    (mine / "2.txt").write_text("check the battery")
    sets = [f"exp_dir={tmp_path / 'exp'}", "data.size=40", "data.synth.engines=[espeak-ng]", "data.synth.test_engine=same",
            "data.synth.valid_voices=1", "data.synth.test_voices=1", "data.synth.piper_voices=[]",
            f"data.synth.recordings={tmp_path / 'mine'}", "data.synth.recordings_repeat=3"]
    from seqx.recipe import load_recipe

    recipe = load_recipe(Path(__file__).resolve().parents[1] / "recipes/commands.yaml", sets)
    report = run_data_stage(recipe, Collect())
    splits = {s: read_manifest(recipe.data_dir / f"{s}.jsonl") for s in SPLITS}
    own = [u for u in splits["train"] if u.id.startswith("own-")]
    assert len(own) == 3 and {u.text for u in own} == {"Open the terminal!"} and {u.speaker for u in own} == {"own:me"}
    assert not any(u.id.startswith("own-") for u in splits["valid"] + splits["test"])
    assert any("2.wav" in what and "unreadable audio" in why for what, why in report.skipped)
    assert run_data_stage(recipe, Collect()).fresh
    espeak_wav(mine / "1.wav", "open the browser")  # a recording changed: the corpus is made again
    (mine / "1.txt").write_text("open the browser")
    assert not run_data_stage(recipe, Collect()).fresh
    missing = load_recipe(Path(__file__).resolve().parents[1] / "recipes/commands.yaml",
                          [*sets[:-2], f"data.synth.recordings={tmp_path / 'nowhere'}"])
    with pytest.raises(SeqxError, match="data.synth.recordings: .*nowhere: no such file or folder"):
        run_data_stage(missing, Collect())
    from seqx.recipe import RecipeError

    with pytest.raises(RecipeError, match="data.synth.recordings: joins a synthetic corpus"):  # not silently ignored
        load_recipe(Path(__file__).resolve().parents[1] / "recipes/commands.yaml", [*sets, "data.source=manifest"])
