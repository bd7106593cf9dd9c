#!/usr/bin/env bash
# End-to-end, distributed: a straggler made on purpose (rank 2 of 3 sleeps 40 ms a step: $1 is the
# test build dptrain_throttled, DPTRAIN_TEST_THROTTLE) is named, with its node, by the training log and the metrics,
# although every rank's step time is the same after the allreduce; the summary holds every rank's
# compute and wait times.
set -uo pipefail
dptrain=$1
mpiexec=$2
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"

synth_data 30
DPTRAIN_TEST_THROTTLE=2:40 run_mpi -n 3 \
  "$dptrain" train --model lenet --data "$work/data" --steps 60 --batch-size 8 --lr 0.05 --log-every 20 \
  --threads 1 --metrics "$work/m.jsonl" > "$work/train.log" 2>&1 || { cat "$work/train.log"; fail "training"; }
cat "$work/train.log"
grep -q "warning: rank 2 (node [^)]*) computed [0-9]*% longer than the median rank over the last [0-9]* steps" \
  "$work/train.log" || fail "the log does not name rank 2 as a straggler"
python3 - "$work/m.jsonl" <<'PY' || fail "the metrics"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
stragglers = [l for l in lines if l["type"] == "straggler"]
# Another rank may be named on a loaded machine (noise of a few ms is 10% of a short step), but never
# as far over the median as the throttled one.
mine = [s for s in stragglers if s["rank"] == 2]
assert mine, stragglers
for s in stragglers:
    if s["rank"] != 2:
        assert s["compute_seconds"] - s["median_compute_seconds"] < 0.5 * (mine[0]["compute_seconds"] - mine[0]["median_compute_seconds"]), stragglers
s = mine[0]
assert s["window_steps"] >= 50 and s["compute_seconds"] > 1.1 * s["median_compute_seconds"], s
assert s["compute_seconds"] >= 0.04, s  # at least the 40 ms it sleeps
summary = [l for l in lines if l["type"] == "summary"][0]
compute, wait = summary["compute_seconds_per_rank"], summary["wait_seconds_per_rank"]
assert len(compute) == 3 and len(wait) == 3, summary
assert compute[2] > compute[0] + 0.03 and compute[2] > compute[1] + 0.03, compute
assert wait[0] > wait[2] and wait[1] > wait[2], wait  # the others wait for rank 2
PY
echo "PASS"
