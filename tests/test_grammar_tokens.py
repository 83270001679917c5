"""The grammar over tokenizer pieces: with a real sentencepiece model trained here, the automaton
accepts exactly the token sequences of the grammar's sentences; eos only in final states; special
tokens never; a word the tokenizer cannot spell is one clear error; the tokenizer stage learns
every grammar word."""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO, enumerate_sentences

from seqx.grammar import Grammar, GrammarError, grammar_from_dict, load_grammar
from seqx.grammar.tokens import TokenAutomaton, compile_tokens
from seqx.recipe import TokenizerSettings, load_recipe
from seqx.tokenize.stage import run_tokenize_stage
from seqx.tokenize.tokenizer import Tokenizer, train_tokenizer

SMALL = {
    "intents": {
        "lights": ["(turn | switch) (on | off) [the] {room} lights", "{room} lights (on | off)"],
        "heat": ["set [the] temperature to {degrees} [degrees]"],
        "other": ["stop", "stop [it] now", "settings", "set the setting"],  # shared prefixes: set, setting(s)
    },
    "slots": {"room": ["kitchen", "living room", "bath room", "bathroom"],
              "degrees": [{"twenty one": 21}, "nineteen", "eighteen"]},
}


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return grammar_from_dict(SMALL, name="small")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory, grammar: Grammar) -> Tokenizer:
    texts = sorted(enumerate_sentences(grammar)) + ["the setting of the light switch", "lights on the kitchen"]
    return train_tokenizer(texts, tmp_path_factory.mktemp("tok"), TokenizerSettings(vocab_size=60))


def test_automaton_accepts_exactly_the_grammars_token_sequences(grammar: Grammar, tokenizer: Tokenizer) -> None:
    automaton = compile_tokens(grammar, tokenizer)
    sentences = enumerate_sentences(grammar)
    encoded = {tuple(tokenizer.encode(s)) for s in sentences}
    assert all(automaton.accepts(list(ids)) for ids in encoded)
    # every sequence up to 3 tokens over the pieces the grammar uses is accepted iff it is a sentence's
    pieces = sorted({i for ids in encoded for i in ids})
    for n in range(1, 4):
        for ids in product(pieces, repeat=n):
            assert automaton.accepts(list(ids)) == (ids in encoded), tokenizer.decode(ids)
    # and longer sequences: every encoded sentence with one token changed or dropped
    for ids in list(encoded)[:60]:
        for k in range(len(ids)):
            dropped = ids[:k] + ids[k + 1 :]
            assert automaton.accepts(list(dropped)) == (dropped in encoded)
    # the number of accepted paths (a DP over the table) is the number of sentences
    assert automaton.count() == len(sentences) == grammar.count()


def test_eos_only_in_final_states_and_specials_never(grammar: Grammar, tokenizer: Tokenizer) -> None:
    automaton = compile_tokens(grammar, tokenizer)
    eos = tokenizer.eos_id
    assert automaton.start == 0 and automaton.next_state.dtype == torch.long
    assert automaton.next_state.shape == (automaton.num_states, tokenizer.vocab_size)
    finals = automaton.final.nonzero().flatten()
    assert torch.equal(automaton.next_state[finals, eos], finals)  # eos keeps a final state
    assert (automaton.next_state[~automaton.final, eos] == -1).all()
    for special in tokenizer.special_ids - {eos}:
        assert (automaton.next_state[:, special] == -1).all()
    ids = tokenizer.encode("switch off the living room lights")
    assert automaton.accepts(ids) and automaton.accepts([*ids, eos])
    assert not automaton.accepts(ids[:-1]) and not automaton.accepts([*ids[:2], eos, *ids[2:]])
    # one gather per step, batched: states (B,) and tokens (B,) -> next states; -1 stays -1
    states = torch.tensor([0, 0, -1])
    tokens = torch.tensor([ids[0], tokenizer.bos_id, ids[0]])
    assert automaton.advance(states, tokens).tolist() == [automaton.step(0, ids[0]), -1, -1]
    mask = automaton.allowed(states)
    assert mask.shape == (3, tokenizer.vocab_size) and mask[0, ids[0]] and not mask[0, eos] and not mask[2].any()
    state = torch.zeros(1, dtype=torch.long)
    for token in ids:  # walking a sentence: every token allowed, eos only at the end
        assert automaton.allowed(state)[0, token] and not automaton.allowed(state)[0, eos]
        state = automaton.advance(state, torch.tensor([token]))
    assert automaton.allowed(state)[0, eos]


def test_word_boundaries_follow_sentencepiece(grammar: Grammar, tokenizer: Tokenizer) -> None:
    """`bath room` and `bathroom` are different token paths: a piece never spans two words."""
    automaton = compile_tokens(grammar, tokenizer)
    one, two = tokenizer.encode("bathroom lights on"), tokenizer.encode("bath room lights on")
    assert one != two and automaton.accepts(one) and automaton.accepts(two)
    for word in grammar.vocabulary():
        assert tokenizer.pieces(word)[0].startswith("\u2581")


def test_to_dict_and_device(grammar: Grammar, tokenizer: Tokenizer) -> None:
    automaton = compile_tokens(grammar, tokenizer)
    again = TokenAutomaton.from_dict(json.loads(json.dumps(automaton.to_dict())))
    assert torch.equal(again.next_state, automaton.next_state) and torch.equal(again.final, automaton.final)
    moved = automaton.to("cpu")
    assert moved.next_state.device.type == "cpu" and moved.eos_id == automaton.eos_id


def test_a_word_the_tokenizer_cannot_spell_is_one_clear_error(tokenizer: Tokenizer) -> None:
    other = Grammar.build({"x": ["turn on the jukebox"]})
    with pytest.raises(GrammarError, match="cannot spell the grammar word 'jukebox'"):
        compile_tokens(other, tokenizer)


def test_commands_and_smarthome_compile_small(tmp_path: Path) -> None:
    """The automaton's size follows the description: 1.7e8 sentences, a few thousand states."""
    smarthome = load_grammar(load_recipe(REPO / "recipes/smarthome.yaml"))
    rng = np.random.default_rng(0)
    texts = [smarthome.sample(rng).text for _ in range(300)] + smarthome.vocabulary()
    tokenizer = train_tokenizer(texts, tmp_path, TokenizerSettings(vocab_size=256))
    automaton = compile_tokens(smarthome, tokenizer)
    assert automaton.num_states < 5000
    assert automaton.count() == smarthome.count()  # one token path per sentence, all 1.7e8 of them
    for _ in range(200):
        assert automaton.accepts(tokenizer.encode(smarthome.sample(rng).text))


def test_tokenizer_stage_learns_every_grammar_word(tmp_path: Path) -> None:
    """Transcripts that never say most words still give a tokenizer that spells the whole grammar."""
    recipe = load_recipe(REPO / "recipes/commands.yaml", [f"exp_dir={tmp_path}", "tokenizer.vocab_size=128"])
    recipe.data_dir.mkdir(parents=True)
    rows = [{"id": f"u{i}", "audio": "/nowhere.wav", "text": t, "duration": 1.0, "speaker": "s"}
            for i, t in enumerate(["check the battery", "scroll up", "run the tests"])]
    for split in ("train", "valid", "test"):
        (recipe.data_dir / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_tokenize_stage(recipe)
    tokenizer = Tokenizer.load(recipe.tokenizer_dir)
    grammar = load_grammar(recipe)
    assert all(tokenizer.unk_id not in tokenizer.encode(w) for w in grammar.vocabulary())
    compile_tokens(grammar, tokenizer)  # no word it cannot spell
