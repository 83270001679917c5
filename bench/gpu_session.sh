#!/bin/bash
# Issue #17's GPU checks in one call of a lent GPU (a session has 15 minutes of device time, the
# machine's start included, so everything runs in one prepared command):
#   1. MFU of the base size (d_model 512, 8 heads, 12/6 layers, d_ff 2048), bf16 autocast, compiled,
#      without dropout, on the recipe's front-end (96-d speech embedding every 80 ms, linear), batch
#      2048 of length-sorted lengths (spread 0.05): training's three Q/K/V products against one
#      (`qkv1`), then the attention kernel (SDPA's pick, written-out `math`, memory-efficient `eff`);
#   2. the full recipe (the GPU profile: 256-d, 6/3 layers, 36 epochs, SpecAugment) trained from
#      the stores of a corpus made here (bench/gpu5k.yaml: the default mix at 5,000 commands, one
#      view, clipped_share 0.1) with its clipped and tight copies and without them
#      (bench/train_from_stores.py --without-copies). The bundles come back (weights as float16 by
#      bench/halve_bundle.py, which records their new checksum, to fit what a call returns) and are
#      scored here, where the audio is (docs/benchmarks.md has the commands).
# PARTS=compile trains gpu5k-clip's model again with train.compile (its wall time against gpu5k-clip's;
#   2026-11-27 on an H200 it had not reached step 50 in 320 s, recompiling, against 165 s for the eager run).
# The `autotune` MFU variant (max-autotune-no-cudagraphs) needs more than 230 s of warm-up: give it MFU_S=500 alone.
# MFU_MODELS=a,b (bench/train_throughput.py's --models) runs those variants as the MFU part instead.
# PARTS=mfu or PARTS=train runs one half (on an H200 the MFU part took 200 s and the training 350 s, the machine's
# start apart, so one call rarely fits both); TRAIN_S and MFU_S set each part's limit in seconds.
# Carry `.gpu` (ignored by git; at most 64 MiB a call with the repository):
#   .gpu/whl: wheels of what the device image (Python 3.12, torch 2.11) lacks, made here with
#     pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
#       -d .gpu/whl pydantic pydantic_core annotated-types typing-inspection soundfile cffi pycparser \
#       soxr jiwer rapidfuzz      (the versions of .venv: pip list)
#     openwakeword's wheel (17 MB of graphs) stays here: training from stores runs no graph, and the
#     bundle only records the version that made the features, so its metadata alone is written there.
#   .gpu/exp/gpu5k: bench/gpu5k.yaml's corpus without audio (about 45 MB), made here with
#     seqx featurize bench/gpu5k.yaml --set exp_dir=/tmp/g5/exp && seqx tokenize bench/gpu5k.yaml --set exp_dir=/tmp/g5/exp
#     then copied: data/{*.jsonl,.stamp.json,heldout_commands.txt}, feats/{train,valid,cmvn.json,.stamp.json,
#     summary.json} and tokenizer/ of /tmp/g5/exp/gpu5k.
# Locally, as a dry run on the CPU with tiny sizes: DEV=cpu SMALL=1 OUT=/tmp/gpuout bench/gpu_session.sh
set -u
OUT=${OUT:-/tmp/gpu_session_out}
DEV=${DEV:-cuda}
LOGS=/tmp/gpu_session_logs  # every part's output; packed into $OUT/logs.tgz after each part
mkdir -p "$OUT" $LOGS
if [ "$DEV" = cuda ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl \
        || exit 1
    mkdir -p /tmp/site/openwakeword-0.5.1.dist-info
    printf 'Metadata-Version: 2.1\nName: openwakeword\nVersion: 0.5.1\n' >/tmp/site/openwakeword-0.5.1.dist-info/METADATA
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
    BIG="--batch 16 --frames 30 --tokens 12 --spread 0.05"; EPOCHS="--set train.epochs=1"
    BENCH="$PY bench/train_throughput.py --device $DEV --json --steps 2 --warmup 1"
    KERNELS=seqx:nodrop:compile:math
else
    BASE="--d-model 512 --heads 8 --enc-layers 12 --dec-layers 6 --d-ff 2048"
    BIG="--batch 2048 --frames 60 --tokens 24 --spread 0.05"; EPOCHS=""
    KERNELS=seqx:nodrop:compile:math,seqx:nodrop:compile:eff
fi
DEADLINE=$((SECONDS + ${BUDGET_S:-585}))  # the whole command; each part gets what is left of it
step() {  # name, limit in seconds, command...: one part; a failure or a hang does not stop the others
    local name=$1 limit=$2; shift 2
    local left=$((DEADLINE - SECONDS - 10))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -lt 20 ]; then echo "== $name skipped: out of time"; return; fi
    echo "== $name ($(date +%T), at most ${limit} s)"
    timeout "$limit" "$@" >"$LOGS/$name.json" 2>"$LOGS/$name.err" || echo "!! $name failed: $(tail -3 "$LOGS/$name.err")"
    tar -C $LOGS -czf "$OUT/logs.tgz" .  # what has run so far comes back even if a later part is cut off
}
train() {  # exp name, extra arguments: the full recipe from the carried stores; its bundle comes back
    local name=$1; shift
    mkdir -p .gpu/exp/$name && cp -a .gpu/exp/gpu5k/{data,feats,tokenizer} .gpu/exp/$name/
    step "train_$name" "${TRAIN_S:-200}" $PY bench/train_from_stores.py bench/gpu5k.yaml --device $DEV --set exp_dir=.gpu/exp \
        --set name=$name --set train.workers=4 $EPOCHS --json "$@"
    # the epochs' log comes back even when the part ran out of time, to say how far it got
    cp .gpu/exp/$name/train_log.jsonl "$LOGS/train_log_$name.jsonl" 2>/dev/null && tar -C $LOGS -czf "$OUT/logs.tgz" .
    if [ -f .gpu/exp/$name/model/model.safetensors ]; then
        $PY bench/halve_bundle.py .gpu/exp/$name/model
        tar -C .gpu/exp/$name -cf /tmp/bundle_$name.tar model
        split -n 2 /tmp/bundle_$name.tar "$OUT/bundle_$name.tar."
        tar -C $LOGS -czf "$OUT/logs.tgz" .
    fi
}
PARTS=${PARTS:-mfu,train}  # which parts this call runs (a session's device time rarely fits all)
if [ -n "${MFU_MODELS:-}" ] && [[ $PARTS == *mfu* ]]; then  # one MFU step of the given variants instead
    step mfu_models "${MFU_S:-140}" $BENCH $BASE $BIG --models "$MFU_MODELS"
