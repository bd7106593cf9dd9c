#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: the transport of its jobs. A 2-node, 4-rank training job
# (slurm/submit.sh and train.sbatch with the test profile, as the other tests submit them), looked at
# while it trains: every rank, on both nodes, has Open MPI's UCX point-to-point layer mapped
# (mca_pml_ucx.so) and not the TCP BTL (mca_btl_tcp.so), whose connection code crashes now and then
# at the start of a job (slurm/testcluster/testcluster.env).
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
# shellcheck source=tests/e2e/mpi_transport.sh
source "$(dirname "$0")/mpi_transport.sh"
data=${2:?usage: $0 DPTRAIN DATA}

# A time limit far off (train.sbatch checkpoints and requeues when USR1 says the limit is near); the
# test cancels the job once it has looked.
job=$(bash "$repo/slurm/submit.sh" --nodes 2 --gpus-per-node 2 --time=00:10:00 --signal=B:USR1@20 --job-name=e2e-transport \
        --output="$work/transport.out" -- "$repo/slurm/train.sbatch" \
        --model lenet --data "$data" --steps 100000 --batch-size 16 --run-dir "$work/run" --log-every 1) ||
  fail "submit.sh failed"
# At the end the job is cancelled, its requeue turned off first: train.sbatch answers scancel's TERM with
# a checkpoint and `scontrol requeue`, which Slurm grants even to a job being cancelled.
trap 'scontrol update JobId="$job" Requeue=0 2> /dev/null; scancel "$job" 2> /dev/null; wait_job "$job" 60 > /dev/null
      rm -rf "$work"' EXIT
echo "job $job"
for _ in $(seq 120); do
  grep -q "step 1/" "$work/transport.out" 2> /dev/null && break
  sleep 0.5
done
grep -q "step 1/" "$work/transport.out" 2> /dev/null ||
  { cat "$work/transport.out"; fail "job $job logged no step within 60 s ($(job_field "$job" JobState))"; }

for node in node1 node2; do
  mapfile -t ranks < <(job_ranks "$job" "SLURMD_NODENAME=$node")
  [[ ${#ranks[@]} -eq 2 ]] || fail "found ${#ranks[@]} ranks of job $job on $node (${ranks[*]}), expected 2"
  for pid in "${ranks[@]}"; do check_transport "rank on $node" "$pid" mca_pml_ucx; done
done
echo "PASS"
