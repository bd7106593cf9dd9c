#!/usr/bin/env bash
# A stand-in for `dptrain train` with the checkpoint interface (--checkpoint-dir, --resume auto, exit 75
# after its --preempt-signal, USR1 by default, or TERM; any other signal kills it), to test slurm/train.sbatch's signal forwarding and requeue against real Slurm time
# limits before the real checkpoints exist. One "step" per second; the checkpoint is the step number.
set -euo pipefail
[[ ${1:-} == train ]] || { echo "stand-in: only 'train'" >&2; exit 2; }
shift
if [[ ${1:-} == --help ]]; then echo "  --checkpoint-dir DIR  --checkpoint-every N  --resume auto|none|PATH  --ready-file PATH  --preempt-signal SIG  --failure-report PATH"; exit 0; fi
steps=0 dir="" ready="" preempt=USR1 report=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --checkpoint-dir) dir=$2; shift 2 ;;
    --ready-file) ready=$2; shift 2 ;;
    --preempt-signal) preempt=$2; shift 2 ;;
    --failure-report) report=$2; shift 2 ;;
    *) shift ;;
  esac
done
[[ -n $dir && $steps -gt 0 ]] || { echo "stand-in: needs --steps and --checkpoint-dir" >&2; exit 2; }
step=0
[[ -f $dir/latest ]] && step=$(<"$dir/latest")
echo "stand-in: starting at step $step of $steps"
# STAND_IN_CRASH: how the rank numbered STAND_IN_CRASH_RANK (default 0, "any": every rank) fails at
# start-up, as a rank
# crashing inside MPI's connection set-up would: "once" dies of SIGSEGV in the job's first attempt
# only, "always" in every attempt, each leaving dptrain's crash record beside the --failure-report;
# "error" exits with 1, as dptrain does on an error it reports.
crash() {
  local rank=${SLURM_PROCID:-0}
  [[ -z $report ]] || echo "rank=$rank host=$(hostname) signal=SIGSEGV (segmentation fault)" > "$report.crashed.$rank"
  kill -SEGV $$
}
if [[ -n ${STAND_IN_CRASH:-} && ${STAND_IN_CRASH_RANK:-0} == @(any|"${SLURM_PROCID:-0}") ]]; then
  case $STAND_IN_CRASH in
    once) if [[ ! -e $dir/.stand-in-crashed ]]; then touch "$dir/.stand-in-crashed"; crash; fi ;;
    always) crash ;;
    error) echo "stand-in: error: a failure dptrain would report itself" >&2; exit 1 ;;
  esac
fi
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
    [[ ${SLURM_PROCID:-0} != 0 ]] || { echo "$step" > "$dir/latest.tmp" && mv "$dir/latest.tmp" "$dir/latest"; }
    echo "stand-in: checkpoint at step $step after SIG$stop, exiting 75"
    exit 75
  fi
  step=$((step + 1))
  [[ ${SLURM_PROCID:-0} != 0 ]] || echo "$step" >> "$dir/steps.log"  # the ranks share the directory
done
[[ ${SLURM_PROCID:-0} != 0 ]] || echo "$step" > "$dir/latest"
echo "stand-in: finished at step $step"
