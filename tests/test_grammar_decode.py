"""Grammar-constrained decoding of a tiny trained model: the same answers as free decoding where
free decoding says a command, intents and slots in every result and in `--json`, a narrower
grammar at run time, an unspellable word as one line with exit 2, loud noise rejected, and the
reject margin chosen on valid and stored in the bundle."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from seqx.data.manifest import read_manifest
from seqx.data.synth import OOG_SUFFIX
from seqx.decode.bundle import Bundle
from seqx.decode.negatives import read_negatives
from seqx.decode.reject import CHECKS_OFF, choose_margin
from seqx.decode.transcribe import transcribe_files
from seqx.grammar import load_grammar
from seqx.recipe import Recipe, load_recipe
from tiny import FBANK, train_tiny

REPO = Path(__file__).resolve().parents[1]

GRAMMAR = (
    "data.synth.grammar={intents: {open_app: ['open the {app}'], check: ['check the battery'],"
    " scroll: ['scroll {way}'], timer: ['set a timer for {n} minutes']},"
    " slots: {app: [terminal, browser], way: [up, down], n: ['two: 2', 'five: 5']}}"
)
TINY = [*FBANK, GRAMMAR, "data.size=72", "data.synth.empty_share=0.3", "train.epochs=50"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recipe, Bundle]:
    return train_tiny(tmp_path_factory.mktemp("grammar-decode"), TINY)


def _utts(recipe: Recipe, split: str = "train") -> list:
    """The split's commands and nothing-said files (not the out-of-grammar strings train also says:
    tests/test_reject.py is about those)."""
    return [u for u in read_manifest(recipe.data_dir / f"{split}.jsonl") if not u.id.endswith(OOG_SUFFIX)]


def test_bundle_stores_grammar_and_reject_margin(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    assert bundle.grammar is not None and bundle.grammar.to_dict() == load_grammar(recipe).to_dict()
    assert isinstance(bundle.decode.reject_margin, float) and bundle.decode.reject_margin >= 0
    config = json.loads((recipe.bundle_dir / "config.json").read_text())
    assert config["decode"]["reject_margin"] == bundle.decode.reject_margin
    assert config["reject"]["commands"] > 0 and config["reject"]["negatives"] > 0
    assert (recipe.eval_dir / "negatives-valid" / "negatives.jsonl").is_file()


def test_a_grammar_of_few_words_gets_everyday_english_as_negatives(
    trained: tuple[Recipe, Bundle], tmp_path: Path
) -> None:
    """A grammar of a few words gets everyday English (`other`) in the share training hears it
    (`oog_other_share`, 0.2 for <= 32 words), spoken by the split's voices, and for all its own
    words cannot make: "yes" makes five strings ("yes yes" ... six of them); a grammar of many
    words gets none."""
    from seqx.decode.negatives import build_negatives
    from seqx.grammar import grammar_from_dict

    recipe, _ = trained
    digits = grammar_from_dict({"intents": {"digits": ["{d}", "{d} {d}", "{d} {d} {d}"]},
                                "slots": {"d": ["one", "two", "three"]}})  # fmt: skip
    negatives = build_negatives(recipe, digits, "valid", tmp_path / "digits", n_oog=10, noise_repeats=1)
    said = [n for n in negatives if n.kind == "oog"]
    assert len(said) == 10 and not any(digits.accepts(n.said) for n in said)
    other = [n for n in said if n.detail == "other"]
    assert len(other) == 2 and any(word not in digits.vocabulary() for n in other for word in n.said.split())
    assert all(set(n.said.split()) <= set(digits.vocabulary()) for n in said if n.detail != "other")  # 4-6 digits
    assert all(Path(n.audio).is_file() for n in negatives)
    yes = grammar_from_dict({"intents": {"yes": ["yes"]}})
    made = build_negatives(recipe, yes, "valid", tmp_path / "yes", n_oog=10, noise_repeats=1)
    said = [n for n in made if n.kind == "oog"]
    assert sorted(n.said for n in said if n.detail != "other") == [" ".join(["yes"] * k) for k in range(2, 7)]
    assert len(said) == 10
    many = load_grammar(load_recipe(REPO / "recipes/commands.yaml"))
    made = build_negatives(recipe, many, "valid", tmp_path / "many", n_oog=6, noise_repeats=1)
    said = [n for n in made if n.kind == "oog"]
    assert len(said) == 6 and not [n for n in said if n.detail == "other"]


def test_a_negative_set_with_everyday_english_is_made_again_when_those_strings_change(
    trained: tuple[Recipe, Bundle], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Everyday English fills what a grammar's own words cannot make even at `oog_other_share: 0`
    ("yes" makes five strings of ten), so such a set is keyed by how those strings are made, and a
    set of the grammar's own words alone is not."""
    from seqx.decode import negatives
    from seqx.grammar import grammar_from_dict

    recipe, _ = trained
    synth = recipe.data.synth.model_copy(update={"oog_other_share": 0.0})
    by_hand = recipe.model_copy(update={"data": recipe.data.model_copy(update={"synth": synth})})
    yes = grammar_from_dict({"intents": {"yes": ["yes"]}})
    many = load_grammar(load_recipe(REPO / "recipes/commands.yaml"))
    made = {}
    for name, grammar in (("yes", yes), ("many", many)):
        said = negatives.build_negatives(by_hand, grammar, "valid", tmp_path / name, n_oog=10, noise_repeats=1)
        assert any(n.detail == "other" for n in said) == (name == "yes")
        made[name] = (tmp_path / name / negatives.MANIFEST).stat().st_mtime_ns
    monkeypatch.setattr(negatives, "OTHER_LENGTHS", negatives.OTHER_LENGTHS + 1)  # the strings change
    for name, grammar in (("yes", yes), ("many", many)):
        negatives.build_negatives(by_hand, grammar, "valid", tmp_path / name, n_oog=10, noise_repeats=1)
        remade = (tmp_path / name / negatives.MANIFEST).stat().st_mtime_ns != made[name]
        assert remade == (name == "yes"), name


