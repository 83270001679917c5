"""Grammar-constrained search on random (untrained) models: whatever the model says, the
constrained beam returns only sentences of the grammar; a beam wider than the grammar's
choices works; dead states are never picked; greedy with a grammar is the beam of one;
an automaton that accepts everything changes nothing."""

from __future__ import annotations

import pytest
import torch
from conftest import enumerate_sentences

from seqx.decode.grammar_scorer import GrammarScorer
from seqx.decode.search import beam_search, decode_batch, greedy_search
from seqx.grammar import Grammar, grammar_from_dict
from seqx.grammar.tokens import TokenAutomaton, compile_tokens
from seqx.model import ModelDimensions, Seq2SeqTransformer
from seqx.recipe import DecodeSettings, TokenizerSettings
from seqx.tokenize.stage import resolved_settings
from seqx.tokenize.tokenizer import Tokenizer, train_tokenizer

SMALL = {
    "intents": {
        "lights": ["(turn | switch) (on | off) [the] {room} lights"],
        "heat": ["set [the] temperature to {degrees}"],
        "stop": ["stop", "stop it now"],
    },
    "slots": {"room": ["kitchen", "living room", "bath room"], "degrees": [{"twenty one": 21}, "nineteen"]},
}


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return grammar_from_dict(SMALL, name="small")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory, grammar: Grammar) -> Tokenizer:
    texts = sorted(enumerate_sentences(grammar)) + ["the light of the kitchen", "turn it on now"]
    return train_tokenizer(texts, tmp_path_factory.mktemp("tok"), TokenizerSettings(vocab_size=48))


def random_model(tokenizer: Tokenizer, seed: int) -> Seq2SeqTransformer:
    torch.manual_seed(seed)
    dims = ModelDimensions(n_feats=16, vocab_size=tokenizer.vocab_size, d_model=32, heads=2, enc_layers=1,
                           dec_layers=1, d_ff=64, dropout=0.0, frontend="linear", ctc=True,
                           pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id,
                           blank_id=tokenizer.blank_id)
    return Seq2SeqTransformer(dims).eval()


