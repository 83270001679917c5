"""The Transformer: attention is the paper's formula, masks hide padding and the future, shapes are right."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from seqx.errors import SeqxError
from seqx.model import ModelDimensions, Seq2SeqTransformer, joint_loss, param_groups
from seqx.model.attention import MultiHeadAttention, causal_mask, make_pad_mask, short_query_attention
from seqx.model.convolution import ConvolutionModule, shifted_depthwise
from seqx.model.frontend import FrontEnd
from seqx.recipe import ModelSettings

V = 11


def dims(**kw: object) -> ModelDimensions:
    base = dict(n_feats=16, vocab_size=V, d_model=16, heads=2, enc_layers=2, dec_layers=2, d_ff=32,
                dropout=0.0, frontend="linear", pad_id=0, bos_id=1, eos_id=2, blank_id=0)
    base.update(kw)
    return ModelDimensions(**base)  # type: ignore[arg-type]


def model(**kw: object) -> Seq2SeqTransformer:
    torch.manual_seed(0)
    return Seq2SeqTransformer(dims(**kw)).eval()


def test_attention_is_the_formula() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x, xa = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    mask = ~make_pad_mask(torch.tensor([7, 4]))[:, None, None, :]  # (B, 1, 1, S)
    H, dh = 4, 4

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(t.shape[0], t.shape[1], H, dh).transpose(1, 2)

    q, k, v = heads(mha.query(x)), heads(mha.key(xa)), heads(mha.value(xa))
    w = q @ k.transpose(-1, -2) / math.sqrt(dh)
    w = w.masked_fill(~mask, float("-inf")).softmax(-1)
    expected = mha.out((w @ v).transpose(1, 2).reshape(2, 5, 16))
    assert torch.allclose(mha(x, xa, mask=mask), expected, atol=1e-5)
    # self-attention with the causal mask, the same way
    q, k, v = heads(mha.query(x)), heads(mha.key(x)), heads(mha.value(x))
    w = (q @ k.transpose(-1, -2) / math.sqrt(dh)).masked_fill(~causal_mask(5), float("-inf")).softmax(-1)
    expected = mha.out((w @ v).transpose(1, 2).reshape(2, 5, 16))
    assert torch.allclose(mha(x, mask=causal_mask(5)), expected, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_one_query_path_equals_the_fused_kernel(dtype: torch.dtype) -> None:
    """A decoding step on the CPU skips `scaled_dot_product_attention` (slow for short queries); same answer."""
    torch.manual_seed(0)
    q = torch.randn(6, 4, 3, 8, dtype=dtype)
    k, v = torch.randn(6, 4, 9, 8, dtype=dtype), torch.randn(6, 4, 9, 8, dtype=dtype)
    mask = ~make_pad_mask(torch.tensor([9, 1, 5, 9, 3, 7]))[:, None, None, :]
    fused = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)
    for m in (mask, None):
        expected = fused if m is not None else F.scaled_dot_product_attention(q.float(), k.float(), v.float())
        got = short_query_attention(q, k, v, m)
        assert got.dtype == dtype and got.shape == (6, 4, 3, 8)
        assert torch.allclose(got.float(), expected, atol=1e-5 if dtype == torch.float32 else 3e-2)
    # and the module takes that path in eval mode with one query, giving what the kernel gives
    mha = MultiHeadAttention(16, 4).eval()
    x, xa = torch.randn(3, 1, 16), torch.randn(3, 7, 16)
    xmask = ~make_pad_mask(torch.tensor([7, 2, 4]))[:, None, None, :]
    mha.train()  # training never takes the shortcut (dropout is 0, so the maths is the same)
    reference = mha(x, xa, mask=xmask)
    mha.eval()
    assert torch.allclose(mha(x, xa, mask=xmask), reference, atol=1e-6)


def test_training_projects_with_one_product_and_the_same_maths() -> None:
    """Training's fused Q/K/V (and cross K/V) projection gives the three products' output and gradients."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).train()  # dropout 0: training and decoding compute the same thing
    x, xa = torch.randn(3, 5, 16), torch.randn(3, 7, 16)
    xmask = ~make_pad_mask(torch.tensor([7, 2, 4]))[:, None, None, :]
    for source, mask in ((None, causal_mask(5)), (xa, xmask)):
        results = []
        for fused in (True, False):
            mha.fuse_projections = fused  # an instance setting: the class default stays as it is
            mha.zero_grad()
            y = mha(x, source, mask=mask)
            y.square().sum().backward()
            results.append((y.detach(), [p.grad.clone() for p in mha.parameters()]))
        (y1, g1), (y2, g2) = results
        assert torch.allclose(y1, y2, atol=1e-6)
        assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g1, g2, strict=True))
    assert mha.query.weight.grad is not None and mha.key.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("kernel", [1, 3, 7])
