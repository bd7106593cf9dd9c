#!/usr/bin/env bash
# End-to-end: `dptrain predict` with the shipped C4130-G profile (the whitepaper's GoogLeNet rate),
# from a real 1-rank `dptrain bench --json`, its JSON and CSV, and clear errors on bad input.
set -uo pipefail
dptrain=$1
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"
profile=$repo/slurm/partitions/c4130-g.env

"$dptrain" predict --model googlenet --gpus 1,2,4,8,12,16 --batch-size 144 --images-per-second 220 \
  --profile "$profile" --json "$work/g.json" --csv "$work/g.csv" > "$work/g.log" 2>&1 || { cat "$work/g.log"; fail "predict"; }
cat "$work/g.log"
grep -q "^16    4      144 " "$work/g.log" || fail "no 16-GPU row on 4 nodes at batch 144"
[[ $(wc -l < "$work/g.csv") -eq 7 ]] || fail "expected a header and 6 rows in the CSV"
python3 - "$work/g.json" <<'PY' || fail "the JSON's figures"
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["rows"]
assert [r["gpus"] for r in rows] == [1, 2, 4, 8, 12, 16], rows
assert abs(rows[0]["speedup"] - 1) < 1e-9 and rows[0]["allreduce_seconds"] == 0
assert abs(rows[0]["compute_seconds"] - 144 / 220) < 1e-9
for r in rows:
    assert 0 < r["efficiency"] <= 1 + 1e-9, r
    assert abs(r["images_per_sec"] - r["gpus"] * r["batch_per_gpu"] / r["step_seconds"]) < 1e-6 * r["images_per_sec"]
    assert r["bound"] in ("compute", "communication", "data")
speedups = [r["speedup"] for r in rows]
assert speedups == sorted(speedups), speedups
assert j["gradient_bytes"] > 50e6  # googlenet with its auxiliary heads: 13.4 M parameters
PY

# Strong scaling (the whitepaper's Inception-BN batches) names its scaling and divides the batch.
"$dptrain" predict --model inception-bn --gpus 1,2,4,8,16 --global-batch 64,128,256,256,256 \
  --images-per-second 176 --profile "$profile" > "$work/s.log" 2>&1 || { cat "$work/s.log"; fail "strong scaling"; }
if ! grep -q "strong scaling" "$work/s.log" || ! grep -q "^16    4      16 " "$work/s.log"; then
  cat "$work/s.log"
  fail "strong scaling rows"
fi

# From a measured 1-rank benchmark.
"$dptrain" bench --model lenet --image-size 28 --classes 10 --batch-size 16 --steps 3 --warmup 1 \
  --json "$work/bench.json" > "$work/bench.log" 2>&1 || { cat "$work/bench.log"; fail "bench"; }
"$dptrain" predict --model lenet --image-size 28 --classes 10 --gpus 1,4 --bench "$work/bench.json" \
  --intra-gbps 6 --inter-gbps 10 > "$work/b.log" 2>&1 || { cat "$work/b.log"; fail "predict from a bench"; }
grep -q "^4     1      32 " "$work/b.log" || { cat "$work/b.log"; fail "the rows of a bench-based prediction"; }

# Bad input: exit 1 and one clear line.
expect_error() {  # expect_error TEXT ARGS...: predict fails with exit 1 naming TEXT
  local text=$1; shift
  "$dptrain" predict "$@" > "$work/err.log" 2>&1
  local rc=$?
  [[ $rc -eq 1 ]] || { cat "$work/err.log"; fail "exit $rc, not 1, for: $*"; }
  grep -q -- "$text" "$work/err.log" || { cat "$work/err.log"; fail "the error does not say '$text'"; }
}
expect_error "one GPU's training rate" --model lenet --profile "$profile"
expect_error "bus bandwidths" --model lenet --images-per-second 100
expect_error "one value or one per --gpus entry" --model lenet --images-per-second 100 --profile "$profile" \
  --gpus 1,2,4 --batch-size 8,16
python3 - "$work/bench.json" <<'PY' || fail "the bench JSON's compute time and gradient bytes"
import json, sys
j = json.load(open(sys.argv[1]))
# One rank computes its whole step: at least the fastest step's time (the rate is a mean of step rates).
assert j["batch_size"] / j["images_per_sec_max"] * 0.99 <= j["compute_seconds_per_step"] < 10, j
assert j["gradient_bytes"] == 4 * j["parameters"] and j["classes"] == 10, j
PY
# A bench of several ranks without its compute time (an older bench) cannot say what one GPU does.
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); j['world_size']=2; del j['compute_seconds_per_step']; json.dump(j, open(sys.argv[2],'w'))" \
  "$work/bench.json" "$work/bench2.json"
expect_error "give a 1-rank bench" --model lenet --bench "$work/bench2.json" --profile "$profile"
expect_error "benchmarks lenet, not googlenet" --model googlenet --bench "$work/bench.json" --profile "$profile"
sed 's/DPTRAIN_PREDICT_INTER_GBPS:=10/DPTRAIN_PREDICT_INTER_GBPS:=fast/' "$profile" > "$work/bad.env"
expect_error "DPTRAIN_PREDICT_INTER_GBPS='fast' is not a non-negative number" --model lenet --images-per-second 100 \
  --profile "$work/bad.env"
grep -v DPTRAIN_PREDICT_LOADER_RATE "$profile" > "$work/short.env"
expect_error "has no DPTRAIN_PREDICT_LOADER_RATE" --model lenet --images-per-second 100 --profile "$work/short.env"
echo "PASS"
