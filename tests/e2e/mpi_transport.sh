# Sourced by the transport tests (mpiexec_transport_e2e.sh, slurm_transport_e2e.sh): which Open MPI
# components a running rank has loaded, read from /proc/PID/maps, and the check that it has the
# point-to-point layer meant and not the TCP BTL (mca_btl_tcp.so, docs/troubleshooting.md). Needs fail().
# shellcheck shell=bash

# mpi_components PID: the Open MPI components mapped in process PID (mca_pml_ob1, ...), one a line.
mpi_components() {
  grep -o 'mca_[a-z]*_[a-z0-9]*\.so' "/proc/$1/maps" 2>/dev/null | sed 's/\.so$//' | sort -u
}

# check_transport LABEL PID COMPONENT...: fails unless process PID has every COMPONENT mapped and not
# mca_btl_tcp; prints the rank's pml, btl and osc components.
check_transport() {
  local label=$1 pid=$2 components layers want
  shift 2
  components=$(mpi_components "$pid")
  [[ -n $components ]] || fail "$label (pid $pid) has no Open MPI component mapped: not an MPI rank, or it ended"
  layers=$(grep -E '^mca_(pml|btl|osc)_' <<< "$components" | tr '\n' ' ')
  ! grep -qx mca_btl_tcp <<< "$components" ||
    fail "$label (pid $pid) has loaded Open MPI's TCP BTL (mca_btl_tcp.so), which the tests must not use: $layers"
  for want in "$@"; do
    grep -qx "$want" <<< "$components" || fail "$label (pid $pid) has no $want.so mapped: $layers"
  done
  echo "$label (pid $pid): $layers"
}