def test_out_of_grammar_strategies_take_turns_and_one_that_runs_dry_gives_way() -> None:
    """Shuffled, swapped and random strings in turn; a grammar of one-word commands has nothing to
    shuffle and one of two-word commands runs out of shuffles, and the others make the rest."""
    from seqx.decode.negatives import oog_sentences
    from seqx.grammar import grammar_from_dict

    many = load_grammar(load_recipe(REPO / "recipes/commands.yaml"))
    made = oog_sentences(many, 30, np.random.default_rng(0))
    assert [kind for kind, _ in made] == ["shuffled", "swapped", "random"] * 10
    things = [f"thing{i}" for i in range(40)]
    words = grammar_from_dict({"intents": {"say": ["{thing}"]}, "slots": {"thing": things}})
    channels = grammar_from_dict({"intents": {"say": ["{where} {side}"]},
                                  "slots": {"where": ["front", "rear"], "side": ["left", "right"]}})  # fmt: skip
    for grammar in (words, channels):
        made = oog_sentences(grammar, 200, np.random.default_rng(0))
        assert len(made) == 200 and len({s for _, s in made}) == 200
        assert not any(grammar.accepts(s) for _, s in made)
    assert {kind for kind, _ in oog_sentences(words, 50, np.random.default_rng(0))} == {"swapped", "random"}


