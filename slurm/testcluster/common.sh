# Shared by start.sh and stop.sh (sourced, not run): where the test cluster keeps its state, and how
# to find every process it started.
# shellcheck shell=bash disable=SC2034  # the variables are used by the scripts that source this

# The state directory: configuration, munge key and socket, spools, logs, pid files, device files.
# Keep it short: munge's socket path must fit in a sockaddr_un (108 bytes).
testcluster_dir=${DPTRAIN_TESTCLUSTER_DIR:-/tmp/dptrain-testcluster}
# slurmctld listens on this port, node i's slurmd on this port + i.
testcluster_port=${DPTRAIN_TESTCLUSTER_PORT:-16817}

# Every daemon is started with this marker in its environment; slurmstepd works in the state directory;
# job tasks carry SLURM_CONF of this cluster and a SLURM_JOB_ID. So stop.sh finds what is left by reading
# /proc/PID/environ, and never touches a shell that merely uses the cluster (or its own ancestors).
testcluster_marker="DPTRAIN_TESTCLUSTER_DAEMON=$testcluster_dir"

tc_log() { echo "testcluster: $*"; }
tc_die() { echo "testcluster: error: $*" >&2; exit 1; }

# The PIDs of processes that belong to this test cluster (daemons, step daemons, job tasks).
tc_processes() {
  local ancestors=" " p=$BASHPID file pid
  while [[ $p -gt 1 ]]; do
    ancestors+="$p "
    p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null || echo 1)
  done
  {
    grep -lzxF "$testcluster_marker" /proc/[0-9]*/environ 2>/dev/null || true
    # slurmstepd starts with an empty environment, but works in this cluster's log or spool directory.
    find /proc/[0-9]*/cwd -maxdepth 0 \( -lname "$testcluster_dir/*" -o -lname "$testcluster_dir" \) 2>/dev/null |
      sed 's|/cwd$|/environ|' || true
    grep -lzxF "SLURM_CONF=$testcluster_dir/slurm.conf" /proc/[0-9]*/environ 2>/dev/null |
      while read -r file; do grep -qz '^SLURM_JOB_ID=' "$file" 2>/dev/null && echo "$file"; done || true
  } | while read -r file; do
    pid=${file#/proc/}
    pid=${pid%/environ}
    [[ $ancestors == *" $pid "* ]] || echo "$pid"
  done | sort -un
}

# Is the process in this pid file alive?
tc_pid_alive() {
  local pid
  [[ -s $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}
