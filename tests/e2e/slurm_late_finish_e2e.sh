#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: a job of 8 ranks on 2 nodes (UCX between them, as
# testcluster.env sets it) whose rank 0 finishes seconds after the others (tests/mpi/late_finish_test.cpp).
# The ranks that finish first must not close their connections while rank 0's stall watch still sends
# them heartbeats: the job ends with exit 0, every rank's "done" line, no failed send and no warning of
# the stall watch. (Open MPI 4.1 may still print "ucp_disconnect_nb ... failed: Endpoint timeout" from
# inside MPI_Finalize, after every rank's last message: two ranks closing their connection to each other
# at once. It is harmless, and not ours.)
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
program=${2:?usage: $0 DPTRAIN LATE_FINISH_TEST}
# shellcheck source=slurm/testcluster/testcluster.env
source "$DPTRAIN_PROFILE"

for attempt in 1 2 3; do
  output=$(srun --mpi="$DPTRAIN_SRUN_MPI" --partition="$DPTRAIN_PARTITION" --nodes=2 --ntasks-per-node=4 \
             --cpus-per-task=1 --time=00:02:00 --job-name=e2e-late-finish "$program" 2>&1)
  status=$?
  echo "$output"
  [[ $status -eq 0 ]] || fail "attempt $attempt: srun exited $status"
  done_lines=$(grep -c "^late finish: rank [0-7] done$" <<< "$output")
  [[ $done_lines -eq 8 ]] || fail "attempt $attempt: $done_lines of 8 ranks said done"
  ! grep -qE "send failed|stall watch|terminate called|dptrain: " <<< "$output" ||
    fail "attempt $attempt: a failed send or a warning of the stall watch (above)"
done
echo "PASS"
