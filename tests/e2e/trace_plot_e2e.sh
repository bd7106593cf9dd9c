#!/usr/bin/env bash
# End-to-end: `dptrain plot --trace` draws the traces of a real 2-rank run (overlap on, checkpoints
# and evaluations in the window). The PNG is a valid image of the expected size; gnuplot's table of
# what it drew (--table) holds every complete event of the files, each in its rank's thread's lane,
# with its start (ms from the window's first event), length and kind; --steps draws a sub-window from
# files given one by one. Names from a file are never gnuplot code; bad inputs are refused in words,
# never by a crash.
set -uo pipefail
dptrain=$1
mpiexec=$2
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"

synth_data 40
# Small buckets: several allreduces a step on the communication thread; an epoch is 2 steps, so
# evaluations land in the window, and so do the checkpoints of steps 4 and 8.
run_mpi -n 2 "$dptrain" train --model lenet --data "$work/data" --steps 8 --batch-size 32 --lr 0.05 --threads 1 \
  --log-every 4 --bucket-mb 0.05 --overlap on --checkpoint-dir "$work/ckpt" --checkpoint-every 4 \
  --trace "$work/trace" --trace-steps 2:8 > "$work/train.log" 2>&1 || { cat "$work/train.log"; fail "training with --trace"; }

"$dptrain" plot --trace "$work/trace" -o "$work/all.png" --table "$work/all.txt" > "$work/all.log" 2>&1 ||
  { cat "$work/all.log"; fail "plot --trace of a trace directory"; }
cat "$work/all.log"
grep -q "^trace: 2 file(s), 4 lane(s), [0-9]* event(s) of steps 2 to 8, " "$work/all.log" || fail "the summary"
[[ -s $work/all.png.gp ]] || fail "no gnuplot script beside the chart"
"$dptrain" plot --trace "$work/trace/trace-rank-1.json" "$work/trace/trace-rank-0.json" --steps 4:6 --size 900x400 \
  -o "$work/window.png" --table "$work/window.txt" > "$work/window.log" 2>&1 ||
  { cat "$work/window.log"; fail "plot --trace --steps of two files"; }
grep -q "^set x2tics ('4' " "$work/window.png.gp" || fail "the steps' starts are not marked"

python3 - "$work" "$(dirname "$0")" <<'PY' || fail "the charts"
import json, math, re, sys
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from chart_files import png_size, table_sections

def table(path):
    """--table: section name -> its rows, split into numbers or, for names, at the first space."""
    return {title.split(":")[0]: [row.split(" ", 1) if title.startswith(("lane names", "kinds")) else row.split()
                                  for row in rows]
            for title, rows in table_sections(path).items()}

def kind(name):
    return " ".join(w for w in name.split(" ") if w and not re.fullmatch(r"[0-9]+", w))

def check(chart, steps=None):
    t = table(f"{work}/{chart}.txt")
    lanes = {int(r[0]): (int(r[1]), int(r[2])) for r in t["lanes"]}
    names = {int(n): text for n, text in t["lane names"]}
    kinds = {int(k): text for k, text in t["kinds"]}
    events, threads = [], {}
    for rank in (0, 1):
        trace = json.load(open(f"{work}/trace/trace-rank-{rank}.json"))["traceEvents"]
        for e in trace:
            if e["ph"] == "M" and e["name"] == "thread_name":
                threads[(e["pid"], e["tid"])] = e["args"]["name"]
        events += [e for e in trace if e["ph"] == "X" and (steps is None or steps[0] <= e["args"]["step"] <= steps[1])]
    # A lane for each rank's thread, rank 0's main thread at the top, named by the files' metadata.
    assert sorted(lanes.values()) == [(0, 1), (0, 2), (1, 1), (1, 2)] == [lanes[l] for l in sorted(lanes)], lanes
    for lane, (pid, tid) in lanes.items():
        assert re.fullmatch(rf"rank {pid} on \S+: {threads[(pid, tid)]}", names[lane]), names
    origin = min(e["ts"] for e in events)
    lane_of = {ids: lane for lane, ids in lanes.items()}
    want = [(lane_of[(e["pid"], e["tid"])], kind(e["name"]), (e["ts"] - origin) / 1000, e["dur"] / 1000)
            for e in events]
    got = [(int(r[0]), kinds[int(r[3])], float(r[1]), float(r[2])) for r in t["boxes"]]
    assert len(got) == len(want), f"{chart}: {len(got)} boxes for {len(want)} events"
    # Each event has its own box: same lane and kind, the same start and length to gnuplot's 6 digits.
    close = lambda a, b: math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
    for w in want:
        match = [g for g in got if g[:2] == w[:2] and close(g[2], w[2]) and close(g[3], w[3])]
        assert match, f"{chart}: no box for {w}"
        got.remove(min(match, key=lambda g: abs(g[2] - w[2]) + abs(g[3] - w[3])))
    return set(kinds.values()), len(events)

