#!/usr/bin/env bash
# Builds first_messages.c (this folder) with mpicc and starts it many times, counting the starts that
# crash: whether Open MPI 4.1's TCP BTL crash happens without dptrain (docs/troubleshooting.md).
#
#   tools/ompi-tcp-repro/run.sh [--starts N] [--ranks R] [--transport tcp|shm] [--load K] [--heartbeats]
#
# --transport tcp: pml ob1, btl self,tcp on loopback (every pair of ranks connects through the TCP
#             BTL); shm: btl self,vader (shared memory), the configuration the tests use. Default tcp.
# --load K:   K busy loops run beside the starts (a loaded machine, as under the test suite). Default 2.
# --heartbeats: also a second thread sending heartbeats while the first messages cross, as dptrain's
#             stall watch does (MPI_THREAD_SERIALIZED, one mutex, polled waits).
# Prints a line per failed start (its log is kept) and "N starts: P passed, C crashed (signal 11), F
# other failures"; exits 1 when any start failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
starts=100
ranks=4
transport=tcp
load=2
mode=plain
while [[ $# -gt 0 ]]; do
  case $1 in
    --starts) starts=${2:?--starts needs a number}; shift 2 ;;
    --ranks) ranks=${2:?--ranks needs a number}; shift 2 ;;
    --transport) transport=${2:?--transport needs tcp or shm}; shift 2 ;;
    --load) load=${2:?--load needs a number}; shift 2 ;;
    --heartbeats) mode=heartbeats; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$starts" "$ranks" "$load"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "run.sh: '$n' is not a number" >&2; exit 2; }
done
case $transport in
  tcp) mca=(--mca pml ob1 --mca btl "self,tcp" --mca btl_tcp_if_include lo) ;;
  shm) mca=(--mca pml ob1 --mca btl "self,vader") ;;
  *) echo "run.sh: --transport must be tcp or shm, not '$transport'" >&2; exit 2 ;;
esac
command -v mpicc > /dev/null || { echo "run.sh: mpicc is not installed (Debian: libopenmpi-dev)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ompi-tcp-repro.XXXXXX") || exit 2
busy=()
cleanup() { ((${#busy[@]})) && kill "${busy[@]}" 2> /dev/null; }
trap cleanup EXIT
mpicc -O2 -o "$work/first_messages" "$here/first_messages.c" || { echo "run.sh: mpicc failed" >&2; exit 2; }
for ((i = 0; i < load; ++i)); do
  (while :; do :; done) &
  busy+=($!)
done
passed=0 crashed=0 other=0
for ((s = 1; s <= starts; ++s)); do
  log=$work/start-$s.log
  timeout -k 5 120 mpiexec --oversubscribe --allow-run-as-root -n "$ranks" "${mca[@]}" "$work/first_messages" 3 "$mode" \
    > "$log" 2>&1
  code=$?
  if ((code == 0)); then
    passed=$((passed + 1))
    rm -f "$log"
  elif grep -qE "signal 11|Segmentation fault" "$log"; then
    crashed=$((crashed + 1))
    echo "start $s: crashed (exit $code): $log"
  else
    other=$((other + 1))
    echo "start $s: failed (exit $code): $log"
  fi
done
echo "$starts starts ($mode) of $ranks ranks over $transport under $load busy loops: $passed passed, $crashed crashed (signal 11), $other other failures"
((crashed + other == 0))
