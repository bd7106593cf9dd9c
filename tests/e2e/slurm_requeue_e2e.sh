#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: a training job gets USR1 mid-training, as Slurm sends it
# before the time limit (`scancel --batch --signal=USR1`, right after its first checkpoint, so the point
# of interruption does not depend on when Slurm's 30-second timer fires: that path is tested with the
# stand-in trainer in slurm_requeue_script_e2e.sh); the script asks the ranks with their preemption
# signal, USR2 here (--preempt-signal USR2, the choice where NCCL takes USR1), and they write a
# checkpoint and exit 75; the script requeues the job, which resumes (--resume auto) and finishes with
# the same final parameters as an uninterrupted run.
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
data=${2:?usage: $0 DPTRAIN DATA}
steps=${DPTRAIN_REQUEUE_STEPS:-600}

[[ $("$dptrain" train --help) == *--checkpoint-dir* ]] || fail "this dptrain has no --checkpoint-dir (checkpoints not merged yet)"

submit() {  # submit NAME [OPTIONS...]: the same training
  local name=$1
  shift
  bash "$repo/slurm/submit.sh" --nodes 1 --gpus-per-node 2 --time=00:10:00 --signal=B:USR1@30 --job-name="$name" \
    --output="$work/$name-%j.out" -- "$repo/slurm/train.sbatch" --model lenet --data "$data" --steps "$steps" \
    --batch-size 16 --lr 0.1 --log-every 100 --checkpoint-every 50 --run-dir "$work/$name" "$@"
}
# The uninterrupted reference and the interrupted run, side by side; the preemption signal does not
# change what is trained.
reference=$(submit reference) || fail "submitting the reference run"
interrupted=$(submit interrupted --preempt-signal USR2) || fail "submitting the interrupted run"
first=$work/interrupted/checkpoints/$(printf 'ckpt-%09d.h5' 50)
wait_file "$first" 200 "$work/interrupted-*.out"
scancel --batch --signal=USR1 "$interrupted" || fail "scancel --batch --signal=USR1 $interrupted"
ref_state=$(wait_job "$reference" 280)
int_state=$(wait_job "$interrupted" 280)
cat "$work"/interrupted-*.out
[[ $ref_state == COMPLETED ]] || { cat "$work"/reference-*.out; fail "the reference run ended $ref_state"; }
[[ $int_state == COMPLETED ]] || fail "the interrupted run ended $int_state"
restarts=$(job_field "$interrupted" Restarts)
(( restarts >= 1 )) || fail "the interrupted run was never requeued (Restarts=$restarts): USR1 did not interrupt it"
grep -q "received USR1 .*(USR2)" "$work"/interrupted-*.out || fail "the batch script never got USR1 to pass on as USR2"
grep -q "dptrain train .*--preempt-signal USR2" "$work"/interrupted-*.out || fail "dptrain train was not given --preempt-signal USR2"
grep -q "requeueing job $interrupted" "$work"/interrupted-*.out || fail "the batch script did not requeue"

final() {  # the newest checkpoint of a run
  local dir=$work/$1/checkpoints latest
  latest=$(readlink "$dir/latest" 2>/dev/null || cat "$dir/latest" 2>/dev/null)
  [[ -n $latest ]] || latest=$(find "$dir" -name 'ckpt-*.h5' | sort -V | tail -n 1)
  [[ $latest == /* ]] || latest=$dir/$latest
  echo "$latest"
}
ref_ckpt=$(final reference)
int_ckpt=$(final interrupted)
[[ -f $ref_ckpt && -f $int_ckpt ]] || fail "missing final checkpoints ($ref_ckpt, $int_ckpt)"
expected=$(printf 'ckpt-%09d.h5' "$steps")  # names sort like steps
[[ $(basename "$ref_ckpt") == "$expected" && $(basename "$int_ckpt") == "$expected" ]] ||
  fail "the final checkpoints are not of step $steps: $ref_ckpt $int_ckpt"
# Same parameters: resuming continues the same computation (same ranks, same summation order).
h5diff -r "$ref_ckpt" "$int_ckpt" /params /params > "$work/h5diff.log" 2>&1 ||
  { head -n 40 "$work/h5diff.log"; fail "the resumed run's final parameters differ from the uninterrupted run's"; }
echo "PASS"