elif [[ $PARTS == *mfu* ]]; then
    step mfu_qkv "${MFU_S:-140}" $BENCH $BASE $BIG --models seqx:nodrop:compile,seqx:nodrop:compile:qkv1
    step mfu_kernels "${MFU_S:-140}" $BENCH $BASE $BIG --models $KERNELS
fi
if [[ $PARTS == *train* ]]; then
    train gpu5k-clip
    train gpu5k-noclip --without-copies
fi
if [[ $PARTS == *compile* ]]; then  # the full recipe's training with train.compile, against train_gpu5k-clip
    train gpu5k-compiled --set train.compile=true
fi
$PY - "$LOGS" <<'EOF'
import json, sys
from pathlib import Path
print(f"{'run':<12} {'model':<26} {'ms/step':>8} {'utt/s':>9} {'MFU':>6} {'peak GiB':>8} {'warm-up s':>9}")
for name in ("mfu_qkv", "mfu_kernels", "mfu_models"):
    path = Path(sys.argv[1]) / f"{name}.json"
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        print(f"{name:<12} (no result)")
        continue
    for model, row in report["results"].items():
        mfu = f"{100 * row['mfu']:.1f}%" if "mfu" in row else "-"
        print(f"{name:<12} {model:<26} {row['step_ms']:8.1f} {row['utt_per_s']:9.0f} {mfu:>6} "
              f"{row.get('peak_memory_gib', 0):8.1f} {row['warmup_s']:9.1f}")
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
