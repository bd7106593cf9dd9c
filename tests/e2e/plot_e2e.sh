#!/usr/bin/env bash
# End-to-end: `dptrain plot` draws real runs' metrics. A 2-rank run stopped after its step-20
# checkpoint and resumed to step 40 (two metrics files in one run directory, as slurm/train.sbatch
# writes a requeued job's) is joined into one run whose curve is, point for point, the uninterrupted
# run's: the steps the first piece did after the checkpoint are dropped. The PNG is a valid image of
# the asked size; gnuplot's own table of what it read (--table) holds every series; two runs go on
# one chart with labels, against time; bad inputs are refused in words; labels are never code.
set -uo pipefail
dptrain=$1
mpiexec=$2
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"

synth_data 40
# 160 images, a global batch of 32: an epoch is 5 steps, so evaluations land between log lines too.
# A constant rate: the pieces were started with other step counts, which would reshape a schedule.
common=(train --model lenet --data "$work/data" --batch-size 16 --lr 0.05 --schedule constant --log-every 5 --threads 1)
train() { # NAME ARGS...: a 2-rank run, its log in $work/NAME.log
  local name=$1
  shift
  run_mpi -n 2 "$dptrain" "${common[@]}" "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "training $name"; }
}
mkdir -p "$work/run"
train whole --steps 40 --metrics "$work/whole.jsonl"
# The first piece runs to step 30 with checkpoints every 10 steps; the second resumes from step 20
# (the step-30 checkpoint is lost with the node, say): steps 21 to 30 are trained twice.
train first --steps 30 --checkpoint-dir "$work/ck1" --checkpoint-every 10 --metrics "$work/run/metrics-r0.jsonl"
mkdir -p "$work/ck2"
cp "$work/ck1"/ckpt-*20.h5 "$work/ck2/" || fail "no step-20 checkpoint in $(ls "$work/ck1")"
train second --steps 40 --checkpoint-dir "$work/ck2" --metrics "$work/run/metrics-r1.jsonl"
grep -q "resuming from .*: step 20" "$work/second.log" || { cat "$work/second.log"; fail "the second piece did not resume at 20"; }

"$dptrain" plot "$work/run" -o "$work/joined.png" --table "$work/joined.txt" > "$work/plot.log" 2>&1 ||
  { cat "$work/plot.log"; fail "plot of a run directory"; }
cat "$work/plot.log"
grep -q "^run: 8 step line(s), [0-9]* evaluation(s), joined from 2 pieces" "$work/plot.log" || fail "the joined run's summary"
[[ -s $work/joined.png.gp ]] || fail "no gnuplot script beside the chart"

python3 - "$work" "$(dirname "$0")" <<'PY' || fail "the joined chart"
import json, sys, math
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from chart_files import png_size, table_sections

def table(path):
    """gnuplot's --table output: series name -> rows of numbers."""
    return {name: [[float(v) for v in row.split()[:5] if v not in ("i", "o", "u")] for row in rows]
            for name, rows in table_sections(path).items()}

def metrics(path):
    lines = [json.loads(l) for l in open(path)]
    return ([l for l in lines if l["type"] == "step"], [l for l in lines if l["type"] == "eval"])

assert png_size(f"{work}/joined.png") == (1200, 900), png_size(f"{work}/joined.png")
s = table(f"{work}/joined.txt")
steps, evals = metrics(f"{work}/whole.jsonl")
assert [r[0] for r in s["loss run"]] == [l["step"] for l in steps] == list(range(5, 41, 5)), s["loss run"]
# An exact resume: the joined curve is the uninterrupted run's (gnuplot keeps 6 significant digits).
for got, want in zip(s["loss run"], steps):
    assert math.isclose(got[1], want["loss"], rel_tol=1e-5), (got, want)
for got, want in zip(s["accuracy run"], steps):
    assert math.isclose(got[1], want["accuracy"], rel_tol=1e-5, abs_tol=1e-6), (got, want)
assert [r[0] for r in s["validation top-1 run"]] == [e["step"] for e in evals], (s["validation top-1 run"], evals)
for got, want in zip(s["validation top-1 run"], evals):
    assert math.isclose(got[1], want["top1"], rel_tol=1e-5, abs_tol=1e-6), (got, want)
assert all(r[1] > 0 for r in s["images/sec run"])
# The first piece logged steps 25 and 30 as well; they are not in the joined run.
first, _ = metrics(f"{work}/run/metrics-r0.jsonl")
assert [l["step"] for l in first] == [5, 10, 15, 20, 25, 30]
# Per rank: two ranks, each with its compute, data wait, communication wait, the rest (ms a step).
ranks = s["ms a step by rank: compute, data wait, communication wait, other"]
assert len(ranks) == 2 and all(len(r) == 4 and min(r) >= 0 and r[0] > 0 for r in ranks), ranks
for l in steps:
    for key in ("step_seconds_per_rank", "compute_seconds_per_rank", "data_wait_seconds_per_rank",
                "communication_wait_seconds_per_rank"):
        assert len(l[key]) == 2 and all(v >= 0 for v in l[key]), (key, l)
    assert l["elapsed_seconds"] > 0
