#!/usr/bin/env bash
# End-to-end: dptrain's exit codes. `dptrain info --exit-codes` (core/exit_codes.hpp, the one table)
# lists the same codes as the guide's table (docs/troubleshooting.md), and each code is provoked here
# and returned: 0, 1, 75, 79, 105, 106, 108, 109, 76 (a frozen rank under mpiexec), Ctrl-C (75 after
# a checkpoint; a second one 130 at once). 77 (dptrain preflight naming a slow node) is provoked on the
# Slurm test cluster by e2e_slurm_preflight.
set -uo pipefail
dptrain=${1:?usage: $0 DPTRAIN MPIEXEC}
mpiexec=${2:?usage: $0 DPTRAIN MPIEXEC}
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"

# The table and the guide.
table=$("$dptrain" info --exit-codes) || fail "dptrain info --exit-codes failed"
codes=$(cut -f1 <<< "$table" | sort -n | tr '\n' ' ')
echo "codes: $codes"
documented=$(sed -n '/^## Exit codes/,/^## /p' "$repo/docs/troubleshooting.md" | grep -oE '^\| [0-9]+ \|' |
               grep -oE '[0-9]+' | sort -n | tr '\n' ' ')
[[ $documented == "$codes" ]] ||
  fail "docs/troubleshooting.md's exit codes ($documented) are not dptrain info --exit-codes' ($codes)"
# checkpoints.md's table (a row may name several codes: "| 105, 106 |") lists no code dptrain lacks.
while read -r code; do
  grep -qx "$code" <<< "$(cut -f1 <<< "$table")" || fail "docs/checkpoints.md lists exit code $code, which dptrain has not"
done < <(sed -n '/^## Exit codes/,/^## /p' "$repo/docs/checkpoints.md" | grep -oE '^\| [0-9, ]+ \|' | grep -oE '[0-9]+')

synth_data 512  # 2048 training images: batches of 1024 for the Ctrl-C runs below
data=$work/data
# expect CODE WHAT ARGS...: dptrain ARGS exits with CODE; a refusal says "dptrain: error:".
expect() {
  local want=$1 what=$2 got
  shift 2
  "$dptrain" "$@" > "$work/out.txt" 2>&1
  got=$?
  [[ $got -eq $want ]] || { cat "$work/out.txt"; fail "$what: exit code $got, not $want"; }
  if (( want != 0 && want != 75 && want != 79 )); then
    grep -q "^dptrain: error: " "$work/out.txt" || { cat "$work/out.txt"; fail "$what: no 'dptrain: error:' line"; }
  fi
  echo "ok: $what -> $got"
}
train=(train --model lenet --data "$data" --batch-size 4)
expect 0 "a finished run" "${train[@]}" --steps 2
expect 1 "a dataset directory without a manifest" train --model lenet --data "$work" --steps 2
expect 75 "--stop-at-step with a checkpoint directory" "${train[@]}" --steps 20 --stop-at-step 2 --checkpoint-dir "$work/ckpt" \
  --time-limit 2h
[[ -f $work/ckpt/latest ]] || fail "exit code 75 without a checkpoint"
# The time limit's line before it must not change how the start line prints the rate (0.1 x 4 / 256).
grep -q "lr 0.0015625 (0.1 per 256)" "$work/out.txt" || { cat "$work/out.txt"; fail "the start line's learning rate"; }
expect 79 "--stop-at-step without a checkpoint directory" "${train[@]}" --steps 20 --stop-at-step 2
grep -q "warning: no --checkpoint-dir" "$work/out.txt" || { cat "$work/out.txt"; fail "no warning at the start of a run that a stop would lose"; }
# A checkpoint directory that cannot be made, or a file where it belongs: a refused value, at start.
expect 105 "--checkpoint-dir /proc/self/ckpt" "${train[@]}" --steps 2 --checkpoint-dir /proc/self/ckpt
: > "$work/a-file"
expect 105 "--checkpoint-dir naming a file" "${train[@]}" --steps 2 --checkpoint-dir "$work/a-file"
expect 105 "--keep -1" "${train[@]}" --steps 2 --keep -1
expect 105 "--time-limit 0" "${train[@]}" --steps 2 --time-limit 0
expect 105 "--schedule Cosine" "${train[@]}" --steps 2 --schedule Cosine
expect 105 "--checkpoint-every soon" "${train[@]}" --steps 2 --checkpoint-every soon
expect 105 "--stall-timeout 0" "${train[@]}" --steps 2 --stall-timeout 0
expect 105 "--steps x" "${train[@]}" --steps x
expect 105 "--lr with two values" "${train[@]}" --steps 2 --lr
# Integers that would wrap, clamp or read as octal or hex, in every command: one strict reading.
for value in -1 18446744073709551616 010 0x10 +3 1e3; do
  expect 105 "train --seed $value" "${train[@]}" --steps 2 --seed "$value"
  expect 105 "bench --steps $value" bench --model lenet --steps "$value"
