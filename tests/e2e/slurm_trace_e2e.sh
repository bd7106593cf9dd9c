#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: `dptrain train --trace` in a 2-node job of 2 ranks a node
# (srun, TCP between the nodes) writes one valid trace per rank, each process named with its rank and
# its node, and a bucket's allreduce overlaps the backward pass on some step with --overlap on and on
# none with --overlap off (tests/e2e/trace_check.py checks every event of every file).
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
# shellcheck source=slurm/testcluster/testcluster.env
source "$DPTRAIN_PROFILE"

"$DPTRAIN_BIN" data synth "$work/synth" --classes 4 --per-class 40 --val-per-class 2 --size 28 > /dev/null 2>&1 ||
  fail "data synth"
"$DPTRAIN_BIN" data convert imagenet "$work/synth" "$work/data" --size 28 --shards 4 --val-shards 1 > /dev/null 2>&1 ||
  fail "data convert"
submit() {  # submit on|off: the same training, traced, with overlap on or off
  sbatch --parsable --partition="$DPTRAIN_PARTITION" --nodes=2 --ntasks-per-node=2 --time=00:10:00 \
    --job-name="e2e-trace-$1" --output="$work/trace-$1-%j.out" \
    --wrap="srun --mpi=$DPTRAIN_SRUN_MPI --kill-on-bad-exit=1 $DPTRAIN_BIN train --model lenet --data $work/data --steps 16 \
            --batch-size 8 --lr 0.05 --log-every 8 --threads 1 --bucket-mb 0.05 --overlap $1 \
            --trace $work/trace-$1 --trace-steps 5:14" || fail "sbatch (overlap $1) failed"
}
on=$(submit on)
off=$(submit off)
for mode in on off; do
  job=$on
  [[ $mode == off ]] && job=$off
  state=$(wait_job "$job" 150)
  cat "$work"/trace-"$mode"-*.out
  [[ $state == COMPLETED ]] || fail "job $job (overlap $mode) ended $state, not COMPLETED"
  [[ $(cd "$work/trace-$mode" && printf '%s ' *) == "trace-rank-0.json trace-rank-1.json trace-rank-2.json trace-rank-3.json " ]] ||
    fail "the files of --trace (overlap $mode): $(ls "$work/trace-$mode")"
  count=$(python3 "$(dirname "$0")/trace_check.py" "$work/trace-$mode" 4 5 14 "$mode" --nodes node1 node1 node2 node2) ||
    fail "the traces (overlap $mode)"
  echo "overlap $mode: an allreduce overlaps the backward pass on $count of 40 rank-steps"
done
echo "PASS"
