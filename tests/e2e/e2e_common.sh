# Sourced by the end-to-end scripts that run dptrain outside Slurm: a work directory removed at the
# end, fail(), and run_mpi for mpiexec as the tests launch it.
# shellcheck shell=bash
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run_mpi() { "${mpiexec:?set mpiexec before sourcing e2e_common.sh}" --oversubscribe --allow-run-as-root "$@"; }
