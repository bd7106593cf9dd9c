#!/usr/bin/env bash
# End-to-end: every file or directory a command will write is checked when its command line is read,
# before any work, on every command that has one: a path whose directory is missing, a directory
# where a file belongs, and a directory no file can be created in (/proc/self, refused even to root)
# end with exit code 105 and the path named, and no step, evaluation or conversion has run.
set -uo pipefail
dptrain=${1:?usage: $0 DPTRAIN}
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"

synth_data 4
data=$work/data
"$dptrain" train --model lenet --data "$data" --batch-size 4 --steps 2 --checkpoint-dir "$work/ckpt" \
  > "$work/setup.log" 2>&1 || { cat "$work/setup.log"; fail "the checkpoint for eval and export"; }
"$dptrain" bench --model lenet --batch-size 2 --steps 1 --warmup 0 --json "$work/bench.json" \
  > "$work/setup.log" 2>&1 || { cat "$work/setup.log"; fail "the bench result for report"; }
mkdir "$work/a-directory"
printf 'P6\n2 2\n255\n%012d' 0 > "$work/image.ppm"

# refused WHAT PATH ARGS...: dptrain ARGS exits 105, names PATH, and did no work.
refused() {
  local what=$1 path=$2 got
  shift 2
  timeout 120 "$dptrain" "$@" > "$work/out.txt" 2>&1
  got=$?
  [[ $got -eq 105 ]] || { cat "$work/out.txt"; fail "$what: exit code $got, not 105"; }
  grep -q "^dptrain: error: .*$path" "$work/out.txt" || { cat "$work/out.txt"; fail "$what: the error does not name $path"; }
  ! grep -qE "^epoch |validation|^images/s|converted|top-1" "$work/out.txt" ||
    { cat "$work/out.txt"; fail "$what: work was done before the refusal"; }
  echo "ok: $what"
}

for bad in /proc/self/out.json "$work/missing/out.json" "$work/a-directory"; do
  refused "train --metrics $bad" "$bad" train --model lenet --data "$data" --steps 2 --batch-size 4 --metrics "$bad"
  refused "train --failure-report $bad" "$bad" train --model lenet --data "$data" --steps 2 --batch-size 4 \
    --failure-report "$bad"
  refused "train --ready-file $bad" "$bad" train --model lenet --data "$data" --steps 2 --batch-size 4 --ready-file "$bad"
  refused "bench --json $bad" "$bad" bench --model lenet --batch-size 2 --steps 1 --json "$bad"
  refused "eval --json $bad" "$bad" eval --checkpoint "$work/ckpt" --data "$data" --json "$bad"
  refused "eval --logits $bad" "$bad" eval --checkpoint "$work/ckpt" --images "$work/image.ppm" --logits "$bad"
  refused "predict --json $bad" "$bad" predict --model googlenet --gpus 1 --json "$bad"
  refused "predict --csv $bad" "$bad" predict --model googlenet --gpus 1 --csv "$bad"
  refused "preflight --json $bad" "$bad" preflight --json "$bad"
  refused "report --csv $bad" "$bad" report "$work/bench.json" --csv "$bad"
  refused "report --plot $bad" "$bad" report "$work/bench.json" --plot "$bad"
  refused "plot -o $bad" "$bad" plot "$work/bench.json" -o "$bad"
  refused "export $bad" "$bad" export "$work/ckpt" "$bad"
done
# Directories: one that cannot be created, and a file where the directory belongs.
for bad in /proc/self/trace "$work/image.ppm"; do
  refused "train --trace $bad" "$bad" train --model lenet --data "$data" --steps 2 --batch-size 4 --trace "$bad"
  refused "data synth $bad" "$bad" data synth "$bad" --classes 2 --per-class 1
  refused "data convert imagenet $bad" "$bad" data convert imagenet "$work/synth" "$bad" --size 28
done
# A directory that does not exist yet under one that can be written is fine: it is created.
"$dptrain" train --model lenet --data "$data" --steps 1 --batch-size 4 --trace "$work/new/trace" \
  --metrics "$work/metrics.jsonl" > "$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "a trace directory to create"; }
[[ -s $work/metrics.jsonl ]] || fail "the metrics file was not written"
! compgen -G "$work/.dptrain-probe-*" > /dev/null || fail "a probe file was left behind"
echo "PASS"
