#!/usr/bin/env bash
# Stops the local Slurm test cluster started by start.sh: cancels its jobs, stops slurmd, slurmctld
# and munged (by their pid files), ends any step daemon or task left over, and checks that nothing
# of the cluster is still running. Keeps the state directory (logs) unless --clean is given.
set -euo pipefail

usage() {
  cat <<EOF
Usage: $(basename "$0") [--clean]

Stops the local Slurm test cluster (see start.sh) and verifies nothing of it remains.
  --clean   also remove the state directory (\$DPTRAIN_TESTCLUSTER_DIR, default /tmp/dptrain-testcluster)
EOF
}

clean=0
case ${1:-} in
  "") ;;
  --clean) clean=1 ;;
  -h|--help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"
state=$testcluster_dir

# Ends the processes in these pid files together: TERM, then KILL what is left after 10 s.
stop_pidfiles() {
  local file pids=() pid alive
  for file in "$@"; do tc_pid_alive "$file" && pids+=("$(<"$file")"); done
  [[ ${#pids[@]} -gt 0 ]] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive -eq 1 ]] || return 0
    sleep 0.2
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

if [[ -f $state/slurm.conf ]] && tc_pid_alive "$state/run/slurmctld.pid"; then
  export SLURM_CONF=$state/slurm.conf
  mapfile -t jobs < <(squeue -h -o '%A' 2>/dev/null || true)
  if [[ ${#jobs[@]} -gt 0 ]]; then
    tc_log "cancelling ${#jobs[@]} job(s)"
    scancel "${jobs[@]}" 2>/dev/null || true
    for _ in $(seq 20); do
      [[ -z $(squeue -h -t running,completing -o '%A' 2>/dev/null || true) ]] && break
      sleep 0.5
    done
  fi
fi

shopt -s nullglob
stop_pidfiles "$state"/run/slurmd-*.pid
stop_pidfiles "$state/run/slurmctld.pid"
stop_pidfiles "$state/run/munged.pid"

# Step daemons and tasks of cancelled jobs, if any outlived their slurmd: each by its id.
mapfile -t left < <(tc_processes)
if [[ ${#left[@]} -gt 0 ]]; then
  tc_log "ending ${#left[@]} leftover process(es): ${left[*]}"
  kill -TERM "${left[@]}" 2>/dev/null || true
  sleep 1
  mapfile -t left < <(tc_processes)
  [[ ${#left[@]} -gt 0 ]] && { kill -KILL "${left[@]}" 2>/dev/null || true; sleep 0.5; }
fi

mapfile -t left < <(tc_processes)
if [[ ${#left[@]} -gt 0 ]]; then
  ps -o pid,args -p "$(IFS=,; echo "${left[*]}")" >&2 || true
  tc_die "processes of the test cluster are still running: ${left[*]}"
fi
if [[ $clean -eq 1 ]]; then
  rm -rf "$state"
  tc_log "stopped; removed $state"
else
  tc_log "stopped; nothing is left running (logs in $state/log)"
fi
