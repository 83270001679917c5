#!/bin/bash
# Issue #17's GPU checks in one call of a lent GPU (a session has 15 minutes of device time, the
# machine's start included, so everything runs in one prepared command):
#   1. MFU of the base size (d_model 512, 8 heads, 12/6 layers, d_ff 2048), bf16 autocast, on the
#      recipe's front-end (96-d speech embedding every 80 ms, linear) and on log-Mel + conv2d
#      (the front-end of the 13.5% row in docs/benchmarks.md), eager, without dropout,
#      channels-last, torch.compile, and one profile of the step's GPU kernels;
#   2. the full recipe (the GPU profile: 256-d, 6/3 layers, 36 epochs, SpecAugment) trained from the
#      demo corpus's stored features (bench/train_from_stores.py); the bundle comes back in parts
#      and is scored here, where the audio is (rejection thresholds on valid, then `seqx evaluate`).
# Carry `.gpu` (ignored by git, about 49 MB of the 64 MiB a call takes):
#   .gpu/whl: wheels of what the device image (Python 3.12, torch 2.11) lacks, made here with
#     pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
#       -d .gpu/whl pydantic pydantic_core annotated-types typing-inspection soundfile cffi pycparser \
#       soxr jiwer rapidfuzz openwakeword==0.5.1      (the versions of .venv: pip list)
#   .gpu/exp/commands: a corpus's data/*.jsonl, data/.stamp.json, feats/ (one view: 4 views of the demo
#     corpus are 87 MB) and tokenizer/, without audio; e.g. from the last `make demo`'s exp/commands.
# Locally, as a dry run on the CPU with tiny sizes: DEV=cpu SMALL=1 OUT=/tmp/gpuout bench/gpu_session.sh
set -u
OUT=${OUT:-/tmp/gpu_session_out}
DEV=${DEV:-cuda}
LOGS=/tmp/gpu_session_logs  # every part's output; packed into $OUT/logs.tgz after each part
mkdir -p "$OUT" $LOGS
if [ "$DEV" = cuda ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl \
        || exit 1
    export PYTHONPATH=/tmp/site:$PWD
    PY=python3
    nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv | tee $LOGS/gpu.txt
    BF16=--bf16
else
    PY=${PY:-.venv/bin/python}
    BF16=
fi
export PYTHONUNBUFFERED=1
BENCH="$PY bench/train_throughput.py --device $DEV $BF16 --json --steps 10 --warmup 3"
if [ "${SMALL:-0}" = 1 ]; then  # dry run: the same commands, sizes a CPU finishes in seconds
    BASE="--d-model 64 --heads 2 --enc-layers 2 --dec-layers 1 --d-ff 128"
    LIN="--batch 8 --frames 30 --tokens 12"; BIG="--batch 16 --frames 30 --tokens 12"
    CONV="--batch 4 --frames 200 --tokens 20"; EPOCHS="--set train.epochs=1"
    BENCH="$PY bench/train_throughput.py --device $DEV --json --steps 2 --warmup 1"
else
    BASE="--d-model 512 --heads 8 --enc-layers 12 --dec-layers 6 --d-ff 2048"
    LIN="--batch 1024 --frames 60 --tokens 24"; BIG="--batch 2048 --frames 60 --tokens 24"
    CONV="--batch 256 --frames 1500 --tokens 60"; EPOCHS=""
fi
DEADLINE=$((SECONDS + ${BUDGET_S:-540}))  # the whole command; each part gets what is left of it
step() {  # name, limit in seconds, command...: one part; a failure or a hang does not stop the others
    local name=$1 limit=$2; shift 2
    local left=$((DEADLINE - SECONDS - 10))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -lt 20 ]; then echo "== $name skipped: out of time"; return; fi
    echo "== $name ($(date +%T), at most ${limit} s)"
    timeout "$limit" "$@" >"$LOGS/$name.json" 2>"$LOGS/$name.err" || echo "!! $name failed: $(tail -3 "$LOGS/$name.err")"
    tar -C $LOGS -czf "$OUT/logs.tgz" .  # what has run so far comes back even if a later part is cut off
}
train() {  # exp name, seed: the full recipe from the carried stores; its bundle comes back in two parts
    local name=$1 seed=$2
    [ "$name" != commands ] && mkdir -p .gpu/exp/$name && cp -a .gpu/exp/commands/{data,feats,tokenizer} .gpu/exp/$name/
    step "train_$name" 240 $PY bench/train_from_stores.py recipes/commands.yaml --device $DEV --set exp_dir=.gpu/exp \
        --set name=$name --set data.size=3000 --set features.embed_views=1 --set train.workers=4 \
        --set train.seed=$seed $EPOCHS --json
    if [ -f .gpu/exp/$name/model/model.safetensors ]; then
        cp .gpu/exp/$name/train_log.jsonl "$LOGS/train_log_$name.jsonl"
        tar -C .gpu/exp/$name -cf /tmp/bundle_$name.tar model  # 31 MB: 2 files of < 16 MB come back
        split -n 2 /tmp/bundle_$name.tar "$OUT/bundle_$name.tar."
        tar -C $LOGS -czf "$OUT/logs.tgz" .
    fi
}
step mfu_linear 150 $BENCH $BASE $LIN --models seqx,seqx:nodrop
train commands 0
step mfu_conv2d 150 $BENCH $BASE $CONV --set features.kind=fbank --frontend conv2d --models seqx,seqx:cl
train commands-s1 1
step mfu_compile 200 $BENCH $BASE $LIN --models seqx:nodrop:compile
step mfu_linear_big 120 $BENCH $BASE $BIG --models seqx,seqx:nodrop
step profile 90 $BENCH $BASE $LIN --models seqx:nodrop --steps 3 --profile 3 --rows 30
$PY - "$LOGS" <<'EOF'
import json, sys
from pathlib import Path
print(f"{'run':<16} {'model':<22} {'ms/step':>8} {'utt/s':>9} {'MFU':>6} {'peak GiB':>8} {'warm-up s':>9}")
for name in ("mfu_linear", "mfu_linear_big", "mfu_conv2d", "mfu_compile", "profile"):
    path = Path(sys.argv[1]) / f"{name}.json"
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        print(f"{name:<16} (no result)")
        continue
    for model, row in report["results"].items():
        mfu = f"{100 * row['mfu']:.1f}%" if "mfu" in row else "-"
        print(f"{name:<16} {model:<22} {row['step_ms']:8.1f} {row['utt_per_s']:9.0f} {mfu:>6} "
              f"{row.get('peak_memory_gib', 0):8.1f} {row['warmup_s']:9.1f}")
    if "profile" in report:
        print(report["profile"])
for train in sorted(Path(sys.argv[1]).glob("train_*.json")):
    try:
        report = json.loads(train.read_text())
    except ValueError:
        print(f"{train.stem}: (no result)")
        continue
    print(f"{train.stem}: {report['parameters'] / 1e6:.2f} M params, {report['epochs']} epochs, {report['steps']} steps "
          f"in {report['wall_seconds']:.0f} s; best greedy valid WER {report['best_valid_wer']} (epoch "
          f"{report['best_epoch']}), bundle {report['bundle_valid_wer']}")
EOF
