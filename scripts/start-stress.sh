#!/usr/bin/env bash
# Starts a short 2-node, 4-rank training job many times and counts the starts that crash: the check
# that multi-node starts with a given MPI transport are safe (Open MPI 4.1's TCP BTL crashes now and
# then while the ranks of a loaded machine connect, see docs/troubleshooting.md "A rank crashed").
#
#   scripts/start-stress.sh [--starts N] [--launcher mpiexec|srun] [--transport tcp|shm|ucx]
#                           [--dptrain PATH] [--data DIR]
#
# --launcher  mpiexec: two simulated nodes on this machine (--ranks-per-node 2; Open MPI sees one);
#             srun: the test cluster's 2-node job (slurm/testcluster/start.sh running, SLURM_CONF set).
# --transport how the ranks talk (Open MPI's MCA settings, set here whatever the environment says):
#             tcp: pml ob1, btl self,tcp on loopback: the TCP BTL, as on a cluster with plain Ethernet;
#             shm: pml ob1, btl self,vader: shared memory (mpiexec only: the test cluster's nodes are
#                  remote to Open MPI); the mpiexec tests' transport;
#             ucx: pml ucx, btl self, UCX's shared memory and its own TCP on loopback between nodes;
#                  the test cluster's transport (slurm/testcluster/testcluster.env).
#             Default: shm with mpiexec, ucx with srun.
# Prints one line per failed start (crash or other failure, exit status, the log kept in the work
# directory) and a closing line "N starts: P passed, C crashed (T in mca_btl_tcp.so), F other
# failures"; exits 1 when any start failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
starts=50
launcher=mpiexec
transport=""
dptrain=$repo/build/cpu/app/dptrain
data=$repo/build/data/fashion-mnist
while [[ $# -gt 0 ]]; do
  case $1 in
    --starts) starts=${2:?--starts needs a number}; shift 2 ;;
    --launcher) launcher=${2:?--launcher needs mpiexec or srun}; shift 2 ;;
    --transport) transport=${2:?--transport needs tcp, shm or ucx}; shift 2 ;;
    --dptrain) dptrain=${2:?--dptrain needs a path}; shift 2 ;;
    --data) data=${2:?--data needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "start-stress: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $starts =~ ^[1-9][0-9]*$ ]] || { echo "start-stress: --starts must be a positive number, not '$starts'" >&2; exit 2; }
[[ -x $dptrain ]] || { echo "start-stress: no dptrain at $dptrain (make build, or --dptrain PATH)" >&2; exit 2; }
[[ -f $data/manifest.json ]] || { echo "start-stress: no dataset at $data (make demo converts Fashion-MNIST there, or --data DIR)" >&2; exit 2; }
case $launcher in
  mpiexec)
    command -v mpiexec >/dev/null || { echo "start-stress: mpiexec is not installed" >&2; exit 2; }
    run=(mpiexec --oversubscribe --allow-run-as-root -n 4 "$dptrain" train --ranks-per-node 2)
    transport=${transport:-shm} ;;
  srun)
    command -v srun >/dev/null || { echo "start-stress: srun is not installed" >&2; exit 2; }
    run=(srun --nodes 2 --ntasks-per-node 2 --mpi=pmix --kill-on-bad-exit=1 "$dptrain" train)
    transport=${transport:-ucx} ;;
  *) echo "start-stress: --launcher must be mpiexec or srun, not '$launcher'" >&2; exit 2 ;;
esac
case $transport in
  tcp) mca=(OMPI_MCA_pml=ob1 "OMPI_MCA_btl=self,tcp" OMPI_MCA_btl_tcp_if_include=lo) ;;
  shm)
    [[ $launcher == mpiexec ]] || { echo "start-stress: --transport shm needs --launcher mpiexec: Open MPI sees the test cluster's nodes as remote, which shared memory cannot reach" >&2; exit 2; }
    mca=(OMPI_MCA_pml=ob1 "OMPI_MCA_btl=self,vader") ;;
  ucx) mca=(OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any OMPI_MCA_osc=ucx
            OMPI_MCA_btl=self "UCX_TLS=self,sm,tcp" UCX_NET_DEVICES=lo) ;;
  *) echo "start-stress: --transport must be tcp, shm or ucx, not '$transport'" >&2; exit 2 ;;
esac
# One compute thread per rank: the simulated nodes share this machine's cores.
export "${mca[@]}" OMPI_MCA_oob_tcp_if_include=lo OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/start-stress.XXXXXX")
echo "start-stress: $starts starts with $launcher, transport $transport (${mca[*]})"
passed=0 crashed=0 crashed_tcp=0 other=0
crash_pattern="crashed: SIG|Segmentation fault|exited on signal|null function pointer"
for (( i = 1; i <= starts; ++i )); do
  log=$work/start-$i.log
  # A few steps exchange gradients through the reducer's thread while the heartbeat thread runs.
  timeout 120 "${run[@]}" --model lenet --data "$data" --steps 3 --batch-size 8 --log-every 1 --stall-timeout 60s \
    > "$log" 2>&1
  status=$?
  if [[ $status -eq 0 ]] && ! grep -qE "$crash_pattern" "$log"; then
    passed=$((passed + 1))
    rm -f "$log"
  elif grep -qE "$crash_pattern" "$log" || (( status > 128 && status != 124 )); then
    crashed=$((crashed + 1))
    where=""
    if grep -q "called from 0x[0-9a-f]* in .*mca_btl_tcp\.so" "$log"; then
      crashed_tcp=$((crashed_tcp + 1))
      where=" in mca_btl_tcp.so"
    fi
    echo "start $i: crashed$where (exit status $status); log: $log"
    grep -m 3 -E "$crash_pattern|called from|TCP connect" "$log" | sed 's/^/  /'
  else
    other=$((other + 1))
    [[ $status -eq 124 ]] && what="timed out after 120 s" || what="failed (exit status $status)"
    echo "start $i: $what; log: $log"
    grep -m 3 -iE "error|warning" "$log" | sed 's/^/  /'
  fi
done
failed=$((crashed + other))
if (( failed == 0 )); then rm -rf "$work"; else echo "start-stress: the logs of the failed starts are in $work"; fi
echo "start-stress ($launcher, $transport): $starts starts: $passed passed, $crashed crashed ($crashed_tcp in mca_btl_tcp.so), $other other failures"
(( failed == 0 ))