def encoded(model: Seq2SeqTransformer, seed: int, batch: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    lens = torch.randint(12, 40, (batch,), generator=gen)
    feats = 3 * torch.randn(batch, int(lens.max()), 16, generator=gen)
    with torch.no_grad():
        return model.encode(feats, lens)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize(("beam", "ctc_weight"), [(1, 0.0), (4, 0.0), (8, 0.5), (3, 1.0)])
def test_constrained_beam_says_only_grammar_sentences(grammar, tokenizer, seed, beam, ctc_weight) -> None:  # type: ignore[no-untyped-def]
    automaton = compile_tokens(grammar, tokenizer)
    model = random_model(tokenizer, seed)
    memory, mem_lens = encoded(model, seed)
    settings = DecodeSettings(beam=beam, nbest=beam, ctc_weight=ctc_weight, max_len=30, max_len_ratio=2.0)
    nbests = decode_batch(model, memory, mem_lens, settings, grammar=automaton)
    sentences = enumerate_sentences(grammar)
    found = 0
    for hyps in nbests:
        for h in hyps:
            assert automaton.accepts(h.tokens), h
            assert tokenizer.decode(h.tokens) in sentences
            assert not h.flagged
            found += 1
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    assert found >= len(nbests)  # a random model still gets answers: the grammar leads it to them


def test_beam_wider_than_the_grammar(tokenizer: Tokenizer) -> None:
    """One sentence, beam 8: the seven spare slots die at once; the one sentence comes back."""
    one = grammar_from_dict({"intents": {"stop": ["stop it now"]}}, name="one")
    automaton = compile_tokens(one, tokenizer)
    model = random_model(tokenizer, 5)
    memory, mem_lens = encoded(model, 5)
    for ctc_weight in (0.0, 0.5):
        nbests = beam_search(model, memory, mem_lens, beam=8, nbest=8, ctc_weight=ctc_weight, max_len=20,
                             scorers=[GrammarScorer(automaton)])
        for hyps in nbests:
            assert [tokenizer.decode(h.tokens) for h in hyps] == ["stop it now"]


def test_dead_state_is_never_selected(tokenizer: Tokenizer) -> None:
    """A row in the dead state scores -inf everywhere and stays dead, whatever token follows."""
    automaton = compile_tokens(grammar_from_dict(SMALL, name="small"), tokenizer)
    scorer = GrammarScorer(automaton)
    scorer.init(3)
    scorer.state = torch.tensor([automaton.start, -1, automaton.start])
    scores = scorer.score()
    assert torch.isneginf(scores[1]).all() and torch.isfinite(scores[0]).any()
    assert torch.isneginf(scores[0, tokenizer.eos_id])  # eos not in the start state (not final)
    scorer.select(torch.tensor([1, 1, 0]), torch.tensor([5, tokenizer.eos_id, tokenizer.encode("stop")[0]]))
    assert scorer.state.tolist()[:2] == [-1, -1] and scorer.state[2] >= 0


def test_greedy_with_grammar_is_beam_one(grammar: Grammar, tokenizer: Tokenizer) -> None:
    automaton = compile_tokens(grammar, tokenizer)
    model = random_model(tokenizer, 7)
    memory, mem_lens = encoded(model, 7)
    greedy = decode_batch(model, memory, mem_lens, DecodeSettings(beam=1, max_len=30, max_len_ratio=2.0),
                          grammar=automaton)
    beam1 = beam_search(model, memory, mem_lens, beam=1, nbest=1, ctc_weight=0.0, length_penalty=0.0,
                        max_len=torch.clamp((mem_lens.float() * 2.0).ceil().long() + 2, max=30),
                        scorers=[GrammarScorer(automaton)])
    assert [[h.tokens for h in n] for n in greedy] == [[h.tokens for h in n if not h.flagged] for n in beam1]


def test_free_ctc_weight_weighs_the_free_search_only(grammar: Grammar, tokenizer: Tokenizer) -> None:
    """decode.free_ctc_weight is the CTC weight of a search without a grammar; one held to the
    grammar keeps ctc_weight."""
    automaton = compile_tokens(grammar, tokenizer)
    model = random_model(tokenizer, 5)
    memory, mem_lens = encoded(model, 5)
    base = DecodeSettings(beam=4, nbest=4, ctc_weight=0.5, max_len=30, max_len_ratio=2.0)

    def scored(settings: DecodeSettings, automaton: TokenAutomaton | None = None) -> list[list[tuple]]:
        found = decode_batch(model, memory, mem_lens, settings, grammar=automaton)
        return [[(tuple(h.tokens), round(h.score, 4)) for h in n] for n in found]

    free_at_0 = scored(base.merged(free_ctc_weight=0.0))
    assert free_at_0 == scored(base.merged(ctc_weight=0.0))
    assert free_at_0 != scored(base)  # the weight did change the free search
    assert scored(base.merged(free_ctc_weight=0.0), automaton) == scored(base, automaton)
    assert scored(base.merged(ctc_weight=0.0), automaton) != scored(base, automaton)


def test_an_automaton_that_allows_everything_changes_nothing(tokenizer: Tokenizer) -> None:
    """With every token allowed in one final state, the grammar scorer adds 0 everywhere:
    constrained greedy and beam equal the free ones exactly."""
    V = tokenizer.vocab_size
    table = torch.zeros(1, V, dtype=torch.long)  # every token loops on state 0 ...
    for special in (tokenizer.pad_id, tokenizer.bos_id, tokenizer.blank_id):  # what the decoder bans too
        table[0, special] = -1
    anything = TokenAutomaton(table, torch.tensor([True]), tokenizer.eos_id)  # ... and 0 is final
    model = random_model(tokenizer, 3)
    memory, mem_lens = encoded(model, 3)
    free = greedy_search(model, memory, mem_lens, max_len=12)
    ruled = beam_search(model, memory, mem_lens, beam=1, nbest=1, ctc_weight=0.0, length_penalty=0.0, max_len=12,
                        scorers=[GrammarScorer(anything)])
    assert [h.tokens for h in free] == [n[0].tokens for n in ruled]
    kw = dict(beam=4, nbest=4, ctc_weight=0.3, max_len=12)
    plain = beam_search(model, memory, mem_lens, **kw)
    with_grammar = beam_search(model, memory, mem_lens, scorers=[GrammarScorer(anything)], **kw)
    for a, b in zip(plain, with_grammar, strict=True):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [round(h.score, 4) for h in a] == [round(h.score, 4) for h in b]


def test_smarthome_grammar_constrains_a_random_model(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The 1.7e8-sentence smart-home grammar: compiled over a tokenizer trained as `seqx tokenize`
    trains it, a random model's constrained beam says only its sentences, and they parse."""
    import numpy as np

    from seqx.grammar import load_grammar
    from seqx.recipe import load_recipe

    recipe = load_recipe("recipes/smarthome.yaml")
    grammar = load_grammar(recipe, "recipes/smarthome.yaml")
    assert grammar.count() > 10**8
    # "ten p m: 22:00": the first ':' ends the words, and 22:00 stays text (not the base-60 number 1320)
    assert grammar.parse("set an alarm at ten p m today").slots == {"time": "22:00", "day": "today"}
    rng = np.random.default_rng(0)
    texts = [grammar.sample(rng).text for _ in range(1500)] + grammar.vocabulary()
    settings = resolved_settings(recipe, grammar.vocabulary())  # `auto` pieces: 256 for its 197 words
    tokenizer = train_tokenizer(texts, tmp_path_factory.mktemp("smarthome"), settings)
    automaton = compile_tokens(grammar, tokenizer)
    model = random_model(tokenizer, 11)
    memory, mem_lens = encoded(model, 11, batch=4)
    settings = DecodeSettings(beam=8, nbest=3, ctc_weight=0.5, max_len=48, max_len_ratio=2.0)
    found = 0
    for hyps in decode_batch(model, memory, mem_lens, settings, grammar=automaton):
        for h in hyps:
            text = tokenizer.decode(h.tokens)
            assert automaton.accepts(h.tokens) and grammar.accepts(text) and grammar.parse(text) is not None
            found += 1
    assert found > 0


def test_a_long_command_said_fast_is_not_cut_short(tokenizer: Tokenizer) -> None:
    """The default cap on output tokens follows what CTC can align (a token a frame), so a command
    whose pieces outnumber half its frames (a fast voice, long words in small pieces) still gets
    its answer. At the old 0.5 tokens a frame the constrained search could not finish it: no answer."""
    sentence = "set the temperature to twenty one"
    one = grammar_from_dict({"intents": {"heat": [sentence]}}, name="one")
    automaton = compile_tokens(one, tokenizer)
    pieces = len(tokenizer.encode(sentence))
    frames = pieces + 2  # room for CTC's blanks between repeated pieces
    assert pieces > 0.5 * frames + 2
    model = random_model(tokenizer, 3)
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        memory, mem_lens = model.encode(torch.randn(1, frames, 16, generator=gen), torch.tensor([frames]))
    for ctc_weight in (0.0, 0.5):
        found = decode_batch(model, memory, mem_lens, DecodeSettings(beam=4, ctc_weight=ctc_weight), grammar=automaton)
        assert [tokenizer.decode(h.tokens) for h in found[0]] == [sentence]
        cut = DecodeSettings(beam=4, ctc_weight=ctc_weight, max_len_ratio=0.5, max_len=64)
        assert decode_batch(model, memory, mem_lens, cut, grammar=automaton) == [[]]
