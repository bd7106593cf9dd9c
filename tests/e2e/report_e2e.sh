#!/usr/bin/env bash
# End-to-end: `dptrain report` on synthetic bench results and a metrics file. Checks the table's
# speedup and efficiency numbers in the CSV, the PNG chart (PNG magic bytes), and the clear errors.
set -uo pipefail
dptrain=$1
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bench() {  # bench FILE MODEL WORLD IPS: a result as `dptrain bench --json` writes it
  printf '{"model": "%s", "backend": "cpu", "batch_size": 32, "world_size": %d, "images_per_sec": %s, "efficiency": 0.5}\n' \
    "$2" "$3" "$4" > "$work/$1"
}
bench a1.json googlenet 1 100
bench a2.json googlenet 2 190
bench a4.json googlenet 4 360
bench a4b.json googlenet 4 380      # a second 4-GPU run: averaged with the first
bench a8.json googlenet 8 640
bench b2.json inception-bn 2 50     # no 1-GPU run: speedup over 2 GPUs' per-GPU rate
bench b4.json inception-bn 4 90
# A training metrics file: step and eval lines are skipped, the summary counts.
cat > "$work/train.jsonl" <<'EOF'
{"type": "step", "step": 10, "loss": 2.1, "images_per_sec": 12.5}
{"type": "eval", "epoch": 1, "validation_top1": 0.5}
{"type": "summary", "model": "lenet", "world_size": 1, "steps": 30, "images_per_sec_overall": 400}
EOF
cat > "$work/train4.jsonl" <<'EOF'
{"type": "summary", "model": "lenet", "world_size": 4, "steps": 30, "images_per_sec_overall": 1200}
EOF

"$dptrain" report "$work"/a*.json "$work"/b*.json "$work/train.jsonl" "$work/train4.jsonl" \
  --csv "$work/out.csv" --plot "$work/out.png" > "$work/report.log" 2>&1 || { cat "$work/report.log"; fail "report"; }
cat "$work/report.log"
cat "$work/out.csv"

# expect MODEL GPUS IPS SPEEDUP EFFICIENCY RUNS: one CSV row, numbers compared to 1e-6.
expect() {
  awk -F, -v m="$1" -v g="$2" -v ips="$3" -v s="$4" -v e="$5" -v r="$6" '
    function near(a, b) { return (a - b < 1e-6 && b - a < 1e-6) }
    $1 == m && $2 == g { found = 1; ok = near($3, ips) && near($4, s) && near($5, e) && $6 == r }
    END { exit !(found && ok) }' "$work/out.csv" ||
    fail "row $1 $2: expected images/sec $3, speedup $4, efficiency $5, runs $6"
}
expect googlenet 1 100 1 1 1
expect googlenet 2 190 1.9 0.95 1
expect googlenet 4 370 3.7 0.925 2
expect googlenet 8 640 6.4 0.8 1
expect inception-bn 2 50 2 1 1
expect inception-bn 4 90 3.6 0.9 1
expect lenet 1 400 1 1 1
expect lenet 4 1200 3 0.75 1
[[ $(head -n 1 "$work/out.csv") == "model,gpus,images_per_sec,speedup,efficiency,runs" ]] || fail "CSV header"
[[ $(wc -l < "$work/out.csv") -eq 9 ]] || fail "expected 8 rows in the CSV"
# Rows are sorted by GPUs within a model, models in the order first seen.
[[ $(cut -d, -f1,2 "$work/out.csv" | tr '\n' ' ') == "model,gpus googlenet,1 googlenet,2 googlenet,4 googlenet,8 inception-bn,2 inception-bn,4 lenet,1 lenet,4 " ]] ||
  fail "row order"
grep -q "googlenet *4 *370.00 *3.70 *92.5%" "$work/report.log" || fail "the printed table lacks the googlenet 4-GPU row"

[[ -s $work/out.png ]] || fail "no PNG written"
[[ $(head -c 8 "$work/out.png" | od -An -tx1 | tr -d ' \n') == "89504e470d0a1a0a" ]] || fail "out.png is not a PNG"
[[ -s $work/out.png.gp ]] || fail "the gnuplot script is not kept next to the chart"

# Model names are data, never code. gnuplot runs a backquoted command inside a double-quoted string,
# where the names once went, so names with backquotes, $(...), a macro, both quotes, backslashes, line
# breaks and an escape sequence must come out as text in the chart, escaped in the table (one line
# each) and exact in the CSV. The report runs in hostile/, where `touch` would create the files.
mkdir "$work/hostile"
cat > "$work/hostile/names.json" <<'EOF'
[{"model": "x`touch PWNED`y", "world_size": 1, "images_per_sec": 10},
 {"model": "x`touch PWNED`y", "world_size": 2, "images_per_sec": 18},
 {"model": "a'b\"c\\d `touch PWNED2`", "world_size": 1, "images_per_sec": 5},
 {"model": "one\ntwo\r\u001b[31m $(touch PWNED3) @GPVAL_VERSION", "world_size": 1, "images_per_sec": 7},
 {"model": "tail\\", "world_size": 1, "images_per_sec": 3}]
EOF
(cd "$work/hostile" && "$dptrain" report names.json --csv names.csv --plot "chart's.png") > "$work/hostile.log" 2>&1 ||
  { cat "$work/hostile.log"; fail "report on hostile model names"; }
