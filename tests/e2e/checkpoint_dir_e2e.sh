#!/usr/bin/env bash
# End-to-end: the checkpoint directory's safeguards, with the real command on one rank and two:
#  1. a run holds DIR/dptrain.lock: a second run on DIR (1 rank, and 2 ranks, which must all stop and
#     not hang) is refused and names the holder's pid; once the holder is killed with SIGKILL (as at a
#     Slurm time limit) the next run takes the lock over, says so, and resumes from its checkpoint;
#  2. a directory that cannot be written is refused at start;
#  3. weights that become infinite (a learning rate of 1e300) are not checkpointed: every rank stops
#     with an error naming the step, `latest` keeps the last good checkpoint, and a resume with a sane
#     learning rate continues from it;
#  4. `--resume auto` on a directory whose checkpoints are all damaged is an error listing each;
#     `--resume none` starts afresh.
set -uo pipefail
dptrain=$1
mpiexec=$2
work=$(mktemp -d)
background=""
cleanup() {
  [[ -n $background ]] && kill -KILL "$background" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
mpi=("$mpiexec" --oversubscribe --allow-run-as-root)
# run NAME EXPECTED_EXIT COMMAND...: as in checkpoint_e2e.sh, with a 120 s limit (a hang fails).
run() {
  local name=$1 expected=$2 code=0
  shift 2
  timeout 120 "$@" > "$work/$name.log" 2>&1 || code=$?
  [[ $code -ne 124 ]] || { cat "$work/$name.log"; fail "$name: still running after 120 s (a rank hangs?)"; }
  if [[ $expected == error ]]; then
    [[ $code -ne 0 && $code -ne 75 ]] || { cat "$work/$name.log"; fail "$name: exit code $code, expected an error"; }
  else
    [[ $code -eq $expected ]] || { cat "$work/$name.log"; fail "$name: exit code $code, expected $expected"; }
  fi
}
expect_in() {  # expect_in NAME PATTERN WHAT: the log of NAME matches PATTERN (grep -E)
  grep -Eq -- "$2" "$work/$1.log" || { cat "$work/$1.log"; fail "$1: $3 (no match for '$2')"; }
}

run convert 0 "$dptrain" data convert fashion-mnist "$work/fm" --shards 2
common=(train --model lenet --data "$work/fm" --threads 1 --batch-size 16 --log-every 5)
sane=(--lr 0.05)

# 1. The lock. The holder trains "forever", checkpointing every 5 steps, until it is killed.
dir=$work/locked
"$dptrain" "${common[@]}" "${sane[@]}" --steps 100000 --checkpoint-every 5 --checkpoint-dir "$dir" > "$work/holder.log" 2>&1 &
background=$!
holder=$background
for _ in $(seq 600); do
  [[ -f $dir/latest ]] && break
  kill -0 "$holder" 2> /dev/null || { cat "$work/holder.log"; fail "the holder ended before its first checkpoint"; }
  sleep 0.1
done
[[ -f $dir/latest ]] || { cat "$work/holder.log"; fail "the holder wrote no checkpoint in 60 s"; }
grep -q "pid $holder," "$dir/dptrain.lock" || fail "the lock file does not name the holder (pid $holder): $(cat "$dir/dptrain.lock")"
run second error "$dptrain" "${common[@]}" "${sane[@]}" --steps 10 --checkpoint-dir "$dir"
expect_in second "error: the checkpoint directory $dir is in use by another run \(host [^,]*, pid $holder," \
  "the second run was not refused, naming the holder"
run second_mpi error "${mpi[@]}" -n 2 "$dptrain" "${common[@]}" "${sane[@]}" --steps 10 --checkpoint-dir "$dir" --stall-timeout 60s
expect_in second_mpi "error: the checkpoint directory $dir is in use by another run .*pid $holder," \
  "the 2-rank run was not refused"
kill -KILL "$holder"
wait "$holder" 2> /dev/null
background=""
[[ -s $dir/dptrain.lock ]] || fail "the killed holder's lock file is empty: a SIGKILL cannot have emptied it"
saved=$(cat "$dir/latest")
saved_step=${saved#ckpt-}
saved_step=$((10#${saved_step%.h5}))
run takeover 0 "$dptrain" "${common[@]}" "${sane[@]}" --steps $((saved_step + 1)) --reschedule --checkpoint-dir "$dir"
expect_in takeover "taking over $dir/dptrain.lock, whose holder ended without releasing it \(.*pid $holder," \
  "the run after the killed holder did not say it took the lock over"
expect_in takeover "resuming from .*$saved" "the run after the killed holder did not resume from $saved"
[[ ! -s $dir/dptrain.lock ]] || fail "a run that ended cleanly left its lock file non-empty: $(cat "$dir/dptrain.lock")"
echo "1. the lock: a second run (1 and 2 ranks) refused naming pid $holder; after SIGKILL taken over, resumed from $saved"

# 2. A directory that cannot be written (/proc: not even root can create files there) stops the start.
run unwritable error "$dptrain" "${common[@]}" "${sane[@]}" --steps 10 --checkpoint-dir /proc
expect_in unwritable "error: the checkpoint directory /proc is not writable" "no clear error for an unwritable directory"
echo "2. an unwritable checkpoint directory is refused at start"

# 3. Diverged weights are not checkpointed, on 2 ranks; latest keeps the last good one.
dir=$work/diverged
run good 75 "${mpi[@]}" -n 2 "$dptrain" "${common[@]}" "${sane[@]}" --steps 20 --checkpoint-dir "$dir" --stop-at-step 2
run blowup error "${mpi[@]}" -n 2 "$dptrain" "${common[@]}" --steps 20 --checkpoint-dir "$dir" --checkpoint-every 1 \
  --lr 1e300 --stall-timeout 60s
expect_in blowup "error: step 3: not writing a checkpoint in $dir, because its .* not finite .*: the training has diverged; $dir/latest still names ckpt-000000002.h5" \
  "no clear error for diverged weights"
[[ $(cat "$dir/latest") == ckpt-000000002.h5 && ! -e $dir/ckpt-000000003.h5 ]] ||
  fail "diverged weights were checkpointed: latest is $(cat "$dir/latest"), $(ls "$dir")"
run after 0 "$dptrain" "${common[@]}" "${sane[@]}" --steps 4 --checkpoint-dir "$dir"
expect_in after "resuming from .*ckpt-000000002.h5: step 2" "the resume after the refusal did not continue from step 2"
echo "3. infinite weights at step 3 (2 ranks): refused, latest stays ckpt-000000002.h5, resumed from it"

# 4. Only damaged checkpoints: an error naming each; --resume none starts afresh.
dir=$work/damaged
run two 75 "$dptrain" "${common[@]}" "${sane[@]}" --steps 20 --checkpoint-every 2 --checkpoint-dir "$dir" --stop-at-step 4
files=("$dir"/ckpt-*.h5)
[[ ${#files[@]} -eq 2 ]] || fail "expected 2 checkpoints, found ${files[*]}"
: > "${files[0]}"
truncate -s 1000 "${files[1]}"
run all_damaged 1 "$dptrain" "${common[@]}" "${sane[@]}" --steps 20 --checkpoint-dir "$dir"
expect_in all_damaged "error: --resume auto: the checkpoint directory $dir holds 2 checkpoints but none can be used" \
  "no error for a directory of damaged checkpoints"
for f in "${files[@]}"; do expect_in all_damaged "$f" "the error does not name $f"; done
run afresh 75 "$dptrain" "${common[@]}" "${sane[@]}" --steps 20 --checkpoint-dir "$dir" --resume none --stop-at-step 1
! grep -q "resuming from" "$work/afresh.log" || fail "--resume none resumed"
echo "4. damaged checkpoints only: --resume auto lists both and stops; --resume none starts afresh"
echo "PASS"
