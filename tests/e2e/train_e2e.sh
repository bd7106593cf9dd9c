#!/usr/bin/env bash
# End-to-end: the real dptrain command on the real Fashion-MNIST files. Converts, verifies, trains a
# few steps with metrics, and checks that bad datasets fail with one clear sentence and exit non-zero.
set -uo pipefail
dptrain=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$dptrain" data convert fashion-mnist "$work/fm" --shards 3 > "$work/convert.log" 2>&1 || { cat "$work/convert.log"; fail "conversion"; }
"$dptrain" data verify "$work/fm" > "$work/verify.log" 2>&1 || { cat "$work/verify.log"; fail "verify of a fresh conversion"; }

"$dptrain" train --model lenet --data "$work/fm" --steps 30 --batch-size 32 --lr 0.1 --log-every 10 \
  --metrics "$work/metrics.jsonl" > "$work/train.log" 2>&1 || { cat "$work/train.log"; fail "training"; }
cat "$work/train.log"
grep -q '"type": "summary"' "$work/metrics.jsonl" || fail "no summary line in the metrics"
[[ $(grep -c '"type": "step"' "$work/metrics.jsonl") -eq 3 ]] || fail "expected 3 step lines in the metrics"
top1=$(sed -n 's/.*"validation_top1": \([0-9.]*\).*/\1/p' "$work/metrics.jsonl")
awk -v a="$top1" 'BEGIN { exit !(a > 0.5) }' || fail "validation top-1 $top1 after 30 steps of lenet (expected > 0.5)"

# Bad input: each is one sentence naming the file, and a non-zero exit.
expect_error() {  # expect_error WHAT PATTERN COMMAND...
  local what=$1 pattern=$2; shift 2
  if "$@" > "$work/bad.log" 2>&1; then fail "$what: exit code 0"; fi
  grep -q -- "$pattern" "$work/bad.log" || { cat "$work/bad.log"; fail "$what: message lacks '$pattern'"; }
}
cp -r "$work/fm" "$work/missing" && rm "$work/missing/train-00001-of-00003.h5"
expect_error "missing shard" "train-00001-of-00003.h5" \
  "$dptrain" train --model lenet --data "$work/missing" --steps 2000 --batch-size 32
cp -r "$work/fm" "$work/truncated" && truncate -s 100000 "$work/truncated/train-00000-of-00003.h5"
expect_error "truncated shard" "train-00000-of-00003.h5" \
  "$dptrain" train --model lenet --data "$work/truncated" --steps 5 --batch-size 32
expect_error "verify of a truncated shard" "train-00000-of-00003.h5" "$dptrain" data verify "$work/truncated"
cp -r "$work/fm" "$work/version" && sed -i 's/"version": 1/"version": 7/' "$work/version/manifest.json"
expect_error "manifest version" "version 7 is not supported" \
  "$dptrain" train --model lenet --data "$work/version" --steps 5 --batch-size 32
expect_error "unknown model" "unknown model 'vgg'" "$dptrain" train --model vgg --data "$work/fm" --steps 5
echo "PASS"
