"""Search equivalences on a briefly overfitted tiny model: cached = uncached, beam 1 = greedy,
batched = one at a time, n-best sorted and unique, guards against loops and runaways."""

from __future__ import annotations

import pytest
import torch

from seqx.decode.search import beam_search, greedy_search, loop_cut
from seqx.model import ModelDimensions, Seq2SeqTransformer, joint_loss

V, BOS, EOS = 12, 1, 2
TARGETS = [[3, 4, 5], [6, 7], [8], [], [9, 10, 11, 3], [4, 4, 6], [7, 3, 9], [5, 11]]
LENGTHS = [30, 22, 17, 12, 36, 27, 25, 19]


@pytest.fixture(scope="module")
def trained() -> tuple[Seq2SeqTransformer, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    dims = ModelDimensions(n_feats=16, vocab_size=V, d_model=32, heads=2, enc_layers=1, dec_layers=1, d_ff=64,
                           dropout=0.0, frontend="linear", ctc=True, pad_id=0, bos_id=BOS, eos_id=EOS, blank_id=0)
    model = Seq2SeqTransformer(dims)
    B = len(TARGETS)
    feats = torch.randn(B, max(LENGTHS), 16)
    lens = torch.tensor(LENGTHS)
    U = max(map(len, TARGETS)) + 1
    tokens_in, targets = torch.zeros(B, U, dtype=torch.long), torch.zeros(B, U, dtype=torch.long)
    for i, y in enumerate(TARGETS):
        tokens_in[i, : len(y) + 1] = torch.tensor([BOS, *y])
        targets[i, : len(y) + 1] = torch.tensor([*y, EOS])
    target_lens = torch.tensor([len(y) + 1 for y in TARGETS])
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss, _ = joint_loss(model(feats, lens, tokens_in, target_lens), targets, target_lens, dims, 0.3, 0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        memory, mem_lens = model.encode(feats, lens)
    return model, memory, mem_lens


def same(a: list, b: list) -> None:  # type: ignore[type-arg]
    assert [h.tokens for h in a] == [h.tokens for h in b]
    assert [h.flagged for h in a] == [h.flagged for h in b]
    for x, y in zip(a, b, strict=True):
        assert abs(x.score - y.score) < 1e-4 and abs(x.confidence - y.confidence) < 1e-4


def test_greedy_learns_and_cache_changes_nothing(trained) -> None:  # type: ignore[no-untyped-def]
    model, memory, mem_lens = trained
    hyps = greedy_search(model, memory, mem_lens, max_len=10)
    assert [h.tokens for h in hyps] == TARGETS  # the model was overfitted on these
    assert all(0.5 < h.confidence <= 1.0 and not h.flagged for h in hyps)
    same(hyps, greedy_search(model, memory, mem_lens, max_len=10, use_cache=False))


@pytest.mark.parametrize("ctc_weight", [0.0, 0.4])
def test_beam_cached_equals_uncached(trained, ctc_weight: float) -> None:  # type: ignore[no-untyped-def]
    model, memory, mem_lens = trained
    kw = dict(beam=4, nbest=4, ctc_weight=ctc_weight, length_penalty=1.0, max_len=8)
    cached = beam_search(model, memory, mem_lens, use_cache=True, **kw)
    uncached = beam_search(model, memory, mem_lens, use_cache=False, **kw)
    for a, b in zip(cached, uncached, strict=True):
        same(a, b)
    assert [n[0].tokens for n in cached] == TARGETS


def test_beam_of_one_is_greedy(trained) -> None:  # type: ignore[no-untyped-def]
    model, memory, mem_lens = trained
    torch.manual_seed(1)
    memory = 3 * torch.randn_like(memory)  # an unheard "utterance": varied, empty and capped outputs
    greedy = greedy_search(model, memory, mem_lens, max_len=6)
    beams = beam_search(model, memory, mem_lens, beam=1, nbest=1, ctc_weight=0.0, length_penalty=0.0, max_len=6)
    same(greedy, [n[0] for n in beams])
    assert any(h.flagged for h in greedy) and any(not h.tokens for h in greedy)
    assert len({tuple(h.tokens) for h in greedy}) > 4


def test_batched_equals_one_at_a_time(trained) -> None:  # type: ignore[no-untyped-def]
    model, memory, mem_lens = trained
    limits = (mem_lens.float() * 0.3).ceil().long()  # per-utterance caps, as transcribe passes them
    kw = dict(beam=3, nbest=3, ctc_weight=0.3, length_penalty=0.5)
    batched = beam_search(model, memory, mem_lens, max_len=limits, **kw)
    greedy = greedy_search(model, memory, mem_lens, max_len=limits)
    for i in range(len(TARGETS)):
        S = int(mem_lens[i])
        alone = beam_search(model, memory[i : i + 1, :S], mem_lens[i : i + 1], max_len=limits[i : i + 1], **kw)
        same(batched[i], alone[0])
        same([greedy[i]], greedy_search(model, memory[i : i + 1, :S], mem_lens[i : i + 1], max_len=int(limits[i])))


def test_nbest_sorted_unique(trained) -> None:  # type: ignore[no-untyped-def]
    model, memory, mem_lens = trained
    results = beam_search(model, memory * 0.5, mem_lens, beam=6, nbest=6, ctc_weight=0.3, length_penalty=1.0, max_len=8)
    for nbest in results:
        assert 1 <= len(nbest) <= 6
        tokens = [tuple(h.tokens) for h in nbest]
        assert len(set(tokens)) == len(tokens)
        proper = [h.score for h in nbest if not h.flagged]
        assert proper == sorted(proper, reverse=True)
        assert all(h.flagged for h in nbest[len(proper) :])  # cut-off ones rank last
        assert all(EOS not in h.tokens and BOS not in h.tokens and 0 not in h.tokens for h in nbest)


def test_runaway_is_cut_and_flagged(trained) -> None:  # type: ignore[no-untyped-def]
    model, memory, mem_lens = trained
    hyps = greedy_search(model, memory, mem_lens, max_len=1)
    long = [h for h, y in zip(hyps, TARGETS, strict=True) if len(y) > 1]
    assert long and all(h.flagged and h.confidence == 0.0 and len(h.tokens) == 1 for h in long)
    nb = beam_search(model, memory, mem_lens, beam=2, nbest=1, max_len=1)
    assert all(n[0].flagged for n, y in zip(nb, TARGETS, strict=True) if len(y) > 1)


def test_loop_detection() -> None:
    seqs = torch.tensor([
        [5, 3, 4, 3, 4, 3, 4],  # bigram three times: keep one copy
        [5, 6, 7, 7, 7, 7, 7],  # a token four times in a row (only checks the tail): drop 3
        [5, 6, 7, 8, 7, 7, 7],  # three times is still allowed for one token
        [3, 4, 5, 3, 4, 5, 6],  # no loop at the tail
    ])
    assert loop_cut(seqs).tolist() == [4, 3, 0, 0]
