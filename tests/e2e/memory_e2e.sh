#!/usr/bin/env bash
# End-to-end: `dptrain inspect` memory figures and limits (the GPUs we target: a 16 GiB P100 in fp32,
# a 141 GiB H200 in bf16), its errors, and `dptrain bench` reporting its peak beside the planned figure.
set -uo pipefail
dptrain=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# field JSON KEY: a field of the "memory" object of `inspect --json`, or of a flat bench result.
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("memory", d)[sys.argv[2]])' "$1" "$2"; }
largest() {  # largest MODEL LIMIT PRECISION: the largest batch per rank on the CUDA backend
  "$dptrain" inspect --model "$1" --memory-limit "$2" --precision "$3" --backend cuda --json > "$work/m.json" ||
    fail "inspect --model $1 --memory-limit $2 failed"
  field "$work/m.json" largest_batch
}
rn50=$(largest resnet50 16GiB fp32); echo "resnet50 fp32 16 GiB: $rn50"
(( rn50 >= 64 )) || fail "ResNet-50 fits only batch $rn50 in 16 GiB"
v3=$(largest inception-v3 16GiB fp32); echo "inception-v3 fp32 16 GiB: $v3"
(( v3 >= 32 )) || fail "Inception-V3 fits only batch $v3 in 16 GiB"
h200=$(largest resnet50 141GiB bf16); echo "resnet50 bf16 141 GiB: $h200"
(( h200 >= 512 )) || fail "ResNet-50 fits only batch $h200 in 141 GiB (bf16)"
old=$(field "$work/m.json" largest_batch_unplanned)
(( old * 2 < h200 )) || fail "the old scheme's batch $old is not far below the planned $h200"

# The inference plan at a limit far beyond this machine's memory: nothing is allocated to find it.
"$dptrain" inspect --model googlenet --memory-limit 141GiB --inference --backend cuda --json > "$work/i.json" ||
  fail "inspect --inference --memory-limit 141GiB failed"
inference=$(field "$work/i.json" largest_batch)
(( inference > h200 )) || fail "the forward-only plan fits only $inference images"
"$dptrain" inspect --model lenet --memory-limit 100TB > "$work/huge.txt" || fail "a 100 TB limit failed"
grep -q "largest batch per rank in .*: at least 1048576" "$work/huge.txt" || { cat "$work/huge.txt"; fail "a huge limit is not capped"; }
expect_bad_combo() { if "$dptrain" inspect "$@" > /dev/null 2>&1; then fail "inspect $* succeeded"; fi; }

# The human table names every part and the limit.
"$dptrain" inspect --model googlenet --batch-size 64 --memory-limit 16G > "$work/t.txt" || fail "inspect table failed"
for part in "parameters (fp32)" "optimizer state" "activations + gradients" "workspace" "total" "largest batch per rank in 16.0 GiB"; do
  grep -qF "$part" "$work/t.txt" || fail "the memory table has no '$part'"
done
# Into a file, not `| grep -q`: grep leaving at the first match would kill dptrain with SIGPIPE, which
# pipefail reports as a failure (it did, once in CI).
"$dptrain" inspect --model googlenet --batch-size 64 --inference > "$work/inference.txt" || fail "inspect --inference failed"
grep -q "inference (dptrain eval)" "$work/inference.txt" || fail "no inference table"

# Bad input: one sentence and a non-zero exit.
expect_error() {  # expect_error TEXT ARGS...: the command fails and says TEXT
  local text=$1; shift
  if "$dptrain" "$@" > "$work/out" 2>&1; then fail "'$*' succeeded"; fi
  grep -qF "$text" "$work/out" || { cat "$work/out"; fail "'$*' did not say '$text'"; }
}
expect_error "is not a memory size" inspect --model resnet50 --memory-limit 16
expect_error "is not a memory size" inspect --model resnet50 --memory-limit lots
expect_error "cuda backend only" inspect --model resnet50 --precision bf16 --backend cpu
expect_error "unknown model" inspect --model vgg19 --memory-limit 16GiB
"$dptrain" inspect --model resnet50 --memory-limit 100MiB --backend cuda > "$work/small.txt" || fail "a tiny limit failed"
grep -q "not even one image fits" "$work/small.txt" || fail "a limit below one image does not say so"

expect_bad_combo --list --memory-limit 16GiB
mkdir -p "$work/ckpt"
expect_bad_combo "$work/ckpt" --batch-size 8

