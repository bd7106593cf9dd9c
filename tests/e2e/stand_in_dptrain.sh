#!/usr/bin/env bash
# A stand-in for `dptrain train` with the checkpoint interface (--checkpoint-dir, --resume auto, exit 75
# after its --preempt-signal, USR1 by default, or TERM; any other signal kills it), to test slurm/train.sbatch's signal forwarding and requeue against real Slurm time
# limits before the real checkpoints exist. One "step" per second; the checkpoint is the step number.
set -euo pipefail
[[ ${1:-} == train ]] || { echo "stand-in: only 'train'" >&2; exit 2; }
shift
if [[ ${1:-} == --help ]]; then echo "  --checkpoint-dir DIR  --checkpoint-every N  --resume auto|none|PATH  --ready-file PATH  --preempt-signal SIG"; exit 0; fi
steps=0 dir="" ready="" preempt=USR1
while [[ $# -gt 0 ]]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --checkpoint-dir) dir=$2; shift 2 ;;
    --ready-file) ready=$2; shift 2 ;;
    --preempt-signal) preempt=$2; shift 2 ;;
    *) shift ;;
  esac
done
[[ -n $dir && $steps -gt 0 ]] || { echo "stand-in: needs --steps and --checkpoint-dir" >&2; exit 2; }
step=0
[[ -f $dir/latest ]] && step=$(<"$dir/latest")
echo "stand-in: starting at step $step of $steps"
# STAND_IN_START_SECONDS: a start-up without signal handlers yet, like MPI_Init in the real trainer.
sleep "${STAND_IN_START_SECONDS:-0}"
stop=""
# shellcheck disable=SC2064  # the signal's name is fixed now
trap "stop=$preempt" "$preempt"
trap 'stop=TERM' TERM
[[ -z $ready ]] || echo ready > "$ready"  # the signals are caught from here on
while (( step < steps )); do
  sleep 1 & wait $! || true
  if [[ -n $stop ]]; then
    echo "$step" > "$dir/latest.tmp" && mv "$dir/latest.tmp" "$dir/latest"
    echo "stand-in: checkpoint at step $step after SIG$stop, exiting 75"
    exit 75
  fi
  step=$((step + 1))
  echo "$step" >> "$dir/steps.log"
done
echo "$step" > "$dir/latest"
echo "stand-in: finished at step $step"