starts = [json.loads(l) for l in open(f"{work}/run/metrics-r1.jsonl") if '"start"' in l]
assert starts[0]["step"] == 20 and starts[0]["world_size"] == 2 and len(starts[0]["nodes"]) == 2, starts
print("joined run: 8 points equal to the uninterrupted run's; per-rank times", ranks)
PY

# Two runs on one chart, against time, labelled; a label is text, never a gnuplot command.
"$dptrain" plot "$work/whole.jsonl" "$work/run" --label 'lr 0.05' --label "re'queued \`touch $work/pwned\`" \
  --x time --size 800x600 -o "$work/two.png" --table "$work/two.txt" > "$work/two.log" 2>&1 ||
  { cat "$work/two.log"; fail "plot of two runs"; }
[[ -e $work/pwned ]] && fail "a label ran a command"
python3 - "$work" "$(dirname "$0")" <<'PY' || fail "the two-run chart"
import sys
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from chart_files import png_size
assert png_size(f"{work}/two.png") == (800, 600)
names = [l[2:].strip() for l in open(f"{work}/two.txt") if l.startswith("# ") and not l.startswith("# Curve")]
assert "loss lr 0.05" in names and any(n.startswith("loss re'queued") for n in names), names
# Against time: the joined run's clock goes on across its pieces.
rows, seen = [], False
for line in open(f"{work}/two.txt"):
    if line.startswith("# "):
        seen = line.startswith("# loss re'queued")
    elif seen and line.strip() and not line.startswith("#"):
        rows.append(float(line.split()[0]))
assert len(rows) == 8 and rows == sorted(rows) and rows[0] > 0, rows
PY

# Bad inputs, in words.
expect_error() { # WHAT PATTERN COMMAND...
  local what=$1 pattern=$2
  shift 2
  "$@" > "$work/err.log" 2>&1 && fail "$what: accepted"
  grep -q -- "$pattern" "$work/err.log" || { cat "$work/err.log"; fail "$what: no clear error"; }
}
printf '{"type": "step", "step": 5, "loss": 1}\nnot json\n' > "$work/broken.jsonl"
expect_error "a line that is not JSON" "broken.jsonl:2: not a JSON object" "$dptrain" plot "$work/broken.jsonl" -o "$work/x.png"
: > "$work/empty.jsonl"
expect_error "an empty file" "holds no step or evaluation line" "$dptrain" plot "$work/empty.jsonl" -o "$work/x.png"
echo '{"type": "step", "step": -3, "loss": 1}' > "$work/negative.jsonl"
expect_error "a negative step" "step" "$dptrain" plot "$work/negative.jsonl" -o "$work/x.png"
echo '{"type": "step", "step": 5, "loss": "high"}' > "$work/text.jsonl"
expect_error "a loss that is text" "'loss' must be a number" "$dptrain" plot "$work/text.jsonl" -o "$work/x.png"
mkdir -p "$work/nothing"
expect_error "a directory without metrics" "holds no metrics file" "$dptrain" plot "$work/nothing" -o "$work/x.png"
expect_error "a tiny size" "is not WIDTHxHEIGHT" "$dptrain" plot "$work/whole.jsonl" --size 10x10 -o "$work/x.png"
expect_error "a size in words" "is not WIDTHxHEIGHT" "$dptrain" plot "$work/whole.jsonl" --size big -o "$work/x.png"
expect_error "labels for the wrong number of runs" "given 1 time(s) for 2 run(s)" \
  "$dptrain" plot "$work/whole.jsonl" "$work/run" --label one -o "$work/x.png"
expect_error "missing gnuplot" "needs gnuplot" env -u GNUPLOT PATH=/nonexistent "$dptrain" plot "$work/whole.jsonl" -o "$work/x.png"
echo '{"type": "step", "step": 5, "loss": 1}' > "$work/old.jsonl"
expect_error "time for metrics without a clock" "no elapsed_seconds" "$dptrain" plot "$work/old.jsonl" --x time -o "$work/x.png"
# Metrics of an older dptrain (no per-rank times, no clock) still draw against steps.
"$dptrain" plot "$work/old.jsonl" -o "$work/old.png" > "$work/old.log" 2>&1 || { cat "$work/old.log"; fail "old metrics"; }
echo "PASS"
