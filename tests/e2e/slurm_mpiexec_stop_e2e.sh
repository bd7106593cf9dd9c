#!/usr/bin/env bash
# slurm/train.sbatch with DPTRAIN_SRUN_MPI=none (the ranks started by Open MPI's mpiexec inside the
# allocation), without a cluster: stub scontrol and srun, the real mpiexec (all ranks on this machine),
# the real dptrain on 2 ranks. A stop under mpiexec reaches the script as the ranks' 75 and the job
# requeues:
#  1. the ranks stop on their own (--stop-at-step): mpiexec returns 75, and the job's log has none of
#     Open MPI's "the job has been aborted" boxes;
#  2. TERM to every process of the job, as Slurm sends it when it cancels or preempts a job: mpiexec
#     returns 1, the ranks wrote a checkpoint, and the script takes it as 75;
#  3. a rank's error (exit 105) still fails the job, with Open MPI's box about it in the log.
# Usage: slurm_mpiexec_stop_e2e.sh DPTRAIN MPIEXEC
set -uo pipefail
dptrain=$1
mpiexec=$2
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"
# shellcheck source=tests/e2e/slurm_stubs.sh
source "$(dirname "$0")/slurm_stubs.sh"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
job_pid=""
cleanup() {
  [[ -z $job_pid ]] || kill "$job_pid" 2> /dev/null
  [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
# Nothing of the caller's Slurm job or dptrain settings may reach the script.
while read -r name; do unset "$name"; done < <(compgen -v | grep -E '^(SLURM_|DPTRAIN_)')
synth_data 64

# --- stubs: scontrol, srun (the node probe), sleep 60 (after the requeue), and mpiexec -----------------
mkdir -p "$work/bin"
real_sleep=$(command -v sleep)
mpiexec=$(command -v "$mpiexec") || fail "no mpiexec '$2'"  # a path: the stub below execs it
write_scontrol_stub "$work/bin"
printf '#!/usr/bin/env bash\nexit 0\n' > "$work/bin/srun"
# The script waits 60 s after `scontrol requeue` for Slurm to end it; here it goes on at once.
cat > "$work/bin/sleep" <<'EOF'
#!/usr/bin/env bash
[[ $* == 60 ]] && exit 0
exec "$REAL_SLEEP" "$@"
EOF
# The real mpiexec (the tests' shared-memory one), outside the pretended allocation: without the job's
# SLURM_ variables, which would send Open MPI to Slurm for its nodes. It execs, so the script signals
# mpiexec itself.
cat > "$work/bin/mpiexec" <<'EOF'
#!/usr/bin/env bash
while read -r v; do unset "$v"; done < <(compgen -e | grep "^SLURM_")
exec "$REAL_MPIEXEC" --oversubscribe --allow-run-as-root "$@"
EOF
export REAL_SLEEP=$real_sleep REAL_MPIEXEC=$mpiexec
chmod +x "$work"/bin/*
cat > "$work/profile.env" <<'EOF'
: "${DPTRAIN_PARTITION:=test}"
: "${DPTRAIN_GPUS_PER_NODE:=0}"
: "${DPTRAIN_CPUS_PER_TASK:=1}"
: "${DPTRAIN_BACKEND:=cpu}"
: "${DPTRAIN_SRUN_MPI:=none}"
EOF
export PATH=$work/bin:$PATH STUB_SLURM_DIR=$repo/slurm

# start_job NAME ARGS...: train.sbatch as Slurm would start it, a 2-rank job on node1, in the
# background ($job_pid); its output in $work/NAME/out and err, its run directory $work/NAME/run.
start_job() {
  local name=$1
  shift
  case_dir=$work/$name
  mkdir -p "$case_dir/log"
  export STUB_LOG=$case_dir/log
  (cd "$case_dir" && exec env SLURM_JOB_ID=77 SLURM_JOB_NAME="$name" SLURM_SUBMIT_DIR="$case_dir" \
     SLURM_NTASKS=2 SLURM_NTASKS_PER_NODE=2 SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=node1 \
     SLURM_JOB_PARTITION=test DPTRAIN_SLURM_DIR="$repo/slurm" DPTRAIN_BIN="$dptrain" \
     DPTRAIN_PROFILE="$work/profile.env" DPTRAIN_PREFLIGHT=off \
     bash "$repo/slurm/train.sbatch" --model lenet --data "$work/data" --batch-size 16 --run-dir "$case_dir/run" \
       "$@" > "$case_dir/out" 2> "$case_dir/err") &
  job_pid=$!
}
# end_job: waits for the job; its exit code into $status.
end_job() {
  status=0
  wait "$job_pid" || status=$?
  job_pid=""
}
show() { sed 's/^/    /' "$case_dir/out" "$case_dir/err" | tail -n 30; }
requeued() { [[ -s $case_dir/log/scontrol.requeue ]]; }
banner() { grep -l -e "Per user-direction" -e "exited with non-zero status" "$case_dir/out" "$case_dir/err"; }
descendants() {  # the processes below PID, deepest first
  local child
  for child in $(pgrep -P "$1"); do descendants "$child"; echo "$child"; done
}

# 1. --stop-at-step: mpiexec returns the ranks' 75; no abort boxes.
start_job stop-at-step --steps 200 --checkpoint-every 0 --stop-at-step 3
end_job
if [[ $status -ne 0 ]] || ! requeued; then show; fail "1: the job stopped at step 3 did not requeue (exit $status)"; fi
grep -q "checkpoint written; requeueing" "$case_dir/out" || { show; fail "1: no requeue line"; }
if banner > /dev/null; then show; fail "1: Open MPI's abort boxes for exit code 75 are in the job's log"; fi
[[ $(cat "$case_dir/run/checkpoints/latest") == ckpt-000000003.h5 ]] || { show; fail "1: no checkpoint at step 3"; }
echo "1. --stop-at-step under mpiexec: 75, requeued, no abort boxes"

# 2. TERM to the script, mpiexec and the ranks at once, as Slurm ends a job.
start_job term --steps 100000 --checkpoint-every 0
wait_for_line "$case_dir/out" "dptrain-slurm: mpiexec" "$job_pid" 30 "the job"
for _ in $(seq 300); do [[ -e $case_dir/run/.ready-77-r0 ]] && break; sleep 0.1; done
[[ -e $case_dir/run/.ready-77-r0 ]] || { show; fail "2: dptrain did not become ready"; }
sleep 1
# shellcheck disable=SC2046  # one pid a word
kill -TERM $(descendants "$job_pid") "$job_pid" 2> /dev/null
end_job
if [[ $status -ne 0 ]] || ! requeued; then show; fail "2: TERM to the job under mpiexec did not requeue (exit $status)"; fi
grep -q "mpiexec returned [0-9]* after the stop request (TERM).*taking it as their exit code 75" "$case_dir/out" ||
  { show; fail "2: the script did not say why it takes mpiexec's status as 75"; }
[[ -s $case_dir/run/checkpoints/latest ]] || { show; fail "2: no checkpoint"; }
if banner > /dev/null; then show; fail "2: Open MPI's abort boxes are in the job's log"; fi
echo "2. TERM to every process of the job: mpiexec returned 1, the script took the checkpoint as 75 and requeued"

# 3. A rank's error still fails the job, and Open MPI's box about it stays in the log.
start_job error --steps 10 --lr nonsense
end_job
if [[ $status -eq 0 ]] || requeued; then show; fail "3: a job whose ranks exited 105 did not fail (exit $status)"; fi
grep -q "dptrain train failed with exit code 105" "$case_dir/err" || { show; fail "3: no failure line"; }
grep -q "Exit code: *105" "$case_dir/err" || { show; fail "3: Open MPI's box for exit code 105 is gone"; }
echo "3. a rank's error (105) fails the job with Open MPI's box in the log"
echo "PASS"
