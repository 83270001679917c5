"""Training-step throughput of seqx's Seq2SeqTransformer beside torch.nn.Transformer of the same size.

Usage:
    python bench/train_throughput.py                                  # the recipe's model, cuda if present
    python bench/train_throughput.py --device cpu --d-model 144 --enc-layers 4 --dec-layers 2 \\
        --d-ff 576 --batch 8 --frames 300 --steps 5
    python bench/train_throughput.py --device cuda --bf16 --batch 64 --json   # + peak memory and MFU
    python bench/train_throughput.py --device cpu --batch 24 --frames 40 --bf16 --compile   # cpu profile, 80 ms frames
    python bench/train_throughput.py --device cpu --batch 24 --frames 40 --profile 3 --models seqx   # per-op table

--bf16 is bf16 autocast (fp32 master weights, fp32 loss), on CUDA and on CPUs with native bf16
(AVX512-BF16 / AMX; elsewhere it is emulated and slow). --compile wraps each model in
torch.compile; its compile time (the warm-up steps) is reported apart. --profile N runs
torch.profiler over N steps after the timed ones and prints the per-op table (self GPU time on
CUDA, self CPU time on a CPU).

One step = forward, the joint CTC/attention loss, backward, AdamW step, on synthetic random
features (lengths drawn uniformly in [frames/2, frames], about 1.5-3 s of speech at the 10 ms
hop; --spread narrows that to what length-sorted batches give) and random target tokens.
Both models get the same front-end module (a copy of ours), the same token embedding, output
layer, CTC head and loss; the baseline's core is
`torch.nn.Transformer(d_model, heads, enc_layers, dec_layers, d_ff, batch_first=True,
norm_first=<same>)` with padding and causal masks. Steps of the two models are timed
interleaved (median of --steps each), so a busy machine slows both alike. Reported: utterances/s, encoder frames/s
(frames after the front-end), and ours/baseline ratios (>= 1 means ours is not slower).

Model FLOPs (per step, counted analytically over the real, unpadded lengths; x3 = forward + backward):
    matmuls:    6 * (P_enc * S + P_dec * U + P_out * U + P_ctc * S)       P = weights in matmuls
    attention:  per encoder layer 3 * 4 * S^2 * d, per decoder layer 3 * 4 * (U^2 + U*S) * d
                (QK^T and AV, each 2 * n^2 * d multiply-adds)
    front-end:  conv2d: 3 * 2 * k^2 * C_in * C_out * T' * F' for each convolution
    conformer:  per encoder layer 3 * 2 * conv_kernel * d * S (depthwise; its pointwise layers are in P_enc)
S = encoder frames after the front-end, U = target tokens (+ eos), summed over the batch.
MFU = model FLOPs per second / --peak-tflops (default 989: H100 SXM bf16 dense); CUDA only.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.model.attention import MultiHeadAttention, make_pad_mask  # noqa: E402
from seqx.model.convolution import ConvolutionModule  # noqa: E402
from seqx.model.loss import joint_loss  # noqa: E402
from seqx.model.transformer import ModelDimensions, ModelOutput, Seq2SeqTransformer, sinusoids  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402
from seqx.tokenize.stage import vocab_size as tokenizer_vocab_size  # noqa: E402

SDPA_KERNELS = {"math": SDPBackend.MATH, "eff": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
ALL_KERNELS = [SDPBackend.FLASH_ATTENTION, *SDPA_KERNELS.values()]


class TorchTransformer(nn.Module):
    """The baseline: our front-end, sinusoidal positions, then torch.nn.Transformer, same heads."""

    def __init__(self, dims: ModelDimensions, frontend: nn.Module) -> None:
        super().__init__()
        self.dims = dims
        self.frontend = frontend
        self.core = nn.Transformer(
            dims.d_model, dims.heads, dims.enc_layers, dims.dec_layers, dims.d_ff, dims.dropout,
            batch_first=True, norm_first=dims.norm_first,
        )
        self.embed = nn.Embedding(dims.vocab_size, dims.d_model)
        self.output = nn.Linear(dims.d_model, dims.vocab_size, bias=False)
        if dims.tie_embeddings:
            self.output.weight = self.embed.weight
        self.ctc_head = nn.Linear(dims.d_model, dims.vocab_size) if dims.ctc else None
        self.register_buffer("positions", sinusoids(dims.max_positions, dims.d_model), persistent=False)

    def forward(self, feats: Tensor, feat_lens: Tensor, tokens: Tensor, token_lens: Tensor) -> ModelOutput:
        x, lens = self.frontend(feats, feat_lens)  # (B, S, D)
        S, U = x.shape[1], tokens.shape[1]
        x = x + self.positions[:S].to(x.dtype)
        y = self.embed(tokens) * self.dims.d_model**0.5 + self.positions[:U].to(x.dtype)
        causal = nn.Transformer.generate_square_subsequent_mask(U, device=x.device, dtype=torch.bool)
        src_pad, tgt_pad = make_pad_mask(lens, S), make_pad_mask(token_lens, U)
        memory = self.core.encoder(x, src_key_padding_mask=src_pad)  # what nn.Transformer.forward does, once
        h = self.core.decoder(y, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad,
                              tgt_is_causal=True)
        ctc = F.log_softmax(self.ctc_head(memory).float(), -1) if self.ctc_head is not None else None
        return ModelOutput(self.output(h), ctc, lens)


def make_batch(args: argparse.Namespace, dims: ModelDimensions, device: torch.device) -> tuple[Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    shortest = max(1, round(args.frames * (1 - args.spread)))
    feat_lens = torch.randint(shortest, args.frames + 1, (args.batch,), generator=g)
    feats = torch.randn(args.batch, int(feat_lens.max()), dims.n_feats, generator=g)
    y_lens = torch.randint(max(1, args.tokens // 2), args.tokens + 1, (args.batch,), generator=g)
    ys = torch.randint(5, dims.vocab_size, (args.batch, int(y_lens.max())), generator=g)
    tokens_in = torch.cat([torch.full((args.batch, 1), dims.bos_id), ys], 1)
    targets = torch.cat([ys, torch.full((args.batch, 1), dims.pad_id)], 1)
    targets[torch.arange(args.batch), y_lens] = dims.eos_id
    target_lens = y_lens + 1
    return tuple(t.to(device) for t in (feats, feat_lens, tokens_in, targets, target_lens))


def matmul_params(module: nn.Module | None) -> int:
    if module is None:
        return 0
    seen, total = set(), 0
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.MultiheadAttention)):
            for p in m.parameters(recurse=False):
                if p.dim() == 2 and id(p) not in seen:
                    seen.add(id(p))
                    total += p.numel()
    return total


def model_flops(model: Seq2SeqTransformer, dims: ModelDimensions, feat_lens: Tensor, target_lens: Tensor) -> float:
    """Training FLOPs of one step of our model (the baseline does the same arithmetic)."""
    enc, dec, d = model.encoder, model.decoder, dims.d_model
    frontend = enc.frontend
    S = frontend.output_lengths(feat_lens.cpu()).double()
    U = target_lens.cpu().double()
    p_front = matmul_params(getattr(frontend, "proj", None))
    p_enc = matmul_params(enc) - p_front
    p_out = dims.vocab_size * d
    p_dec = matmul_params(dec) - (0 if dims.tie_embeddings else p_out)
    p_ctc = dims.vocab_size * d if dims.ctc else 0
    flops = 6 * ((p_enc + p_front + p_ctc) * S.sum() + (p_dec + p_out) * U.sum())
    flops += 12 * d * (dims.enc_layers * (S**2).sum() + dims.dec_layers * (U**2 + U * S).sum())
    flops += 6 * dims.conv_kernel * d * dims.enc_layers * S.sum()  # depthwise convolutions (pointwise: in p_enc)
    if dims.frontend == "conv2d":
        c = dims.conv_channels or d
        t1 = torch.div(feat_lens.cpu() - 3, 2, rounding_mode="floor") + 1
        f1 = (dims.n_feats - 3) // 2 + 1
        flops += 6 * 9 * (1 * c * (t1.double() * f1).sum() + c * c * (S * ((f1 - 3) // 2 + 1)).sum())
    return float(flops)


def make_step(model: nn.Module, batch: tuple[Tensor, ...], dims: ModelDimensions, args: argparse.Namespace,
              device: torch.device, options: frozenset[str] = frozenset()):  # noqa: ANN201
    """One full training step as a closure (forward, loss, backward, clip, AdamW).

    options (a variant's `:`-suffixes, on top of --bf16/--compile): bf16, compile, nodrop (dropout 0),
    unfused (AdamW's default per-tensor loop instead of the fused kernel seqx trains with), cl
    (channels-last conv2d front-end: cuDNN's NHWC kernels, the layout tensor cores want), qkv1 (one
    Q/K/V product instead of training's three, `MultiHeadAttention.fuse_projections`), conv1d (the
    Conformer module's depthwise Conv1d when compiled too, instead of its shifted sum), shifted (the
    shifted sum eager too, instead of Conv1d), autotune
    (compiled with mode max-autotune-no-cudagraphs: GEMM kernels chosen by timing, epilogues fused), and the
    attention kernel SDPA may pick: math (written-out products, which torch.compile fuses), eff
    (memory-efficient) or cudnn; without one SDPA picks.
    """
    feats, feat_lens, tokens_in, targets, target_lens = batch
    fused = device.type in ("cuda", "cpu") and "unfused" not in options
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused)
    autocast = args.bf16 or "bf16" in options
    if "nodrop" in options:
        for m in model.modules():
            if isinstance(m, nn.Dropout):
                m.p = 0.0
            elif isinstance(getattr(m, "dropout", None), float):  # attention dropout (ours: SDPA's dropout_p)
                m.dropout = 0.0
    if "qkv1" in options:
        for m in model.modules():
            if isinstance(m, MultiHeadAttention):
                m.fuse_projections = True
    if "conv1d" in options or "shifted" in options:
        for m in model.modules():
            if isinstance(m, ConvolutionModule):
                m.shifted = "shifted" in options
    kernels = [SDPA_KERNELS[o] for o in options if o in SDPA_KERNELS]
    if "cl" in options:
        model.to(memory_format=torch.channels_last)  # 4-D conv weights only; the input (B, 1, T, F) follows
    if "autotune" in options:  # inductor benchmarks GEMM kernels (cuBLAS and its own templates) per shape
        forward = torch.compile(model, mode="max-autotune-no-cudagraphs")
    else:
        forward = torch.compile(model) if args.compile or "compile" in options else model

    def step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast), sdpa_kernel(kernels or ALL_KERNELS):
            out = forward(feats, feat_lens, tokens_in, target_lens)
            loss, _ = joint_loss(out, targets, target_lens, dims, 0.3 if dims.ctc else 0.0, 0.1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def profile_table(step, n: int, rows: int, device: torch.device) -> str:  # noqa: ANN001
    """torch.profiler over n steps: per-op self time on the device that does the work (GPU kernels on
    CUDA, else CPU), most expensive first: the step's hot spots."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(n):
            step()
        if cuda:
            torch.cuda.synchronize(device)
    order = "self_device_time_total" if cuda else "self_cpu_time_total"
    return prof.key_averages().table(sort_by=order, row_limit=rows)


def time_step(step, device: torch.device) -> float:  # noqa: ANN001
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    started = time.perf_counter()
    step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipe", default="recipes/commands.yaml", help="model size defaults come from here")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="recipe override, e.g. features.kind=fbank (80 log-Mel features a frame)")
    parser.add_argument("--device", default="auto")
    for name in ("d-model", "enc-layers", "dec-layers", "heads", "d-ff"):
        parser.add_argument(f"--{name}", type=int, default=None)
    parser.add_argument("--frontend", choices=["none", "linear", "conv2d"], default=None, help="default: the recipe's")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--frames", type=int, default=300,
                        help="longest utterance in frames (10 ms; 80 ms with speech_embedding)")
    parser.add_argument("--tokens", type=int, default=12, help="longest target in tokens")
    parser.add_argument("--spread", type=float, default=0.5,
                        help="input lengths uniform in [frames * (1 - spread), frames]: 0.5 pads 25%% of the frames; "
                             "0.05 pads 2.5%%, what the trainer's length-sorted batches pad on the demo corpus")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (CUDA, or a CPU with AVX512-BF16/AMX)")
    parser.add_argument("--compile", action="store_true", help="torch.compile each model (compile time apart)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="torch.profiler table over N more steps")
    parser.add_argument("--models", default="seqx,torch.nn.Transformer",
                        help="comma-separated models timed interleaved, each with optional options "
                             "(seqx:bf16, seqx:compile, seqx:autotune, seqx:nodrop, seqx:unfused, seqx:cl, seqx:conv1d, "
                             "seqx:bf16:nodrop...)")
    parser.add_argument("--rows", type=int, default=25, help="rows of the --profile table")
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="accelerator peak for MFU (H100 bf16 dense)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    recipe = load_recipe(args.recipe, args.set).for_device(device.type)
    m = recipe.model
    settings = m.model_copy(update={k: v for k, v in {
        "d_model": args.d_model, "enc_layers": args.enc_layers, "dec_layers": args.dec_layers,
        "heads": args.heads, "d_ff": args.d_ff, "frontend": args.frontend}.items() if v is not None})

    class _Ids:  # the command recipe's tokenizer layout, without training one
        vocab_size, pad_id, bos_id, eos_id, blank_id = tokenizer_vocab_size(recipe), 0, 2, 3, 4

    dims = ModelDimensions.from_settings(settings, recipe.features.n_feats, _Ids())
    torch.manual_seed(0)
    ours = Seq2SeqTransformer(dims).to(device).train()
    theirs = TorchTransformer(dims, copy.deepcopy(ours.encoder.frontend)).to(device).train()
    batch = make_batch(args, dims, device)
    frames = float(ours.encoder.frontend.output_lengths(batch[1]).sum())
    flops = model_flops(ours, dims, batch[1], batch[4])

    # a variant is a model name with options: seqx:bf16:compile is our model (its own copy) under both
    models, steps = {}, {}
    for name in args.models.split(","):
        base, *options = name.split(":")
        if base not in ("seqx", "torch.nn.Transformer"):
            parser.error(f"--models: unknown model {base!r}")
        model = ours if base == "seqx" else theirs
        models[name] = copy.deepcopy(model) if name != base else model
        steps[name] = make_step(models[name], batch, dims, args, device, frozenset(options))
    times: dict[str, list[float]] = {name: [] for name in models}
    peak: dict[str, float] = {}
    warmup_s: dict[str, float] = {}
    for name, step in steps.items():  # warm up (kernels, allocator, compilation), then peak memory of one step each
        started = time.perf_counter()
        for _ in range(args.warmup):
            step()
        warmup_s[name] = time.perf_counter() - started
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            time_step(step, device)
            peak[name] = torch.cuda.max_memory_allocated(device) / 2**30
    for _ in range(args.steps):  # interleaved, so a busy machine slows both alike; median per model
        for name, step in steps.items():
            times[name].append(time_step(step, device))
    results = {}
    for name, model in models.items():
        seconds = statistics.median(times[name])
        model = getattr(model, "_orig_mod", model)
        row = {
            "params": sum(p.numel() for p in model.parameters()),
            "step_ms": 1000 * seconds,
            "utt_per_s": args.batch / seconds,
            "enc_frames_per_s": frames / seconds,
            "model_tflops_per_step": flops / 1e12,
            "warmup_s": warmup_s[name],  # includes torch.compile's compilation with --compile
        }
        if device.type == "cuda":
            row["peak_memory_gib"] = peak[name]
            row["mfu"] = flops / seconds / (args.peak_tflops * 1e12)
        results[name] = row
    report = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)",
        "torch": torch.__version__,
        "bf16": args.bf16,
        "compile": args.compile,
        "dims": {k: getattr(dims, k) for k in ("d_model", "heads", "enc_layers", "dec_layers", "d_ff", "frontend", "ctc")},
        "batch": args.batch, "frames": args.frames, "spread": args.spread, "tokens": args.tokens, "steps": args.steps,
        "results": results,
    }
    if "seqx" in results and "torch.nn.Transformer" in results:
        report["ratio_utt_per_s"] = results["seqx"]["utt_per_s"] / results["torch.nn.Transformer"]["utt_per_s"]
    if args.profile:
        report["profile"] = profile_table(steps[next(iter(steps))], args.profile, args.rows, device)
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{report['device']}, torch {report['torch']}, bf16={report['bf16']}, compile={args.compile}, "
          f"dims {report['dims']}")
    print(f"batch {args.batch} x <= {args.frames} frames, <= {args.tokens} tokens, {args.steps} timed steps")
    for name, row in results.items():
        extra = f"  peak {row['peak_memory_gib']:.2f} GiB  MFU {100 * row['mfu']:.1f}%" if "mfu" in row else ""
        print(f"{name:>24}: {row['params'] / 1e6:6.2f} M params  {row['step_ms']:8.1f} ms/step  "
              f"{row['utt_per_s']:8.1f} utt/s  {row['enc_frames_per_s']:10.0f} enc frames/s  "
              f"warm-up {row['warmup_s']:.1f} s{extra}")
    if "ratio_utt_per_s" in report:
        print(f"ours / baseline: {report['ratio_utt_per_s']:.2f}x")
    if args.profile:
        print(report["profile"])


if __name__ == "__main__":
    main()