def test_the_gpus_shifted_depthwise_sum_is_the_convolution(kernel: int) -> None:
    """What a GPU computes for the Conformer's depthwise convolution gives Conv1d's output and
    gradients, padding at both ends included (run here on the CPU: the maths is the device's)."""
    torch.manual_seed(0)
    conv = ConvolutionModule(8, kernel).depthwise
    h = torch.randn(3, 6, 8, requires_grad=True)
    results = []
    for compute in (lambda: conv(h.transpose(1, 2)).transpose(1, 2), lambda: shifted_depthwise(h, conv)):
        y = compute()
        grads = torch.autograd.grad(y.square().sum(), [h, conv.weight, conv.bias])
        results.append((y.detach(), grads))
    (y1, g1), (y2, g2) = results
    assert torch.allclose(y1, y2, atol=1e-6)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g1, g2, strict=True))


def test_bf16_training_attention_on_cpu_matches_fp32() -> None:
    """bf16 training on a CPU attends with SDPA's maths backend (the flash kernel's bf16 backward
    is slow): same output and gradients as fp32, up to bf16 rounding, padding masked."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).train()
    x = torch.randn(3, 5, 16, requires_grad=True)
    mask = ~make_pad_mask(torch.tensor([5, 2, 4]))[:, None, None, :]
    y32 = mha(x, mask=mask)
    (g32,) = torch.autograd.grad(y32.square().sum(), x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y16 = mha(x, mask=mask)
    (g16,) = torch.autograd.grad(y16.float().square().sum(), x)
    assert y16.dtype == torch.bfloat16
    assert torch.allclose(y16.float(), y32, atol=5e-2, rtol=5e-2)
    assert torch.allclose(g16, g32, atol=1e-1, rtol=1e-1)


@pytest.mark.parametrize("frontend", ["none", "linear", "conv2d"])
def test_frontend_lengths(frontend: str) -> None:
    fe = FrontEnd(frontend, 16, 16)
    lens = torch.tensor([3, 7, 8, 9, 10, 11, 40, 41])
    x, out = fe(torch.randn(8, 41, 16), lens)
    if frontend == "conv2d":
        # by hand: T1 = floor((T - 3) / 2) + 1, T2 likewise; clips under 7 frames still give one
        expected = [max(((max(t, 7) - 3) // 2 + 1 - 3) // 2 + 1, 1) for t in lens.tolist()]
        assert out.tolist() == expected == [1, 1, 1, 1, 1, 2, 9, 9]
        assert x.shape[1] == max(expected)
    else:
        assert out.tolist() == lens.tolist() and x.shape[1] == 41


@pytest.mark.parametrize(("frontend", "conv_kernel"), [("none", 0), ("linear", 0), ("conv2d", 0), ("linear", 5)])
@pytest.mark.parametrize("norm_first", [True, False])
def test_padding_never_changes_real_outputs(frontend: str, conv_kernel: int, norm_first: bool) -> None:
    m = model(frontend=frontend, norm_first=norm_first, ctc=True, conv_kernel=conv_kernel)
    feats, lens = torch.randn(2, 40, 16), torch.tensor([40, 23])
    tokens, tok_lens = torch.randint(3, V, (2, 6)), torch.tensor([6, 3])
    out = m(feats, lens, tokens, tok_lens)
    feats2, tokens2 = feats.clone(), tokens.clone()
    feats2[1, 23:] = 1e3 * torch.randn(17, 16)  # garbage in the padded frames
    tokens2[1, 3:] = torch.randint(0, V, (3,))  # and in the padded tokens
    out2 = m(feats2, lens, tokens2, tok_lens)
    S = int(out.mem_lens[1])
    assert torch.allclose(out.logits[0], out2.logits[0], atol=1e-5)
    assert torch.allclose(out.logits[1, :3], out2.logits[1, :3], atol=1e-5)
    assert out.ctc_logprobs is not None and out2.ctc_logprobs is not None
    assert torch.allclose(out.ctc_logprobs[1, :S], out2.ctc_logprobs[1, :S], atol=1e-5)
    assert torch.isfinite(out2.logits).all() and torch.isfinite(out2.ctc_logprobs).all()
    # and one utterance alone gives what it gave in the batch
    alone = m(feats[1:, :23], lens[1:], tokens[1:, :3], tok_lens[1:])
    assert torch.allclose(alone.logits[0], out.logits[1, :3], atol=1e-5)


@pytest.mark.parametrize("norm_first", [True, False])
def test_future_never_changes_the_past(norm_first: bool) -> None:
    m = model(norm_first=norm_first)
    memory, mem_lens = m.encode(torch.randn(1, 20, 16), torch.tensor([20]))
    tokens = torch.randint(3, V, (1, 6))
    changed = tokens.clone()
    changed[0, 4] = (tokens[0, 4] + 1 - 3) % (V - 3) + 3
    a, b = m.decode(tokens, memory, mem_lens), m.decode(changed, memory, mem_lens)
    assert torch.allclose(a[:, :4], b[:, :4], atol=1e-6)
    assert not torch.allclose(a[:, 4:], b[:, 4:], atol=1e-3)


def test_cached_decode_equals_full_decode() -> None:
    m = model()
    memory, mem_lens = m.encode(torch.randn(2, 20, 16), torch.tensor([20, 12]))
    tokens = torch.randint(3, V, (2, 6))
    full = m.decode(tokens, memory, mem_lens)
    cache = m.new_cache()
    steps = [m.decode(tokens[:, :2], memory, mem_lens, cache)]  # a chunk, then one at a time
    steps += [m.decode(tokens[:, i : i + 1], memory, mem_lens, cache) for i in range(2, 6)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    assert cache.offset == 6 and cache.self_attn[0].k is not None and cache.self_attn[0].k.shape[2] == 6


def test_tied_embeddings_are_tied_and_decay_only_matrices() -> None:
    m = model(tie_embeddings=True)
    assert m.decoder.output.weight is m.decoder.embed.weight
    assert model(tie_embeddings=False).decoder.output.weight is not model(tie_embeddings=False).decoder.embed.weight
    decay, no_decay = param_groups(m, 0.01)
    assert all(p.dim() >= 2 for p in decay["params"])  # type: ignore[attr-defined]
    assert all(p.dim() < 2 for p in no_decay["params"])  # type: ignore[attr-defined]
    n = len(decay["params"]) + len(no_decay["params"])  # type: ignore[arg-type]
    assert n == len(list(m.parameters()))  # the tied matrix once


def test_dimensions_from_settings_and_back() -> None:
    tok = SimpleNamespace(vocab_size=40, pad_id=0, bos_id=1, eos_id=2, blank_id=3)
    d = ModelDimensions.from_settings(ModelSettings(d_model=32, heads=4, norm="post", ctc_weight=0.0), 80, tok)
    assert (d.norm_first, d.ctc, d.n_feats, d.blank_id) == (False, False, 80, 3)
    assert ModelDimensions.from_dict(d.to_dict()) == d
    with pytest.raises(SeqxError, match="front-end 'none'"):
        replace(d, frontend="none")
    assert Seq2SeqTransformer(d).ctc_head is None


def test_joint_loss_with_empty_targets() -> None:
    m = model(ctc=True)
    m.train()
    feats, lens = torch.randn(3, 30, 16), torch.tensor([30, 25, 9])
    ys = [[5, 6, 7], [], [4]]  # an empty transcript: the target is just eos
    tokens_in = torch.zeros(3, 4, dtype=torch.long)
    targets = torch.zeros(3, 4, dtype=torch.long)
    for i, y in enumerate(ys):
        tokens_in[i, : len(y) + 1] = torch.tensor([1, *y])
        targets[i, : len(y) + 1] = torch.tensor([*y, 2])
    target_lens = torch.tensor([len(y) + 1 for y in ys])
    out = m(feats, lens, tokens_in, target_lens)
    loss, parts = joint_loss(out, targets, target_lens, m.dims, ctc_weight=0.3, label_smoothing=0.1)
    loss.backward()
    assert math.isfinite(loss.item()) and set(parts) == {"loss", "ce", "ctc"}
    assert parts["loss"] == pytest.approx(0.7 * parts["ce"] + 0.3 * parts["ctc"], rel=1e-5)
    # CE is the mean over the 6 real target tokens
    real = out.logits.detach()[~make_pad_mask(target_lens, 4)]  # (6, V)
    ce = F.cross_entropy(real, torch.tensor([t for y in ys for t in [*y, 2]]), label_smoothing=0.1)
    assert parts["ce"] == pytest.approx(ce.item(), rel=1e-5)
    # all-empty batch
    out = m(feats, lens, tokens_in[:, :1].clone().fill_(1), torch.ones(3, dtype=torch.long))
    loss, parts = joint_loss(out, torch.full((3, 1), 2), torch.ones(3, dtype=torch.long), m.dims, 0.5, 0.0)
    assert math.isfinite(loss.item()) and parts["ctc"] >= 0


def test_bad_sizes_raise_clearly() -> None:
    with pytest.raises(SeqxError, match="must equal"):
        dims(frontend="none", n_feats=40)
    with pytest.raises(SeqxError, match="conv_kernel: must be odd"):
        dims(conv_kernel=4)
    with pytest.raises(ValueError, match="conv_kernel: must be odd"):
        ModelSettings(conv_kernel=6)
    with pytest.raises(SeqxError, match="max_positions"):
        model(max_positions=16).encode(torch.randn(1, 20, 16), torch.tensor([20]))
