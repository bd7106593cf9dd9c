#!/usr/bin/env bash
# Starts a real Slurm cluster on this one machine, for the end-to-end tests of the sbatch scripts:
# a private munged, slurmctld and N slurmd daemons (`slurmd -N node<i>`), each node with its own
# spool, TmpFS, pid and log file and 8 CPUs and 4 "GPUs" (character devices made with mknod), the
# partitions c4130-g and c4130-k of the shipped profiles, all on loopback on their own ports.
set -euo pipefail

usage() {
  cat <<EOF
Usage: $(basename "$0") [--nodes N] [--timeout SECONDS]

Starts a local Slurm test cluster (run as root; stop it with stop.sh).

  --nodes N          number of slurmd daemons, node1..nodeN (default 4)
  --timeout SECONDS  how long to wait for the nodes to become idle (default 60)

Environment:
  DPTRAIN_TESTCLUSTER_DIR   state directory (default /tmp/dptrain-testcluster)
  DPTRAIN_TESTCLUSTER_PORT  slurmctld port; node i's slurmd uses PORT+i (default 16817)

Then:  export SLURM_CONF=\$DPTRAIN_TESTCLUSTER_DIR/slurm.conf   (or source \$DIR/env.sh)
EOF
}

nodes=4
timeout=60
while [[ $# -gt 0 ]]; do
  case $1 in
    --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
    --nodes=*) nodes=${1#--nodes=}; shift ;;
    --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"
state=$testcluster_dir

if ! [[ $nodes =~ ^[0-9]+$ ]] || (( nodes < 1 || nodes > 16 )); then tc_die "--nodes must be 1 to 16, not '$nodes'"; fi
[[ $(id -u) -eq 0 ]] || tc_die "the test cluster runs slurmd, which needs root; run this as root"
for cmd in munged munge unmunge slurmctld slurmd sinfo scontrol mknod; do
  command -v "$cmd" >/dev/null 2>&1 ||
    tc_die "'$cmd' is not installed; run scripts/install-deps.sh (Debian: slurm-wlm munge)"
done
[[ $state == /* ]] || tc_die "DPTRAIN_TESTCLUSTER_DIR must be an absolute path, not '$state'"
if [[ -n $(tc_processes) ]]; then
  tc_die "a test cluster with state in $state is already running; run $here/stop.sh first"
fi
for (( port = testcluster_port; port <= testcluster_port + nodes; ++port )); do
  if command -v ss >/dev/null 2>&1 && ss -Htln "sport = :$port" | grep -q .; then
    tc_die "port $port is in use; choose other ports with DPTRAIN_TESTCLUSTER_PORT"
  fi
done

# The MPI plugin: PMIx where Debian's Slurm has it (slurm-wlm-basic-plugins), else none.
mpi_default=none
for dir in /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib/slurm /usr/lib64/slurm /usr/lib/x86_64-linux-gnu/slurm; do
  if compgen -G "$dir/mpi_pmix*.so" >/dev/null; then mpi_default=pmix; break; fi
done

rm -rf "$state"
mkdir -p "$state"/{munge,ctld,run,log,dev,spool,tmp}
chmod 0755 "$state" "$state"/{munge,ctld,run,log,dev,spool,tmp}   # munged refuses group/world-writable dirs
for (( i = 1; i <= nodes; ++i )); do mkdir -p "$state/spool/node$i" "$state/tmp/node$i"; done
# Started daemons carry the marker, and so does everything they start (see common.sh).
export DPTRAIN_TESTCLUSTER_DAEMON=$state
export SLURM_CONF=$state/slurm.conf

# munge: its own key, socket, pid, seed and log file.
dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$state/munge/munge.key"
munged --key-file="$state/munge/munge.key" --socket="$state/munge/munge.socket" \
  --pid-file="$state/run/munged.pid" --seed-file="$state/munge/munged.seed" \
  --log-file="$state/log/munged.log" --force ||
  { tail -n 20 "$state/log/munged.log" >&2 || true; tc_die "munged did not start"; }
munge -n -S "$state/munge/munge.socket" | unmunge -S "$state/munge/munge.socket" >/dev/null ||
  tc_die "munge does not encode and decode credentials; see $state/log/munged.log"

# Four "GPUs": character devices with the NVIDIA driver's major number. Slurm only checks they exist.
for gpu in 0 1 2 3; do mknod -m 0666 "$state/dev/nvidia$gpu" c 195 "$gpu"; done

sed -e "s|@STATE@|$state|g" -e "s|@CTLD_PORT@|$testcluster_port|g" \
    -e "s|@SLURMD_PORT@|$((testcluster_port + 1))|g" -e "s|@MPI_DEFAULT@|$mpi_default|g" \
    "$here/slurm.conf.in" > "$state/slurm.conf"
{
  echo
  echo "# Nodes: one slurmd each on its own port; 2 sockets x 4 cores and 4 GPUs, as a C4130."
  for (( i = 1; i <= nodes; ++i )); do
    echo "NodeName=node$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((testcluster_port + i))" \
         "CPUs=8 Boards=1 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=4000 Gres=gpu:4 State=UNKNOWN"
  done
  echo "# Partitions named as in slurm/partitions/*.env."
  echo "PartitionName=c4130-g Nodes=node[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
  echo "PartitionName=c4130-k Nodes=node[1-$nodes] MaxTime=INFINITE State=UP"
} >> "$state/slurm.conf"
sed -e "s|@STATE@|$state|g" "$here/gres.conf.in" > "$state/gres.conf"
cat > "$state/env.sh" <<EOF
# Source this to use the dptrain test cluster: sinfo, squeue, sbatch, srun all read SLURM_CONF.
export SLURM_CONF=$state/slurm.conf
EOF

slurmctld -f "$state/slurm.conf" -i ||
  { tail -n 20 "$state/log/slurmctld.log" >&2 || true; tc_die "slurmctld did not start"; }
for (( i = 1; i <= nodes; ++i )); do
  slurmd -f "$state/slurm.conf" -N "node$i" ||
    { tail -n 20 "$state/log/slurmd-node$i.log" >&2 || true; tc_die "slurmd for node$i did not start"; }
done

tc_log "waiting up to ${timeout}s for $nodes idle nodes"
deadline=$(( $(date +%s) + timeout ))
while :; do
  idle=$(sinfo -h -p c4130-g -t idle -o '%D' 2>/dev/null | head -n 1 || true)
  [[ ${idle:-0} -eq $nodes ]] && break
  if (( $(date +%s) >= deadline )); then
    sinfo -N -l >&2 || true
    for log in "$state"/log/*.log; do echo "--- $log" >&2; tail -n 15 "$log" >&2; done
    tc_die "the nodes did not become idle within ${timeout}s (state and logs in $state; run stop.sh)"
  fi
  sleep 1
done
sinfo
tc_log "running: $nodes nodes, slurmctld on 127.0.0.1:$testcluster_port, MPI plugin $mpi_default, state in $state"
tc_log "use it with: export SLURM_CONF=$state/slurm.conf"
