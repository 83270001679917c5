"""The intent/slot heads (seqx/model/slot_head.py) and their vote on the constrained n-best
(seqx/decode/slot_rescore.py), on one tiny model trained with them: they learn (their loss on
the training files falls far below an untrained model's, and they read the training files'
slots), the bundle keeps their classes, rescoring puts the heads' favourite first as the
weight grows, and a bundle from before the heads decodes as the heads model does at weight 0.
The runtime's parity with heads on is tests/test_runtime.py (its tiny model has heads)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from seqx.data.manifest import read_manifest
from seqx.data.synth import OOG_SUFFIX
from seqx.decode.bundle import CONFIG, Bundle, load_bundle, save_bundle
from seqx.decode.slot_rescore import IGNORE, HeadLayout
from seqx.decode.transcribe import featurize, transcribe_files
from seqx.featurize.audio import load_audio
from seqx.grammar import load_grammar
from seqx.model.slot_head import slot_loss
from seqx.model.transformer import Seq2SeqTransformer
from seqx.recipe import Recipe
from tiny import FBANK, train_tiny

GRAMMAR = (
    "data.synth.grammar={intents: {open_app: ['open the {app}'], check: ['check the battery'],"
    " scroll: ['scroll {way}'], timer: ['set a timer for {n} minutes']},"
    " slots: {app: [terminal, browser], way: [up, down], n: ['two: 2', 'five: 5', 'fifteen: 15', 'fifty: 50']}}"
)
TINY = [
    *FBANK, GRAMMAR, "data.size=72", "data.synth.empty_share=0.1", "data.synth.oog_share=0.2",
    "data.synth.oog_other_share=0", "train.epochs=40",
    "train.slot_weight=1.0", "decode.slot_weight=1.0", "decode.reject_margin=0", "decode.reject_distance=1",
    "decode.precision=fp32",
]  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recipe, Bundle]:
    return train_tiny(tmp_path_factory.mktemp("slot-heads"), TINY)


def _commands(recipe: Recipe, split: str) -> list:
    return [u for u in read_manifest(recipe.data_dir / f"{split}.jsonl") if u.text and not u.id.endswith(OOG_SUFFIX)]


def _slot_logprobs(bundle: Bundle, model: Seq2SeqTransformer, paths: list[str]) -> torch.Tensor:
    """The heads' output for each file, one at a time (no padding involved)."""
    rows = []
    with torch.inference_mode():
        for path in paths:
            feats = featurize(bundle, load_audio(path, bundle.sample_rate))[None]
            memory, lens = model.encode(feats, torch.tensor([feats.shape[1]]))
            rows.append(model.slot_logprobs(memory, lens)[0])
    return torch.stack(rows)