def test_negatives_are_found_from_anywhere(
    trained: tuple[Recipe, Bundle], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative set's files are named relative to its folder: a moved experiment, or one made
    with a relative exp_dir and evaluated from another directory, still finds every file."""
    recipe, _ = trained
    folder = recipe.eval_dir / "negatives-valid"
    rows = [json.loads(line) for line in (folder / "negatives.jsonl").read_text().splitlines()]
    assert rows and all("/" not in row["audio"] for row in rows)
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    monkeypatch.chdir(tmp_path)
    found = read_negatives(moved / "negatives.jsonl")
    assert [Path(n.audio).parent for n in found] == [moved] * len(rows)
    assert all(Path(n.audio).is_file() for n in found)
    # a set written before the names were relative (paths from the directory it was made in)
    old = moved / "old.jsonl"
    before = [{**row, "audio": f"exp/x/eval/negatives-valid/{row['audio']}"} for row in rows]
    old.write_text("".join(json.dumps(row) + "\n" for row in before))
    assert [n.audio for n in read_negatives(old)] == [n.audio for n in found]


def test_constrained_equals_free_where_free_is_a_command(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    paths = [u.audio for u in _utts(recipe) + _utts(recipe, "test") if u.text]
    for beam in (1, 4):  # every check off: the searches, not the rejection
        free_settings = bundle.decode.model_copy(update={"beam": beam, "grammar": "none", **CHECKS_OFF})
        free = transcribe_files(bundle, paths, free_settings)
        ruled = transcribe_files(bundle, paths, bundle.decode.model_copy(update={"beam": beam, **CHECKS_OFF}))
        checked = 0
        for f, r in zip(free, ruled, strict=True):
            assert r.text == "" or bundle.grammar.accepts(r.text)
            if f.text and bundle.grammar.accepts(f.text):
                assert r.text == f.text
                checked += 1
        assert checked >= len(paths) * 0.8


def test_results_carry_intent_and_slots(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    utts = _utts(recipe)
    results = transcribe_files(bundle, [u.audio for u in utts], bundle.decode)
    for utt, res in zip(utts, results, strict=True):
        if not utt.text:
            assert not res.understood and res.intent is None and res.text == ""
            continue
        want = bundle.grammar.parse(utt.text)
        assert res.understood and res.text == utt.text
        assert (res.intent, res.slots) == (want.intent, want.slots)
    timer = next(r for r in results if r.intent == "timer")
    assert timer.slots["n"] in (2, 5)  # the value's output, not its words


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "seqx", *args], capture_output=True, text=True, timeout=300,
                          check=False)


def test_cli_json_plain_and_a_narrower_grammar(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    recipe, bundle = trained
    utts = [u for u in _utts(recipe) if u.text]
    timer = next(u for u in utts if u.text.startswith("set a timer"))
    scroll = next(u for u in utts if u.text.startswith("scroll"))
    model = ["--model", str(recipe.bundle_dir), "--device", "cpu"]
    done = _cli("transcribe", timer.audio, *model, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)[0]
    assert result["text"] == timer.text and result["intent"] == "timer" and result["understood"] is True
    assert result["slots"] == {"n": bundle.grammar.parse(timer.text).slots["n"]}
    plain = _cli("transcribe", timer.audio, *model)
    assert " ".join(plain.stdout.split()) == f"{timer.text} timer {{n={result['slots']['n']}}}"
    narrow = tmp_path / "scroll.yaml"
    narrow.write_text("intents:\n  scroll: ['scroll {way}']\nslots:\n  way: [up, down]\n")
    both = _cli("transcribe", scroll.audio, timer.audio, *model, "--grammar", str(narrow), "--json")
    assert both.returncode == 0, both.stderr
    first, second = json.loads(both.stdout)
    assert first["text"] == scroll.text and first["intent"] == "scroll"
    assert second["text"] == "" or second["text"].startswith("scroll")  # it can only say a scroll now
    free = _cli("transcribe", timer.audio, *model, "--grammar", "none", "--json")
    assert json.loads(free.stdout)[0]["intent"] is None and json.loads(free.stdout)[0]["text"] == timer.text


def test_a_grammar_in_capitals_or_with_punctuation_still_names_the_command(
    trained: tuple[Recipe, Bundle], tmp_path: Path
) -> None:
    """Decoded text is normalized ("scroll up"); a grammar written "SCROLL UP" (Sphinx grammars often are)
    or "Scroll up!" must still parse it, and report the slot as the grammar writes it."""
    from seqx.decode.transcribe import Constraint

    recipe, bundle = trained
    scroll = next(u for u in _utts(recipe) if u.text.startswith("scroll"))
    for name, text in [("caps.gram", "public <scroll> = SCROLL <way>;\n<way> = UP | DOWN;\n"),
                       ("said.txt", "Scroll up!\nScroll down!\n")]:
        path = tmp_path / name
        path.write_text(text)
        settings = bundle.decode.model_copy(update={"grammar": str(path)})
        [result] = transcribe_files(bundle, [scroll.audio], settings, constraint=Constraint.of(bundle, settings))
        assert result.text == scroll.text and result.intent == ("scroll" if name == "caps.gram" else "said")
        assert result.slots == ({"way": scroll.text.split()[1].upper()} if name == "caps.gram" else {})


def test_grammar_with_a_word_the_tokenizer_cannot_spell(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    recipe, _ = trained
    utt = next(u for u in _utts(recipe) if u.text)
    bad = tmp_path / "zoo.txt"
    bad.write_text("open the terminal\nfeed the zebra\n")  # the char tokenizer never saw a z
    done = _cli("transcribe", utt.audio, "--model", str(recipe.bundle_dir), "--device", "cpu", "--grammar", str(bad))
    assert done.returncode == 2
    flat = " ".join(done.stderr.split())  # rich wraps the one line at the terminal width
    assert flat.count("error:") == 1 and "'zebra'" in flat and str(bad) in flat and "Traceback" not in flat, flat


def test_loud_noise_is_not_understood(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    _, bundle = trained
    rng = np.random.default_rng(2024)
    clips = {
        "white-0.1": rng.standard_normal(32000) * 0.1,
        "white-0.3": rng.standard_normal(32000) * 0.3,
        "8bit": (rng.integers(0, 256, 32000) - 128) / 128.0,
    }
    paths = []
    for name, wave in clips.items():
        paths.append(str(tmp_path / f"{name}.wav"))
        sf.write(paths[-1], np.clip(wave, -1, 1).astype(np.float32), 16000)
    for settings in (bundle.decode, bundle.decode.model_copy(update={"grammar": "none"})):
        for result in transcribe_files(bundle, paths, settings):
            assert not result.understood and result.text == "" and result.intent is None, result


def test_choose_margin_separates() -> None:
    margin, fr, fa = choose_margin([0.01, 0.02, 0.05, None], [0.5, 0.9, None, 0.04])
    assert 0.05 < margin < 0.5 and fr == 0.25 and fa == 0.25
    assert choose_margin([], [0.3])[0] > 0
    # commands scored above the CTC best path (negative gaps), negatives just above 0: the best cut is
    # below 0, which must stay a check (the strictest one), not become 0 = no check
    margin, fr, fa = choose_margin([-0.05, -0.03, None], [0.02, 0.1])
    assert 0 < margin < 0.02 and fa == 0.0 and fr == 1 / 3


def test_actions_match_a_slot_whose_output_is_a_number() -> None:
    """`seqx listen` actions see the parse's outputs: `twelve` arrives as 12, `when:` says "12"."""
    from seqx.listen.actions import match_action, render_argv
    from seqx.recipe import ActionSettings

    actions = [ActionSettings(intent="set_timer", when={"number": "12"}, run=["timer", "{number}"])]
    found = match_action(actions, "set a timer for twelve minutes", "set_timer", {"number": 12})
    assert found is not None and render_argv(found, "", {"number": 12}) == ["timer", "12"]
    assert match_action(actions, "set a timer for two minutes", "set_timer", {"number": 2}) is None
    # an action's text as the user writes it matches the text as decoding spells it
    said = [ActionSettings(text="Check the battery!", run=["true"]), ActionSettings(text="Set it to 5", run=["true"])]
    assert match_action(said, "check the battery") is said[0] and match_action(said, "set it to five") is said[1]


def test_command_scores_count_which_slot_values_were_heard_as_which() -> None:
    """`seqx evaluate`'s confusions: understood answers only (a rejection is a false reject, not a
    confusion), one entry per differing slot or the intent, most frequent first."""
    from seqx.decode.evaluate import NOT_SAID, _command_scores
    from seqx.decode.result import Result
    from seqx.grammar import grammar_from_dict

    grammar = grammar_from_dict({
        "intents": {"timer": ["set a timer for {number} minutes [called {label}]"], "stop": ["stop"]},
        "slots": {"number": ["four: 4", "fourteen: 14", "forty: 40"], "label": ["tea", "eggs"]},
    })  # fmt: skip
    said_heard = [
        ("set a timer for fourteen minutes", "set a timer for forty minutes", True),
        ("set a timer for fourteen minutes", "set a timer for forty minutes", True),
        ("set a timer for four minutes called tea", "set a timer for four minutes", True),
        ("set a timer for forty minutes", "stop", True),
        ("set a timer for four minutes", "set a timer for forty minutes", False),  # rejected: not counted
        ("stop", "stop", True),
    ]
    refs = [said for said, _, _ in said_heard]
    results = [Result(path=str(i), text=heard, understood=ok) for i, (_, heard, ok) in enumerate(said_heard)]
    scores = _command_scores(refs, results, grammar)
    assert scores.commands == 6 and scores.acceptance == 1 / 6 and scores.false_rejects == 1 / 6
    assert scores.wrong_answers == 4 / 6  # understood as another command: acted on, never given
    assert [(c.slot, c.said, c.heard, c.count) for c in scores.confusions] == [
        ("number", "14", "40", 2), ("intent", "timer", "stop", 1), ("label", "tea", NOT_SAID, 1),
    ]  # fmt: skip


def test_command_scores_say_what_the_not_understood_checks_cost_and_caught() -> None:
    """A rejected result keeps the grammar's answer in its n-best: `seqx evaluate` counts the
    commands right before the checks (accepted, or rejected though right) and the wrong answers the
    checks caught. Silence and a search with no answer are not the checks' doing."""
    from seqx.decode.evaluate import _command_scores
    from seqx.decode.result import Result
    from seqx.grammar import grammar_from_dict

    grammar = grammar_from_dict({"intents": {"timer": ["set a timer for {number} minutes"], "stop": ["stop"]},
                                 "slots": {"number": ["fourteen: 14", "forty: 40"]}})  # fmt: skip
    fourteen, forty = "set a timer for fourteen minutes", "set a timer for forty minutes"

    def rejected(answer: str, reason: str = "rejected") -> Result:
        return Result(path="x", reason=reason, no_speech=True, nbest=[{"text": answer, "score": -1.0}])

    refs = [fourteen, fourteen, fourteen, forty, "stop", "stop", "stop"]
    results = [
        Result(path="a", text=fourteen, understood=True),  # right
        Result(path="b", text=forty, understood=True),  # wrong, acted on
        rejected(fourteen),  # right, turned away
        rejected(fourteen, "ambiguous"),  # wrong, caught
        rejected("stop", "low confidence"),  # right, turned away
        Result(path="f", reason="no speech", no_speech=True),  # the gate, not the checks
        Result(path="g", reason="no answer", no_speech=True, nbest=[]),
    ]
    scores = _command_scores(refs, results, grammar)
    assert scores.acceptance == 1 / 7 and scores.wrong_answers == 1 / 7 and scores.false_rejects == 5 / 7
    assert scores.right_before_checks == 3 / 7
    assert scores.wrong_caught == 1 / 7


def test_an_answer_close_to_another_command_is_ambiguous() -> None:
    """decode.reject_nbest_margin: the answer's lead over the best-ranked *other command* of the
    n-best (another spelling of the same command does not count); the result reports decode.nbest."""
    from seqx.decode.result import Hypothesis, Result, Rules, judge
    from seqx.grammar.load import grammar_from_dict

    grammar = grammar_from_dict({"intents": {"set": ["set the volume to {number}"], "stop": ["stop"]},
                                 "slots": {"number": ["fourteen: 14", "forty: 40"]}})  # fmt: skip
    said = ["set the volume to fourteen", "set the volume to fourteen", "set the volume to forty", "stop"]
    hyps = [Hypothesis([i], score, 0.9) for i, score in enumerate([-0.10, -0.12, -0.25, -0.9])]

    def decide(lead: float, keep: int = 1, n: int = 4) -> Result:
        result = Result(path="x.wav")
        judge(result, hyps[:n], lambda tokens: said[tokens[0]], Rules(0.0, 1.0, 0.0, lead, keep), grammar)
        return result

    close = decide(0.2)  # forty is 0.15 behind: the second "fourteen" is the same command
    assert not close.understood and close.reason == "ambiguous" and close.text == ""
    assert close.command_lead == pytest.approx(0.15) and len(close.nbest) == 1
    sure = decide(0.1, keep=3)
    assert sure.understood and sure.slots == {"number": 14} and sure.command_lead == pytest.approx(0.15)
    assert [h["text"] for h in sure.nbest] == said[:3]
    alone = decide(0.2, n=2)  # no other command in the n-best: nothing to be confused with
    assert alone.understood and alone.command_lead is None
    off = decide(0.0)
    assert off.understood and off.command_lead is None
    # free decoding has no commands to compare: the rule applies with a grammar only
    assert Rules.of({"reject_margin": 0.3, "max_ctc_gap": 0.5, "reject_distance": 0.2, "min_confidence": 0.0,
                     "reject_nbest_margin": 0.4, "nbest": 2}, constrained=False).lead == 0.0  # fmt: skip


def test_the_distance_check_lets_a_long_command_be_one_word_off() -> None:
    """decode.reject_distance_slack: a free transcript that many words off is not enough to reject,
    on a six-word command as on a two-word one; past the slack the share decides as before, and
    the calibration sees the distance the check does."""
    from seqx.decode.distance import checked_distance
    from seqx.decode.reject import _pair
    from seqx.decode.result import Hypothesis, Result, Rules, judge
    from seqx.grammar.load import grammar_from_dict

    grammar = grammar_from_dict({"intents": {"date": ["{day} {month} the {date} at {hour}"], "go": ["go {way}"]},
                                 "slots": {"day": ["sunday", "monday"], "month": ["may", "june"],
                                           "date": ["first", "second"], "hour": ["five", "six"],
                                           "way": ["left", "right"]}})  # fmt: skip
    answer, free = "sunday may the first at five", "sunday n may the first at five"

    def decide(text: str, heard: str, slack: int, distance: float = 0.134) -> Result:
        result = Result(path="x.wav", free_text=heard, ctc_gap=0.0)
        rules = Rules(0.0, distance, 0.0, slack=slack)
        judge(result, [Hypothesis([0], -0.1, 0.9)], lambda tokens: text, rules, grammar)
        return result

    strict, slack = decide(answer, free, 0), decide(answer, free, 1)
    assert (strict.understood, strict.reason) == (False, "rejected") and strict.free_distance == pytest.approx(1 / 7)
    assert slack.understood and slack.slots["hour"] == "five" and slack.free_distance == pytest.approx(1 / 7)
    two_off = decide(answer, "sunday june the second at five", 1, distance=0.3)
    assert two_off.reason == "rejected" and two_off.free_distance == pytest.approx(2 / 6)
    assert decide("go left", "go right", 1, distance=0.3).understood  # the slack counts words, whatever the length
    assert checked_distance("go right", "go left", 0) == 0.5 and checked_distance("", "", 1) == 0.0
    assert _pair(Result(path="x", text=answer, understood=True, ctc_gap=0.2, free_text=free), 1) == (0.2, 0.0)
    assert _pair(Result(path="x", text=answer, understood=True, ctc_gap=0.2, free_text=free), 0) == (0.2, 1 / 7)
    assert Rules.of({"reject_margin": 0.3, "max_ctc_gap": 0.5, "reject_distance": 0.2, "min_confidence": 0.0,
                     "reject_nbest_margin": 0.0, "nbest": 1}, constrained=True).slack == 0  # an older export


def test_an_answer_to_nothing_heard_is_not_understood() -> None:
    """Where the free beam (or the CTC head) heard no word, the grammar's answer is its guess at
    noise: rejected whenever a check is on, even a one-word answer the slack would let through and
    at a CTC gap under the margin (a long piece thins the gap out); with every check off it still
    answers, and the calibration leaves such items out as the decoder does."""
    from seqx.decode.reject import _pair
    from seqx.decode.result import Hypothesis, Result, Rules, judge
    from seqx.grammar.load import grammar_from_dict

    grammar = grammar_from_dict({"intents": {"stop": ["stop"], "go": ["go {way}"]},
                                 "slots": {"way": ["left", "right"]}})  # fmt: skip

    def decide(heard: str | None, rules: Rules, ctc: str | None = None) -> Result:
        result = Result(path="x.wav", free_text=heard, ctc_text=ctc, ctc_gap=0.05)
        judge(result, [Hypothesis([0], -0.1, 0.9)], lambda tokens: "stop", rules, grammar)
        return result

    checks_on, gap_only, all_off = Rules(0.3, 1.0, 0.0, slack=1), Rules(0.3, 1.0, 0.0), Rules(0.0, 1.0, 0.0, slack=1)
    for rules in (checks_on, gap_only, Rules(0.0, 0.5, 0.0, slack=1)):
        nothing = decide("", rules)
        assert (nothing.understood, nothing.reason) == (False, "rejected")
    assert decide(None, checks_on, ctc=" ").reason == "rejected"  # no free beam: the CTC head's best path
    # the free beam made a word of what the CTC head heard as nothing: the decoder's guess at noise
    assert decide("stop", checks_on, ctc="").reason == "rejected" and decide("stop", checks_on, ctc="stop").understood
    assert decide("stop", checks_on).understood and decide("stop it", checks_on).understood  # heard: as before
    assert decide("", all_off).understood and decide(None, checks_on).understood  # nothing to compare with
    assert _pair(Result(path="x", text="stop", understood=True, ctc_gap=0.05, free_text=""), 1) is None
    assert _pair(Result(path="x", text="stop", understood=True, ctc_gap=0.05, free_text="stop"), 1) == (0.05, 0.0)
    assert _pair(Result(path="x", text="stop", understood=True, ctc_gap=0.05, free_text="stop", ctc_text=""), 1) is None


def test_a_long_file_nothing_of_which_is_understood_says_why() -> None:
    """A long recording's verdict comes from its pieces: speech the checks turned away is
    "rejected", not "no speech"; only pieces with nothing in them make the file "no speech"."""
    import numpy as np

    from seqx.decode.result import Result, join_pieces
    from seqx.listen.segment import Piece

    pieces = [Piece(0.0, 10.0, np.zeros(1)), Piece(10.0, 20.0, np.zeros(1)), Piece(20.0, 30.0, np.zeros(1))]

    def joined(*reasons: str | None, texts: tuple[str, ...] = ("", "", "")) -> Result:
        parts = [Result("x", text=t, understood=bool(t), reason=r) for r, t in zip(reasons, texts, strict=True)]
        result = Result("x")
        join_pieces(result, pieces, parts)
        return result

    turned_away = joined("silence", "rejected", "ambiguous")
    assert (turned_away.understood, turned_away.no_speech, turned_away.reason) == (False, True, "rejected")
    assert joined("silence", "no speech", "silence").reason == "no speech"
    heard = joined("rejected", None, "silence", texts=("", "open the terminal", ""))
    assert (heard.understood, heard.reason, heard.text) == (True, None, "open the terminal")


def test_the_recipe_floor_turns_away_an_answer_the_decoder_hardly_believes() -> None:
    """The commands recipe's `min_confidence` (0.2): a letter heard at confidence 0.08 is "low
    confidence"; every check off (`without_rejection`, the "no rejection" rows and the thresholds'
    calibration) answers it, as before the floor."""
    from seqx.decode.reject import without_rejection
    from seqx.decode.result import Hypothesis, Result, Rules, judge
    from seqx.grammar.load import grammar_from_dict
    from seqx.recipe import DEFAULT_RECIPE, DecodeSettings, load_recipe

    grammar = grammar_from_dict({"intents": {"letter": ["{letter}"]}, "slots": {"letter": ["a", "b"]}})
    decode = load_recipe(DEFAULT_RECIPE).decode.model_copy(update={"reject_margin": 0.3, "reject_distance": 1.0})
    assert decode.min_confidence == 0.2

    def decide(settings: DecodeSettings, confidence: float) -> Result:
        result = Result(path="x.wav", free_text="b", ctc_text="b", ctc_gap=0.05)
        judge(result, [Hypothesis([0], -2.5, confidence)], lambda tokens: "b", Rules.of(settings, True), grammar)
        return result

    doubted, believed = decide(decode, 0.08), decide(decode, 0.3)
    assert (doubted.understood, doubted.reason) == (False, "low confidence")
    assert believed.understood and believed.slots == {"letter": "b"}
    assert decide(without_rejection(decode), 0.08).understood