cat "$work/hostile.log"
for pwned in PWNED PWNED2 PWNED3; do [[ ! -e $work/hostile/$pwned ]] || fail "a model name ran a command: $pwned exists"; done
[[ $(head -c 8 "$work/hostile/chart's.png" | od -An -tx1 | tr -d ' \n') == "89504e470d0a1a0a" ]] ||
  fail "no chart for the hostile model names"
# expect_lines FILE: every line of stdin occurs in FILE (fixed strings).
expect_lines() {
  local line
  while IFS= read -r line; do grep -qF -- "$line" "$1" || { cat "$1"; fail "$1 lacks: $line"; }; done
}
expect_lines "$work/hostile/chart's.png.gp" <<'EOF'
set output 'chart''s.png'
     $model0 using 1:2 title 'x`touch PWNED`y' with linespoints
     $model1 using 1:2 title 'a''b"c\d `touch PWNED2`' with linespoints
     $model2 using 1:2 title 'one\ntwo\r\x1b[31m $(touch PWNED3) @GPVAL_VERSION' with linespoints
     $model3 using 1:2 title 'tail\' with linespoints
EOF
expect_lines "$work/hostile.log" <<'EOF'
one\ntwo\r\x1b[31m $(touch PWNED3) @GPVAL_VERSION     1
EOF
[[ $(wc -l < "$work/hostile.log") -eq 8 ]] || fail "the output is not the header, 5 rows and the CSV and chart lines"
python3 - "$work/hostile/names.csv" "$work/hostile/names.json" <<'EOF' || fail "the CSV does not hold the exact names"
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
names = [r["model"] for r in json.load(open(sys.argv[2]))]
assert [r[0] for r in rows[1:]] == names, (rows, names)
EOF
echo "hostile model names: drawn as text, no command ran, the table escaped, the CSV exact"

# Bad input: one clear sentence naming the file (and the field), non-zero exit.
expect_error() {  # expect_error WHAT PATTERN COMMAND...
  local what=$1 pattern=$2; shift 2
  if "$@" > "$work/bad.log" 2>&1; then fail "$what: exit code 0"; fi
  grep -q -- "$pattern" "$work/bad.log" || { cat "$work/bad.log"; fail "$what: message lacks '$pattern'"; }
}
echo '{"model": "x", "world_size": 2}' > "$work/norate.json"
expect_error "missing rate" "norate.json: the field 'images_per_sec' is missing" "$dptrain" report "$work/norate.json"
printf '{"type": "summary", "model": "x", "world_size": 1, "images_per_sec_overall": 3}\nnot json\n' > "$work/broken.jsonl"
expect_error "broken line" "broken.jsonl:2: not JSON" "$dptrain" report "$work/broken.jsonl"
echo '{"type": "step", "step": 1}' > "$work/nosummary.jsonl"
expect_error "no summary" "nosummary.jsonl' holds no result" "$dptrain" report "$work/nosummary.jsonl"
expect_error "control character in the chart's path" "holds a control character" \
  "$dptrain" report "$work/a1.json" --plot "$work/new"$'\n'"line.png"
expect_error "missing gnuplot" "needs gnuplot" env -u GNUPLOT PATH=/nonexistent "$dptrain" report "$work/a1.json" --plot "$work/x.png"

# With the C4130-G profile: a predicted speedup beside each row of a model with a 1-GPU run (googlenet:
# its 100 images/s at batch 32), none for inception-bn (no 1-GPU run) or lenet (no batch size), a note
# saying why, the predicted columns in the CSV and dashed lines in the chart's script.
"$dptrain" report "$work"/a*.json "$work"/b*.json "$work/train.jsonl" --profile "$repo/slurm/partitions/c4130-g.env" \
  --csv "$work/pred.csv" --plot "$work/pred.png" > "$work/pred.log" 2>&1 || { cat "$work/pred.log"; fail "report --profile"; }
cat "$work/pred.log" "$work/pred.csv"
grep -q "no prediction for inception-bn: it needs a 1-GPU run" "$work/pred.log" || fail "no note for inception-bn"
grep -q "no prediction for lenet: it needs a 1-GPU run that says its batch size" "$work/pred.log" || fail "no note for lenet"
[[ $(head -n 1 "$work/pred.csv") == "model,gpus,images_per_sec,speedup,efficiency,runs,predicted_images_per_sec,predicted_speedup" ]] ||
  fail "the CSV header with predictions"
python3 - "$work/pred.csv" <<'PY' || fail "the predicted figures"
import csv, sys
rows = {(r["model"], int(r["gpus"])): r for r in csv.DictReader(open(sys.argv[1]))}
one = rows[("googlenet", 1)]
assert abs(float(one["predicted_speedup"]) - 1) < 1e-9 and abs(float(one["predicted_images_per_sec"]) - 100) < 1e-6, one
previous = 1.0
for gpus in (2, 4, 8):
    s = float(rows[("googlenet", gpus)]["predicted_speedup"])
    assert previous < s <= gpus + 1e-9, (gpus, s)  # more GPUs, never beyond linear
    previous = s
assert rows[("inception-bn", 2)]["predicted_speedup"] == "", rows[("inception-bn", 2)]
PY
grep -q "'googlenet (predicted)' with lines dashtype 3" "$work/pred.png.gp" || fail "no predicted line in the chart"
echo "PASS"