# bench: the peak it measured beside the plan (within 20% on a model whose activations dominate),
# planned and with --no-memory-plan.
"$dptrain" bench --model googlenet --batch-size 8 --steps 1 --warmup 0 --json "$work/g.json" > /dev/null || fail "googlenet bench failed"
python3 - "$work/g.json" <<'PY' || fail "googlenet's measured peak is not within 20% of the planned figure"
import json, sys
d = json.load(open(sys.argv[1]))
ratio = d["peak_memory_bytes"] / d["planned_memory_bytes"]
print(f"googlenet batch 8: peak {d['peak_memory_bytes'] / 2**20:.0f} MiB, planned {d['planned_memory_bytes'] / 2**20:.0f} MiB, ratio {ratio:.2f}")
sys.exit(0 if 0.8 <= ratio <= 1.2 else 1)
PY
"$dptrain" bench --model inception-mini --classes 10 --image-size 28 --batch-size 32 --steps 2 --warmup 1 \
  --json "$work/b.json" > "$work/b.txt" || fail "bench failed"
grep -q "^peak memory: .* resident, planned" "$work/b.txt" || fail "bench prints no peak memory line"
peak=$(field "$work/b.json" peak_memory_bytes) planned=$(field "$work/b.json" planned_memory_bytes)
(( peak > planned / 2 && planned > 0 )) || fail "peak $peak and planned $planned bytes do not agree"
[[ $(field "$work/b.json" memory_planned) == True ]] || fail "bench JSON does not say the memory was planned"
"$dptrain" bench --model inception-mini --classes 10 --image-size 28 --batch-size 32 --steps 1 --warmup 0 \
  --no-memory-plan --json "$work/u.json" > /dev/null || fail "bench --no-memory-plan failed"
[[ $(field "$work/u.json" memory_planned) == False ]] || fail "--no-memory-plan is not in the JSON"
(( $(field "$work/u.json" planned_memory_bytes) > planned )) || fail "one buffer per tensor is not planned larger"
# A run that cannot fit is refused at start (exit 105) with the figures and the largest batch that
# fits; that batch then starts; --skip-memory-check starts anyway. Slurm's --mem is the limit here
# (60 MB for bench, 2 MB for train and eval), and the check comes before any work.
"$dptrain" data synth "$work/synth" --classes 4 --per-class 8 --val-per-class 2 --size 28 > /dev/null ||
  fail "the images for the memory check"
"$dptrain" data convert imagenet "$work/synth" "$work/data" --size 28 --shards 1 --val-shards 1 > /dev/null ||
  fail "the dataset for the memory check"
refused() {  # refused MB WHAT ARGS...: exit code 105 under Slurm's --mem of MB; prints the largest batch
  local got mb=$1 what=$2
  shift 2
  SLURM_MEM_PER_NODE=$mb "$dptrain" "$@" > "$work/refused.txt" 2>&1
  got=$?
  [[ $got -eq 105 ]] || { cat "$work/refused.txt" >&2; fail "$what: exit code $got, not 105"; }
  grep -q "this rank may use (Slurm's --mem)" "$work/refused.txt" ||
    { cat "$work/refused.txt" >&2; fail "$what: the refusal does not give the limit and its source"; }
  ! grep -qE "^epoch |^images/s|validation" "$work/refused.txt" || fail "$what: work was done before the refusal"
  grep -oE "largest batch that fits is [0-9]+" "$work/refused.txt" | grep -oE "[0-9]+$" ||
    { grep -q "Not even one image fits" "$work/refused.txt" && echo 0; } ||
    { cat "$work/refused.txt" >&2; fail "$what: no largest batch"; }
}
bench=(bench --model lenet --classes 4 --image-size 28 --steps 1 --warmup 0)
fits=$(refused 60 "bench at batch 60000" "${bench[@]}" --batch-size 60000) || exit 1
(( fits > 0 && fits < 60000 )) || fail "the largest batch that fits is $fits"
SLURM_MEM_PER_NODE=60 "$dptrain" "${bench[@]}" --batch-size "$fits" > "$work/fits.txt" 2>&1 ||
  { cat "$work/fits.txt"; fail "the batch the refusal named ($fits) is refused too"; }
SLURM_MEM_PER_NODE=60 "$dptrain" "${bench[@]}" --batch-size "$((fits + 1))" > /dev/null 2>&1 &&
  fail "one image more than the largest batch that fits ($fits) is not refused"
SLURM_MEM_PER_NODE=1 "$dptrain" "${bench[@]}" --batch-size 8 --skip-memory-check > "$work/skip.txt" 2>&1 ||
  { cat "$work/skip.txt"; fail "--skip-memory-check"; }
refused 2 "train" train --model lenet --data "$work/data" --steps 1 --batch-size 32 > /dev/null || exit 1
"$dptrain" train --model lenet --data "$work/data" --steps 1 --batch-size 4 --checkpoint-dir "$work/ckpt" > /dev/null ||
  fail "the checkpoint for eval"
refused 2 "eval with --no-memory-plan" eval --checkpoint "$work/ckpt" --data "$work/data" --batch-size 8 \
  --no-memory-plan > /dev/null || exit 1
echo "memory e2e: all checks passed"
