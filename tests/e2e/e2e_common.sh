# Sourced by the end-to-end scripts that run dptrain outside Slurm: a work directory removed at the
# end (kept with KEEP_WORK=1, to look at), fail(), run_mpi for mpiexec as the tests launch it, synth_data
# and wait_for_line.
# shellcheck shell=bash
work=$(mktemp -d)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[[ -z ${KEEP_WORK:-} ]] || echo "work directory (kept): $work"
run_mpi() { "${mpiexec:?set mpiexec before sourcing e2e_common.sh}" --oversubscribe --allow-run-as-root "$@"; }
# wait_for_line LOG PATTERN PID SECONDS WHAT: waits until LOG holds PATTERN (grep) while the job of
# process PID runs; fails, showing the log, when the job ends first or SECONDS pass. WHAT names the job.
wait_for_line() {
  local log=$1 pattern=$2 pid=$3 seconds=$4 what=$5 _
  for _ in $(seq $((seconds * 10))); do
    grep -q -- "$pattern" "$log" && return 0
    kill -0 "$pid" 2> /dev/null || { cat "$log"; fail "$what ended before logging '$pattern'"; }
    sleep 0.1
  done
  grep -q -- "$pattern" "$log" || { cat "$log"; fail "$what: no '$pattern' after $seconds s"; }
}
# synth_data PER_CLASS: $work/data, a synthetic 4-class 28x28 set (2 train shards, 1 validation shard
# of 2 images a class) made with $dptrain.
synth_data() {
  "${dptrain:?set dptrain before sourcing e2e_common.sh}" data synth "$work/synth" --classes 4 --per-class "$1" \
    --val-per-class 2 --size 28 > "$work/synth.log" 2>&1 || { cat "$work/synth.log"; fail "synth"; }
  "$dptrain" data convert imagenet "$work/synth" "$work/data" --size 28 --shards 2 --val-shards 1 \
    > "$work/convert.log" 2>&1 || { cat "$work/convert.log"; fail "conversion"; }
}
