#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster, for slurm/train.sbatch's own part of the requeue: a job
# with a 1-minute limit gets USR1 from Slurm (--signal=B:USR1@45), the script forwards it to the step,
# the stand-in trainer (tests/e2e/stand_in_dptrain.sh) checkpoints and exits 75, the script requeues,
# and the requeued runs resume until every step is done exactly once. A second job is signalled while
# its trainer is still starting (no handlers yet): the script holds the signal until the trainer's
# --ready-file exists, so the trainer checkpoints instead of dying; that job's trainer takes USR2
# (--preempt-signal USR2) and the script gets TERM (`scancel --batch --signal=TERM`), which it turns
# into USR2 for the step (srun would answer TERM by killing the ranks). The real trainer's part is
# slurm_requeue_e2e.sh.
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
export DPTRAIN_BIN=$repo/tests/e2e/stand_in_dptrain.sh
steps=45

job=$(bash "$repo/slurm/submit.sh" --nodes 1 --gpus-per-node 1 --time=00:01:00 --signal=B:USR1@45 \
        --job-name=e2e-requeue --output="$work/requeue-%j.out" -- "$repo/slurm/train.sbatch" \
        --model lenet --data "$work" --steps "$steps" --run-dir "$work/run") || fail "submit.sh failed"
# The early signal: `scancel -b -s TERM` as soon as the step is launched, while the stand-in takes 8 s
# to start.
early=$(STAND_IN_START_SECONDS=8 bash "$repo/slurm/submit.sh" --nodes 1 --gpus-per-node 1 --time=00:10:00 \
          --job-name=e2e-early --output="$work/early-%j.out" -- "$repo/slurm/train.sbatch" \
          --model lenet --data "$work" --steps 20 --run-dir "$work/early" --preempt-signal USR2) ||
  fail "submit.sh failed (early)"
deadline=$((SECONDS + 120))
until grep -qs "dptrain-slurm: srun" "$work"/early-*.out; do
  (( SECONDS < deadline )) || { cat "$work"/early-*.out; fail "the early job never launched its step"; }
  sleep 0.2
done
scancel --batch --signal=TERM "$early" || fail "scancel --batch --signal=TERM $early"

state=$(wait_job "$job" 170)
cat "$work"/requeue-*.out
[[ $state == COMPLETED ]] || fail "job $job ended $state, not COMPLETED"
restarts=$(job_field "$job" Restarts)
(( restarts >= 1 )) || fail "the job was never requeued (Restarts=$restarts)"
grep -q "received USR1" "$work"/requeue-*.out || fail "the batch script never got USR1"
grep -q "stand-in: checkpoint at step [0-9]* after SIGUSR1" "$work"/requeue-*.out || fail "USR1 did not reach the job step"
grep -q "requeueing job $job" "$work"/requeue-*.out || fail "the batch script did not requeue"
grep -q "stand-in: finished at step $steps" "$work"/requeue-*.out || fail "the last run did not finish"
# Every step exactly once, in order, across the runs: each run resumed where the previous one stopped.
[[ $(tr '\n' ' ' < "$work/run/checkpoints/steps.log") == "$(seq -s ' ' 1 "$steps") " ]] ||
  fail "steps were lost or repeated across requeues: $(tr '\n' ' ' < "$work/run/checkpoints/steps.log")"

state=$(wait_job "$early" 120)
cat "$work"/early-*.out
[[ $state == COMPLETED ]] || fail "the early-signalled job $early ended $state, not COMPLETED"
grep -q "received TERM .*; asking the ranks to checkpoint and stop (USR2)" "$work"/early-*.out ||
  fail "the batch script did not take TERM as a request for USR2"
grep -q "is still starting; USR2 is passed on" "$work"/early-*.out || fail "the script did not hold the early signal"
grep -q "stand-in: checkpoint at step [0-9]* after SIGUSR2, exiting 75" "$work"/early-*.out ||
  fail "the held USR2 did not reach the stand-in once it was ready"
grep -q "stand-in: finished at step 20" "$work"/early-*.out || fail "the early-signalled job did not finish after its requeue"
echo "PASS ($restarts requeue(s); an early TERM was held, and passed on as USR2 once the trainer was ready)"
