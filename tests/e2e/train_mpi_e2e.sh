#!/usr/bin/env bash
# End-to-end, distributed: `mpiexec -n 2 dptrain train` on the real Fashion-MNIST files reaches the
# accuracy of one rank with the same global batch, reports the rank map and global metrics, and an
# error on the ranks ends the whole job with one clear sentence.
set -uo pipefail
dptrain=$1
mpiexec=$2
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"

"$dptrain" data convert fashion-mnist "$work/fm" --shards 4 > "$work/convert.log" 2>&1 || { cat "$work/convert.log"; fail "conversion"; }
common=(train --model lenet --data "$work/fm" --steps 150 --lr 0.05 --log-every 50 --threads 1)

"$dptrain" "${common[@]}" --batch-size 64 --metrics "$work/one.jsonl" > "$work/one.log" 2>&1 \
  || { cat "$work/one.log"; fail "one rank"; }
run_mpi -n 2 "$dptrain" "${common[@]}" --batch-size 32 --metrics "$work/two.jsonl" > "$work/two.log" 2>&1 \
  || { cat "$work/two.log"; fail "two ranks"; }
cat "$work/one.log" "$work/two.log"

grep -q "2 ranks x batch 32 = 64" "$work/two.log" || fail "the two-rank job does not report its global batch"
grep -q "^1     " "$work/two.log" || fail "the two-rank job does not print the rank map"
[[ $(grep -c '"type": "summary"' "$work/two.jsonl") -eq 1 ]] || fail "rank 0 alone writes the metrics"
grep -q '"world_size": 2' "$work/two.jsonl" || fail "no world size in the metrics"
top1() { sed -n 's/.*"validation_top1": \([0-9.]*\).*/\1/p' "$1"; }
samples() { sed -n 's/.*"type": "eval".*"samples": \([0-9]*\).*/\1/p' "$1"; }
one=$(top1 "$work/one.jsonl") two=$(top1 "$work/two.jsonl")
echo "validation top-1: one rank $one, two ranks $two"
awk -v a="$one" -v b="$two" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0.6 && d < 0.02) }' \
  || fail "two ranks reach $two, one rank $one (expected both > 0.6, within 0.02)"
[[ $(samples "$work/two.jsonl") -eq 10000 ]] || fail "the distributed evaluation did not score each of the 10000 images once"

# A configuration error reaches every rank and ends the job with one sentence.
if run_mpi -n 3 "$dptrain" "${common[@]}" --batch-size 8 --allreduce hierarchical --ranks-per-node 2 \
     > "$work/bad.log" 2>&1; then
  fail "an uneven hierarchical job exited with 0"
fi
grep -q "the same number of ranks on every node" "$work/bad.log" || { cat "$work/bad.log"; fail "no clear error"; }
echo "PASS"
