#!/usr/bin/env bash
# The transport of the tests' mpiexec jobs: a 2-rank `dptrain train` started as every mpiexec test starts
# its ranks (DPTRAIN_TEST_MPIEXEC, tests/CMakeLists.txt), looked at while it trains. Each rank has Open
# MPI's ob1 and shared-memory BTL mapped (mca_pml_ob1.so, mca_btl_vader.so) and not the TCP BTL
# (mca_btl_tcp.so), whose connection code crashes now and then at the start of a job.
set -uo pipefail
dptrain=$1
mpiexec=$2
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"
# shellcheck source=tests/e2e/mpi_transport.sh
source "$(dirname "$0")/mpi_transport.sh"
background=""
trap '[[ -z $background ]] || kill "$background" 2> /dev/null; wait; [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT
synth_data 8

# The job's ranks carry this marker in their environment (mpiexec passes its own on to the ranks it starts).
# mpiexec itself in the background (not run_mpi, a function: a subshell), so that killing it ends the job.
export DPTRAIN_TRANSPORT_TEST=$work
"$mpiexec" --oversubscribe --allow-run-as-root -n 2 "$dptrain" train --model lenet --data "$work/data" --steps 100000 --batch-size 8 --threads 1 \
  --log-every 1 > "$work/train.log" 2>&1 &
background=$!
wait_for_line "$work/train.log" "step 1/" "$background" 30 "the job"

ranks=()
for file in /proc/[0-9]*/environ; do
  pid=${file#/proc/}
  pid=${pid%/environ}
  [[ $(readlink -f "/proc/$pid/exe" 2> /dev/null) == "$(readlink -f "$dptrain")" ]] || continue
  grep -qzx "DPTRAIN_TRANSPORT_TEST=$work" "$file" 2> /dev/null && ranks+=("$pid")
done
[[ ${#ranks[@]} -eq 2 ]] || fail "found ${#ranks[@]} ranks of the job (${ranks[*]}), expected 2"
for pid in "${ranks[@]}"; do
  check_transport "rank of $(basename "$mpiexec") -n 2" "$pid" mca_pml_ob1 mca_btl_vader
done
echo "PASS"