def test_bundle_keeps_the_heads_classes(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    layout = HeadLayout.from_grammar(load_grammar(recipe))
    assert bundle.heads == layout and bundle.dims.slot_classes == layout.sizes
    assert layout.names == ("intent", "app", "way", "n") and layout.sizes == (5, 3, 3, 5)
    assert dict(layout.slots)["n"] == (2, 5, 15, 50)  # outputs keep their type through the bundle's JSON
    assert HeadLayout.from_json(json.loads(json.dumps(layout.to_json()))) == layout


def test_heads_learn_the_training_files(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    grammar, layout = bundle.grammar, bundle.heads
    assert grammar is not None and layout is not None
    utts = _commands(recipe, "train")
    labels = torch.tensor([layout.labels(grammar.parse(bundle.tokenizer.normalize(u.text))) for u in utts])
    assert (labels != IGNORE).all()
    paths = [u.audio for u in utts]
    torch.manual_seed(0)
    untrained = Seq2SeqTransformer(bundle.dims).eval()
    before = float(slot_loss(_slot_logprobs(bundle, untrained, paths), labels, layout.sizes))
    after = float(slot_loss(_slot_logprobs(bundle, bundle.model, paths), labels, layout.sizes))
    assert after < 0.25 * before, (before, after)
    read = [layout.classes(grammar.parse(bundle.tokenizer.normalize(u.text))) for u in utts]
    got = _slot_logprobs(bundle, bundle.model, paths).numpy()
    right = sum(
        [layout.classes(_reading(layout, row))] == [want] for row, want in zip(got, read, strict=True)
    )
    assert right >= 0.9 * len(utts)


def _reading(layout: HeadLayout, row):  # noqa: ANN001, ANN202 (a Parse-like object of the heads' own argmax)
    from seqx.grammar.model import Parse

    said = layout.decode(row)
    slots = {k: v for k, v in said.items() if k != "intent" and v is not None}
    return Parse(str(said["intent"]), slots, "", "") if said["intent"] is not None else None


def test_rescoring_ranks_by_the_heads_as_the_weight_grows(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    paths = [u.audio for u in _commands(recipe, "test") + _commands(recipe, "valid")]
    base = bundle.decode.model_copy(update={"nbest": 4, "beam": 4})
    plain = transcribe_files(bundle, paths, base.model_copy(update={"slot_weight": 0.0}))
    voted = transcribe_files(bundle, paths, base.model_copy(update={"slot_weight": 100.0}))
    changed = 0
    for a, b in zip(plain, voted, strict=True):
        assert all("slot_score" not in h for h in a.nbest)  # weight 0: no vote, the beam's order
        assert [h["score"] for h in a.nbest] == sorted((h["score"] for h in a.nbest), reverse=True)
        scores = [h["slot_score"] for h in b.nbest]
        assert scores[0] == max(scores)  # the heads' favourite first
        assert sorted(h["text"] for h in a.nbest) == sorted(h["text"] for h in b.nbest)  # the same hypotheses
        changed += a.nbest[0]["text"] != b.nbest[0]["text"]
    assert len({h["slot_score"] for r in voted for h in r.nbest}) > 1  # the heads tell hypotheses apart
    # the vote decides: some answers change (how many is the tiny model's luck: 6 and 7 of 12 seen)
    assert 0 < changed < len(paths)


def test_a_bundle_without_heads_decodes_as_the_heads_model_at_weight_0(
    trained: tuple[Recipe, Bundle], tmp_path: Path
) -> None:
    """A bundle from before the heads (no `slot_classes`, no `slot_heads`) loads and decodes; with
    the same encoder and decoder weights it says what the heads model says without their vote."""
    recipe, bundle = trained
    old_dims = replace(bundle.dims, slot_classes=())
    old_model = Seq2SeqTransformer(old_dims)
    state = {k: v for k, v in bundle.model.state_dict().items() if not k.startswith("slot_heads.")}
    old_model.load_state_dict(state)
    folder = tmp_path / "old"
    shutil.copytree(recipe.bundle_dir, folder)
    config = json.loads((folder / CONFIG).read_text())
    save_bundle(folder, old_model, bundle.features, bundle.sample_rate, bundle.cmvn, bundle.tokenizer, bundle.decode,
                extra={k: config[k] for k in ("grammar", "train")})  # fmt: skip
    config = json.loads((folder / CONFIG).read_text())
    del config["dims"]["slot_classes"]  # what an older seqx wrote
    assert "slot_heads" not in config
    (folder / CONFIG).write_text(json.dumps(config))
    old = load_bundle(folder)
    assert old.heads is None and old.model.slot_heads is None
    paths = [u.audio for u in _commands(recipe, "test")]
    settings = bundle.decode.model_copy(update={"slot_weight": 1.0})  # asked for, but there is nothing to vote
    got = transcribe_files(old, paths, settings)
    want = transcribe_files(bundle, paths, settings.model_copy(update={"slot_weight": 0.0}))
    assert [(r.text, r.intent, r.slots, r.understood) for r in got] == [
        (r.text, r.intent, r.slots, r.understood) for r in want
    ]
    assert [r.score for r in got] == pytest.approx([r.score for r in want], abs=1e-5)


def test_the_runtime_reranks_as_torch_does(trained: tuple[Recipe, Bundle], tmp_path: Path) -> None:
    """The export's encoder has the heads' output, and the runtime reranks with the same code:
    verdict, parse, n-best, scores and the heads' scores within 1e-4 of the torch path's."""
    from test_runtime import _same_results

    from seqx.export.onnx_export import export_bundle
    from seqx.runtime import load_exported, settings_for
    from seqx.runtime import transcribe_files as runtime_transcribe

    recipe, bundle = trained
    report = export_bundle(bundle, tmp_path / "onnx")
    assert report.max_abs_diff["slot_logprobs"] < 1e-4
    exported = load_exported(tmp_path / "onnx", threads=1)
    paths = [u.audio for split in ("test", "valid") for u in read_manifest(recipe.data_dir / f"{split}.jsonl")]
    voted = 0
    for options in ({}, {"nbest": 3}, {"slot_weight": 0.0}, {"slot_weight": 100.0}, {"grammar": "none"}):
        want = transcribe_files(bundle, paths, bundle.decode.merged(**options))
        got = runtime_transcribe(exported, paths, settings_for(exported, **options))
        _same_results(got, want, options)
        voted += sum("slot_score" in h for r in got for h in r.nbest)
    assert voted > 0


def test_a_slot_used_twice_has_two_heads_and_shared_outputs_one_class() -> None:
    """Heads follow Parse.slots' keys (`card`, `card_2`), and two phrasings of one output are one class."""
    from seqx.grammar.model import Grammar

    grammar = Grammar.build(
        {"deal": ["deal {card} and {card}"], "level": ["turn {dir} the volume"]},
        {"card": ["ace", "king"], "dir": [("up", "up"), ("higher", "up"), ("down", "down")]},
    )
    layout = HeadLayout.from_grammar(grammar)
    assert layout.names == ("intent", "card", "card_2", "dir") and layout.sizes == (3, 3, 3, 3)
    assert layout.classes(grammar.parse("deal king and ace")) == [1, 2, 1, 0]
    higher, up = grammar.parse("turn higher the volume"), grammar.parse("turn up the volume")
    assert layout.classes(higher) == layout.classes(up)
    assert layout.classes(None) == [0, 0, 0, 0] and layout.labels(None) == [IGNORE] * 4


def test_two_lists_reported_as_one_slot_share_its_head() -> None:
    """`device@lights` and `device@tv` are heard only where written, both answer `device`: one head,
    the classes of both lists."""
    from seqx.grammar.load import grammar_from_dict

    grammar = grammar_from_dict(
        {"intents": {"light": ["dim the {device@lights}"], "tv": ["mute the {device@tv}"]},
         "slots": {"device@lights": ["lamp", "ceiling light"], "device@tv": ["television", "lamp"]}},
        source="test",
    )  # fmt: skip
    assert grammar.parse("mute the television").slots == {"device": "television"}
    assert not grammar.accepts("mute the ceiling light")
    layout = HeadLayout.from_grammar(grammar)
    assert layout.names == ("intent", "device") and layout.sizes == (3, 4)
    assert layout.classes(grammar.parse("dim the lamp")) == [1, 1]  # "lamp" of either list is one class
    assert layout.classes(grammar.parse("mute the lamp")) == [2, 1]
    assert layout.classes(grammar.parse("mute the television")) == [2, 3]
    assert grammar_from_dict(grammar.to_dict(), source="stored").parse("dim the lamp").slots == {"device": "lamp"}