done
expect 105 "bench --steps 2^63" bench --model lenet --steps 9223372036854775808
expect 105 "train --stop-at-step 2^64-1" "${train[@]}" --steps 2 --stop-at-step 18446744073709551615
expect 105 "train --steps 2^63" "${train[@]}" --steps 9223372036854775808
expect 105 "train --epochs 2^32+1" "${train[@]}" --epochs 4294967297
grep -q "4294967297' is not a value this option can hold" "$work/out.txt" || { cat "$work/out.txt"; fail "the message of a value beyond an int"; }
expect 105 "bench --batch-size 2^31" bench --model lenet --batch-size 2147483648
expect 105 "inspect --classes 010" inspect --model lenet --classes 010
expect 105 "eval --batch-size -1" eval --checkpoint "$work" --data "$data" --batch-size -1
expect 105 "data convert fashion-mnist --shards 0x2" data convert fashion-mnist "$work" "$work/converted" --shards 0x2
# A resume that would change the length a cosine schedule decays over is refused; --reschedule allows it.
expect 105 "a resume with another length" "${train[@]}" --steps 30 --checkpoint-dir "$work/ckpt"
grep -q "add --reschedule" "$work/out.txt" || { cat "$work/out.txt"; fail "the refused resume does not name --reschedule"; }
expect 0 "the same resume with --reschedule" "${train[@]}" --steps 4 --checkpoint-dir "$work/ckpt" --reschedule
grep -q "^rescheduled: the cosine schedule now decays over 4 steps, not 20" "$work/out.txt" || { cat "$work/out.txt"; fail "no rescheduled line"; }
expect 106 "neither --epochs nor --steps" "${train[@]}"
expect 106 "no --model" train --data "$data" --steps 2
expect 108 "--epochs and --steps" "${train[@]}" --steps 2 --epochs 1
expect 108 "--warmup-epochs as long as the run" "${train[@]}" --steps 2 --warmup-epochs 1
grep -q "warmup-epochs 1 is 512 steps (512 per epoch at a global batch of 4), not fewer than the run's 2 steps" "$work/out.txt" ||
  { cat "$work/out.txt"; fail "the warm-up refusal does not give its numbers"; }
expect 108 "inspect --data with --classes" inspect --model lenet --data "$data" --classes 10
expect 0 "inspect --data" inspect --model lenet --data "$data"
grep -q "^lenet: input .*classes (from $data)" "$work/out.txt" || { cat "$work/out.txt"; fail "inspect --data does not say where its classes come from"; }
expect 109 "an unknown option" "${train[@]}" --steps 2 --bogus
expect 109 "an unknown subcommand argument" info extra

# Ctrl-C: a checkpoint and 75; a second Ctrl-C 50 ms after the first, while its step (about half a
# second with batches of 1024) or its checkpoint is still running: 130 at once.
interrupt() {  # interrupt TIMES: starts a run, sends SIGINT TIMES times; sets $code to its exit code
  local times=$1 pid
  rm -rf "$work/int"
  "$dptrain" train --model lenet --data "$work/data" --batch-size 1024 --steps 100000 --log-every 1 \
    --checkpoint-dir "$work/int" > "$work/int.txt" 2>&1 &
  pid=$!
  wait_for_line "$work/int.txt" "step 1/" "$pid" 120 "the interrupted run"
  for _ in $(seq "$times"); do
    kill -INT "$pid"
    sleep 0.05
  done
  wait "$pid"
  code=$?
}
interrupt 1
[[ $code -eq 75 && -f $work/int/latest ]] || { cat "$work/int.txt"; fail "one Ctrl-C: exit code $code, not 75 with a checkpoint"; }
echo "ok: one Ctrl-C -> 75 with a checkpoint"
interrupt 2
[[ $code -eq 130 ]] || { cat "$work/int.txt"; fail "two Ctrl-C: exit code $code, not 130"; }
grep -q "second interrupt" "$work/int.txt" || { cat "$work/int.txt"; fail "two Ctrl-C: no message"; }
echo "ok: two Ctrl-C -> 130"

# 76: a rank frozen (SIGSTOP) inside the job; rank 0 names it after --stall-timeout (longer than the
# 5 s after which a rank unheard of is silent, not late) and ends the job.
run_mpi -n 2 "$dptrain" train --model lenet --data "$work/data" --batch-size 4 --steps 100000 --log-every 1 \
  --stall-timeout 8s --ranks-per-node 1 > "$work/frozen.txt" 2>&1 &
job=$!
wait_for_line "$work/frozen.txt" "step 2/" "$job" 120 "the 2-rank run"
rank1=$(pgrep -f -n "dptrain train --model lenet --data $work/data --batch-size 4 --steps 100000") ||
  fail "no rank of the 2-rank run found"
kill -STOP "$rank1"
wait "$job"
code=$?
kill -CONT "$rank1" 2> /dev/null
kill -9 "$rank1" 2> /dev/null
[[ $code -eq 76 ]] || { cat "$work/frozen.txt"; fail "a frozen rank: exit code $code, not 76"; }
grep -q "stopped answering" "$work/frozen.txt" || { cat "$work/frozen.txt"; fail "a frozen rank: not named"; }
echo "ok: a frozen rank -> 76"
echo PASS
