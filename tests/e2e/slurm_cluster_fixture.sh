#!/usr/bin/env bash
# CTest fixture of the Slurm end-to-end tests: `start DPTRAIN DATA` converts Fashion-MNIST once (for the
# training tests) and starts the local test cluster with 4 nodes; `stop` stops it and checks nothing is
# left. Start exits 77 (skipped) where the cluster cannot run: not root, or Slurm or munge missing.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
case ${1:-} in
  start)
    dptrain=${2:?usage: $0 start DPTRAIN DATA} data=${3:?usage: $0 start DPTRAIN DATA}
    if [[ $(id -u) -ne 0 ]]; then echo "SKIP: the Slurm test cluster needs root (slurmd)"; exit 77; fi
    for cmd in slurmctld slurmd munged sbatch; do
      command -v "$cmd" >/dev/null 2>&1 || { echo "SKIP: $cmd is not installed (scripts/install-deps.sh)"; exit 77; }
    done
    if [[ ! -f $data/manifest.json ]]; then
      mkdir -p "$(dirname "$data")"
      "$dptrain" data convert fashion-mnist "$data" --shards 4 > "$data.log" 2>&1 || { cat "$data.log"; exit 1; }
    fi
    # A cluster left over by an interrupted run would hold the ports: stop it first.
    bash "$repo/slurm/testcluster/stop.sh" > /dev/null 2>&1 || true
    exec bash "$repo/slurm/testcluster/start.sh" --nodes 4 ;;
  stop)
    exec bash "$repo/slurm/testcluster/stop.sh" ;;
  *) echo "usage: $0 start DPTRAIN DATA | stop" >&2; exit 2 ;;
esac
