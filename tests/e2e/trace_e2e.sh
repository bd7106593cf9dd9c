#!/usr/bin/env bash
# End-to-end, distributed: `dptrain train --trace DIR` on 2 ranks writes one Chrome trace per rank
# (parseable JSON, the process named with its rank and node, the threads named, the events of every
# step of the window in order); with --overlap on a bucket's allreduce overlaps the backward pass on
# some step, with --overlap off none does; the trace changes no number of the run; a run shorter
# than its window writes what it recorded; bad windows are refused in words.
set -uo pipefail
dptrain=$1
mpiexec=$2
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"

synth_data 40
# Small buckets: lenet's gradients in several of them, the first complete early in the backward pass.
common=(train --model lenet --data "$work/data" --steps 30 --batch-size 32 --lr 0.05 --log-every 10 --threads 1
  --bucket-mb 0.05)

# Overlap on, the default window (steps 5 to 24), and the same run without a trace.
run_mpi -n 2 "$dptrain" "${common[@]}" --overlap on --trace "$work/on" --metrics "$work/on.jsonl" \
  > "$work/on.log" 2>&1 || { cat "$work/on.log"; fail "training with --trace, overlap on"; }
run_mpi -n 2 "$dptrain" "${common[@]}" --overlap on --metrics "$work/plain.jsonl" \
  > "$work/plain.log" 2>&1 || { cat "$work/plain.log"; fail "training without --trace"; }
# Overlap off, a window of its own.
run_mpi -n 2 "$dptrain" "${common[@]}" --overlap off --trace "$work/off" --trace-steps 3:12 \
  > "$work/off.log" 2>&1 || { cat "$work/off.log"; fail "training with --trace, overlap off"; }
cat "$work/on.log" "$work/off.log"
grep -q "^trace: steps 5 to 24 to $work/on/trace-rank-0.json (one file per rank)" "$work/on.log" ||
  fail "rank 0 does not announce the trace"
grep -q "^trace: wrote $work/on/trace-rank-0.json ([0-9]* events)" "$work/on.log" || fail "rank 0 does not report the trace"
[[ -d "$work/plain" ]] && fail "a run without --trace made a trace directory"
ls "$work/on" "$work/off"
# Nothing else in the directories: no temporary left behind.
for directory in on off; do
  [[ $(cd "$work/$directory" && printf '%s ' *) == "trace-rank-0.json trace-rank-1.json " ]] ||
    fail "the files of --trace ($directory)"
done

# An epoch is 2 steps here: every second step ends with an evaluation.
on=$(python3 "$(dirname "$0")/trace_check.py" "$work/on" 2 5 24 on --evaluate-every 2) || fail "the traces (overlap on)"
off=$(python3 "$(dirname "$0")/trace_check.py" "$work/off" 2 3 12 off --evaluate-every 2) || fail "the traces (overlap off)"
echo "steps where an allreduce overlaps the backward pass: overlap on $on of 40, overlap off $off of 20"

python3 - "$work" <<'PY' || fail "the traced run's losses"
import json, sys
work = sys.argv[1]

# The trace changes no number: the same losses, step for step, as the run without it.
def losses(name):
    with open(f"{work}/{name}.jsonl") as f:
        return [l["loss"] for l in map(json.loads, f) if l["type"] == "step"]
assert losses("on") == losses("plain") and losses("on"), "a traced run computed other losses"
PY

# A run that ends inside the window (here one rank, 8 steps) writes what it recorded when it ends.
"$dptrain" train --model lenet --data "$work/data" --steps 8 --batch-size 32 --threads 1 --trace "$work/short" \
  > "$work/short.log" 2>&1 || { cat "$work/short.log"; fail "a run shorter than the window"; }
python3 - "$work/short/trace-rank-0.json" <<'PY' || fail "the trace of a run shorter than its window"
import json, sys
trace = json.load(open(sys.argv[1]))
complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
assert sorted({e["args"]["step"] for e in complete}) == [5, 6, 7, 8]
assert not [e for e in complete if e["name"].startswith("allreduce") or e["tid"] != 1], "one rank: main thread only"
assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
PY

# Windows in words, before any work.
"$dptrain" "${common[@]}" --trace "$work/bad" --trace-steps 9:5 > "$work/bad.log" 2>&1 && fail "--trace-steps 9:5 accepted"
grep -q "1 <= FIRST <= LAST" "$work/bad.log" || { cat "$work/bad.log"; fail "no clear error for 9:5"; }
"$dptrain" "${common[@]}" --trace-steps 5:9 > "$work/bad.log" 2>&1 && fail "--trace-steps without --trace accepted"
grep -q "requires --trace" "$work/bad.log" || { cat "$work/bad.log"; fail "no clear error without --trace"; }
echo "PASS"
