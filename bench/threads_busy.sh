#!/bin/bash
# Training speed beside a busy program (docs/benchmarks.md "Threads that give way", issue #17).
#
# Usage: bench/threads_busy.sh EXP_DIR [CONDITION ...]
#   EXP_DIR: an experiment folder whose commands/ holds the demo's data, feats and tokenizer
#            (seqx data + seqx featurize recipes/commands.yaml --set exp_dir=EXP_DIR)
#   CONDITION: default (seqx as it is), passive (OMP_WAIT_POLICY=PASSIVE), 1thread (OMP_NUM_THREADS=1),
#              spin20k / spin2k (GOMP_SPINCOUNT); default: default passive 1thread
#   BUSY="0 1" (the default): each condition alone, then beside one busy shell loop.
# Prints, per run, the command's wall time and the second epoch's utterances/s. Two epochs of
# `seqx train` with the rejection thresholds fixed, so that the run is the training.
set -u
exp=${1:?usage: bench/threads_busy.sh EXP_DIR [CONDITION ...]}; shift
conditions=${*:-default passive 1thread}
cd "$(dirname "$0")/.."
log=$(mktemp)
run() {  # label, then VAR=VALUE for env
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" .venv/bin/seqx train recipes/commands.yaml --set exp_dir="$exp" --set train.epochs=2 \
    --set decode.reject_margin=1.0 --set decode.reject_distance=0.3 --restart > "$log" 2>&1
  t1=$(date +%s.%N)
  local rate
  rate=$(grep -a -o "train epoch 2: [0-9]*/[0-9]*[^u]*utt_s=[0-9.]*" "$log" | tail -1 | grep -o "utt_s=[0-9.]*")
  echo "$label: wall $(echo "$t1 - $t0" | bc) s, epoch 2 $rate; $(grep -a -o 'CPU threads *│ *[^│]*' "$log" | tr -s ' ')"
}
for busy in ${BUSY:-0 1}; do
  spinner=""
  if [ "$busy" = 1 ]; then sh -c 'while :; do :; done' & spinner=$!; sleep 1; fi
  for c in $conditions; do
    case $c in
      default) run "busy=$busy default" SEQX_BENCH=1;;
      passive) run "busy=$busy passive" OMP_WAIT_POLICY=PASSIVE;;
      1thread) run "busy=$busy 1thread" OMP_NUM_THREADS=1;;
      spin20k) run "busy=$busy spin20k" GOMP_SPINCOUNT=20000;;
      spin2k) run "busy=$busy spin2k" GOMP_SPINCOUNT=2000;;
      *) echo "unknown condition $c"; exit 2;;
    esac
  done
  if [ -n "$spinner" ]; then kill "$spinner"; fi
done
rm -f "$log"
