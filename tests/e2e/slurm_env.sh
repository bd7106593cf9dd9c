# Sourced by the Slurm end-to-end tests: the test cluster's client configuration, the test profile, the
# dptrain under test, a work directory the jobs can see, and helpers to wait for a job.
# shellcheck shell=bash
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dptrain=${1:?usage: $0 DPTRAIN}
state=${DPTRAIN_TESTCLUSTER_DIR:-/tmp/dptrain-testcluster}
fail() { echo "FAIL: $*"; exit 1; }
export SLURM_CONF=$state/slurm.conf
# The fixture skips itself where the cluster cannot run (not root, no Slurm); so do the tests then.
if [[ ! -f $SLURM_CONF ]] || ! scontrol ping 2>/dev/null | grep -q UP; then
  echo "SKIP: no test cluster is running at $state (the e2e_slurm_cluster_start fixture starts it)"
  exit 77
fi
export DPTRAIN_PROFILE=$repo/slurm/testcluster/testcluster.env
export DPTRAIN_BIN=$dptrain
work=$(mktemp -d "$state/work.XXXXXX")
trap 'rm -rf "$work"' EXIT

job_field() {  # job_field JOB FIELD: a field of `scontrol show job`
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# job_ranks JOB VAR=VALUE: the pids of JOB's dptrain ranks whose environment holds VAR=VALUE (e.g.
# SLURMD_NODENAME=node2, SLURM_PROCID=1), one a line. A builtin read per process, no fork: the scan
# must end well before the job's next few hundred steps.
job_ranks() {
  local file pid comm
  for file in /proc/[0-9]*/environ; do
    pid=${file#/proc/}
    pid=${pid%/environ}
    comm=""
    { read -r comm < "/proc/$pid/comm"; } 2>/dev/null
    [[ $comm == dptrain ]] || continue
    grep -qzx "SLURM_JOB_ID=$1" "$file" 2>/dev/null && grep -qzx "$2" "$file" 2>/dev/null && echo "$pid"
  done
}

# wait_file FILE SECONDS LOGS: waits until FILE exists; fails after SECONDS, showing the logs that
# the pattern LOGS (a quoted glob, expanded then) names.
wait_file() {
  local file=$1 deadline=$((SECONDS + $2)) pattern=$3 log
  until [[ -e $file ]]; do
    if (( SECONDS >= deadline )); then
      for log in $pattern; do cat "$log"; done  # split and expanded here, on purpose
      fail "$file never appeared"
    fi
    sleep 0.2
  done
}

# wait_job JOB SECONDS: waits until the job has ended (requeues included); prints its final state.
# A requeued job waits about 2 minutes (BeginTime) before it may start again; after 5 s (not at once:
# slurmd refuses a job credential issued in the second its predecessor's was revoked) the test moves
# its start to now, which a scheduler would do anyway once the hold has passed.
wait_job() {
  local job=$1 deadline=$(( $(date +%s) + $2 )) state reason held_since=0
  while (( $(date +%s) < deadline )); do
    state=$(job_field "$job" JobState)
    reason=$(job_field "$job" Reason)
    case $state in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) echo "$state"; return 0 ;;
      PENDING)
        if [[ $reason == BeginTime ]]; then
          (( held_since > 0 )) || held_since=$(date +%s)
          if (( $(date +%s) - held_since >= 5 )); then
            scontrol update JobId="$job" StartTime=now >/dev/null 2>&1 || true
            held_since=0
          fi
        fi ;;
    esac
    sleep 1
  done
  scontrol show job "$job" >&2 || true
  echo TIMEOUT_WAITING
}
