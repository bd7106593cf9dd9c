#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: slurm/train.sbatch, submitted with slurm/submit.sh as a
# 2-node, 4-rank job (2 ranks per node), trains lenet on Fashion-MNIST and completes; the summary says
# 4 ranks. Needs the distributed `dptrain train` (MPI ranks).
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
data=${2:?usage: $0 DPTRAIN DATA}

# --lr 0.05 (0.0125 for the global batch of 64): at 0.1 lenet's weights became NaN by step 20 while the
# loss settled at ln 10 (a dead net), and the final checkpoint is now refused for it.
job=$(bash "$repo/slurm/submit.sh" --nodes 2 --gpus-per-node 2 --time=00:03:00 --signal=B:USR1@20 --job-name=e2e-train \
        --output="$work/train-%j.out" -- "$repo/slurm/train.sbatch" \
        --model lenet --data "$data" --steps 40 --batch-size 16 --run-dir "$work/run" --lr 0.05 --log-every 10) ||
  fail "submit.sh failed"
echo "job $job"
# Up to the job's time limit and a little more: on a loaded CI machine 4 ranks on 2 cores are slow.
state=$(wait_job "$job" 200)
cat "$work"/train-*.out
[[ $state == COMPLETED ]] || fail "job $job ended $state, not COMPLETED"
[[ $(job_field "$job" ExitCode) == 0:0 ]] || fail "job $job exit code $(job_field "$job" ExitCode)"
grep -q "on 2 node(s) node\[1-2\], 4 ranks" "$work"/train-*.out || fail "the job did not run 4 ranks on 2 nodes"
grep -q "dptrain train .*--backend cpu" "$work"/train-*.out || fail "the profile's DPTRAIN_BACKEND did not reach dptrain train"
metrics=$work/run/metrics-r0.jsonl
[[ $(grep -c '"type": "summary"' "$metrics") -eq 1 ]] || fail "expected one summary line (from rank 0) in $metrics"
grep '"type": "summary"' "$metrics" | grep -q '"world_size": 4' ||
  fail "the summary does not say world_size 4: $(grep summary "$metrics")"
echo "PASS"