kinds, count = check("all")
assert {"step", "data wait", "forward", "backward", "allreduce bucket", "gradient wait", "optimizer update",
        "evaluation", "checkpoint"} <= kinds, kinds
assert png_size(f"{work}/all.png") == (1200, 190 + 50 * 4), png_size(f"{work}/all.png")
_, window = check("window", (4, 6))
assert 0 < window < count
assert png_size(f"{work}/window.png") == (900, 400)
print(f"every event drawn: {count} of steps 2 to 8, {window} of steps 4 to 6")
PY

# Names from a file are text, never gnuplot code (in a double-quoted string a backquote would run).
python3 - "$work" <<'PY' || fail "writing the hostile trace"
import json, sys
work = sys.argv[1]
evil = f"`touch {work}/pwned` ' \" @x \\"
events = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "rank 0 " + evil + "\nset"}},
          {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": evil}}]
events += [{"ph": "X", "name": f"{evil} {i}", "pid": 0, "tid": 1, "ts": 1000 * i, "dur": 900} for i in range(3)]
json.dump({"traceEvents": events}, open(f"{work}/evil.json", "w"))
PY
"$dptrain" plot --trace "$work/evil.json" -o "$work/evil.png" --table "$work/evil.txt" > "$work/evil.log" 2>&1 ||
  { cat "$work/evil.log"; fail "plot of a trace with hostile names"; }
[[ -e $work/pwned ]] && fail "a name ran a command"
grep -qF "0 \`touch $work/pwned\` ' \" @x \\" "$work/evil.txt" || { cat "$work/evil.txt"; fail "the hostile kind"; }

# Bad inputs, in words: exit 1 or CLI11's usage code, never a signal.
expect_error() { # WHAT PATTERN COMMAND...
  local what=$1 pattern=$2 rc
  shift 2
  "$@" > "$work/err.log" 2>&1
  rc=$?
  ((rc != 0)) || fail "$what: accepted"
  ((rc < 128)) || { cat "$work/err.log"; fail "$what: killed by a signal ($rc)"; }
  grep -q -- "$pattern" "$work/err.log" || { cat "$work/err.log"; fail "$what: no clear error"; }
}
x=(-o "$work/x.png")
expect_error "a missing directory" "does not exist" "$dptrain" plot --trace "$work/nowhere" "${x[@]}"
mkdir -p "$work/empty"
expect_error "a directory without traces" "holds no trace file (trace-rank-R.json" "$dptrain" plot --trace "$work/empty" "${x[@]}"
echo '{"traceEvents": [' > "$work/cut.json"
expect_error "invalid JSON" "cut.json' is not JSON" "$dptrain" plot --trace "$work/cut.json" "${x[@]}"
echo '{"events": []}' > "$work/other.json"
expect_error "JSON that is no trace" "is not a Chrome trace" "$dptrain" plot --trace "$work/other.json" "${x[@]}"
event() { echo "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"forward\", \"pid\": 0, \"tid\": 1$1}]}"; }
event ', "dur": 5' > "$work/nots.json"
expect_error "an event without ts" "traceEvents\[0\]: a complete event (\"ph\": \"X\") without its 'ts'" \
  "$dptrain" plot --trace "$work/nots.json" "${x[@]}"
event ', "ts": 5' > "$work/nodur.json"
expect_error "an event without dur" "without its 'dur'" "$dptrain" plot --trace "$work/nodur.json" "${x[@]}"
event ', "ts": 5, "dur": -2' > "$work/negative.json"
expect_error "a negative dur" "'dur' is -2" "$dptrain" plot --trace "$work/negative.json" "${x[@]}"
echo '{"traceEvents": [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "rank 0"}}]}' \
  > "$work/no-events.json"
expect_error "an empty window" "no complete event" "$dptrain" plot --trace "$work/no-events.json" "${x[@]}"
expect_error "--steps without events" "--steps 50:60: the traces hold no event of those steps (they hold steps 2 to 8)" \
  "$dptrain" plot --trace "$work/trace" --steps 50:60 "${x[@]}"
expect_error "--steps backwards" "--steps '6:4' is not FIRST:LAST" "$dptrain" plot --trace "$work/trace" --steps 6:4 "${x[@]}"
expect_error "--steps without --trace" "requires --trace" "$dptrain" plot "$work/trace" --steps 4:6 "${x[@]}"
expect_error "a rank twice" "is given twice" \
  "$dptrain" plot --trace "$work/trace" "$work/trace/trace-rank-0.json" "${x[@]}"
cp "$work/trace/trace-rank-0.json" "$work/copy.json"
expect_error "a rank in two files" "both hold events of process 0" \
  "$dptrain" plot --trace "$work/trace" "$work/copy.json" "${x[@]}"
python3 -c "print('[' * 100000 + ']' * 100000)" > "$work/deep.json"
expect_error "deeply nested JSON" "is not an object" "$dptrain" plot --trace "$work/deep.json" "${x[@]}"
echo "PASS"
