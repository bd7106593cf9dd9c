#!/usr/bin/env bash
# End-to-end checkpoints on the real Fashion-MNIST files, one rank and several (mpiexec):
#  1-2. a run stopped (exit 75) and resumed ends bit for bit where the uninterrupted run does, on 1 and 2 ranks;
#  3.   a 2-rank checkpoint resumes on 1 and on 4 ranks with the same global batch and data position;
#  4.   a truncated or empty newest checkpoint is skipped with a warning naming it;
#  5.   SIGUSR1 to one rank of two stops both after the same step with exactly one checkpoint, and so
#       do SIGUSR2 with --preempt-signal USR2 and SIGTERM with it; a signal as soon as --ready-file
#       exists (start-up, before any step) stops after the first step;
#  6.   `dptrain eval` of a checkpoint gives the training run's validation top-1 on 1 and 2 ranks;
#  7.   a checkpoint of another model is refused;
#  8.   dynamic loss scaling: a stopped and resumed run keeps its scale and clean-step count, bit for bit,
#       and (a power-of-two scale being exact in fp32) trains exactly like the unscaled run;
#  9.   --backend/--precision/--loss-scale/--preempt-signal mistakes end with one sentence.
set -uo pipefail
dptrain=$1
mpiexec=$2
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"
background=""
cleanup() {
  [[ -n $background ]] && kill "$background" 2> /dev/null
  [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
# run NAME EXPECTED_EXIT COMMAND...: runs it with its output in $work/NAME.log; shows the log and fails
# when the exit code is not the expected one (a number, or "error": any but 0 and 75).
run() {
  local name=$1 expected=$2 code=0
  shift 2
  "$@" > "$work/$name.log" 2>&1 || code=$?
  if [[ $expected == error ]]; then
    [[ $code -ne 0 && $code -ne 75 ]] || { cat "$work/$name.log"; fail "$name: exit code $code, expected an error"; }
  else
    [[ $code -eq $expected ]] || { cat "$work/$name.log"; fail "$name: exit code $code, expected $expected"; }
  fi
}
ckpt() { echo "$1/ckpt-$(printf %09d "$2").h5"; }
# same_groups A B GROUP...: the groups hold the same bytes in both files (h5diff without a tolerance).
same_groups() {
  local a=$1 b=$2 group
  shift 2
  for group in "$@"; do
    h5diff -r "$a" "$b" "$group" "$group" > "$work/h5diff.log" 2>&1 ||
      { head -n 40 "$work/h5diff.log"; fail "$group differs between $a and $b"; }
  done
}
# shellcheck source=tests/e2e/close_params.sh
source "$(dirname "$0")/close_params.sh"
# A field of `dptrain inspect --json` (one line, no spaces): a top-level integer.
inspect_field() { "$dptrain" inspect "$1" --json | grep -o "\"$2\":[0-9]*" | head -n 1 | cut -d: -f2; }
# The loss of the log line of step STEP.
logged_loss() { sed -n "s|.*step $2/[0-9]*  loss \([0-9.]*\).*|\1|p" "$1" | head -n 1; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
# within A B TOL [relative]: |A - B| <= TOL, or TOL * B with "relative".
within() { awk -v a="$1" -v b="$2" -v t="$3" -v r="${4:-}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= (r ? t * b : t)) }'; }

run convert 0 "$dptrain" data convert fashion-mnist "$work/fm" --shards 4
common=(train --model lenet --data "$work/fm" --lr 0.05 --threads 1 --steps 40 --checkpoint-every 20 --log-every 10)

# 1. Bit-exact resume on one rank.
run one_full 0 "$dptrain" "${common[@]}" --batch-size 16 --checkpoint-dir "$work/one_full" --metrics "$work/one_full.jsonl"
run one_stop 75 "$dptrain" "${common[@]}" --batch-size 16 --checkpoint-dir "$work/one_split" --stop-at-step 20
run one_resume 0 "$dptrain" "${common[@]}" --batch-size 16 --checkpoint-dir "$work/one_split"
grep -q "resuming from .*ckpt-000000020.h5: step 20" "$work/one_resume.log" ||
  { cat "$work/one_resume.log"; fail "the one-rank run did not resume from its step-20 checkpoint"; }
groups=(/params /optimizer /progress)
h5ls "$(ckpt "$work/one_full" 40)/buffers" > /dev/null 2>&1 && groups+=(/buffers)
same_groups "$(ckpt "$work/one_full" 40)" "$(ckpt "$work/one_split" 40)" "${groups[@]}"
echo "1. one rank: stopped at 20 and resumed = uninterrupted, bit for bit (${groups[*]})"

# 2. The same on two ranks; the stopped run's directory is copied for 3. before it resumes.
run two_full 0 run_mpi -n 2 "$dptrain" "${common[@]}" --batch-size 8 --checkpoint-dir "$work/two_full"
run two_stop 75 run_mpi -n 2 "$dptrain" "${common[@]}" --batch-size 8 --checkpoint-dir "$work/two_split" --stop-at-step 20
cp -r "$work/two_split" "$work/onto_one"
cp -r "$work/two_split" "$work/onto_four"
run two_resume 0 run_mpi -n 2 "$dptrain" "${common[@]}" --batch-size 8 --checkpoint-dir "$work/two_split"
grep -q "resuming from .*ckpt-000000020.h5: step 20" "$work/two_resume.log" ||
  { cat "$work/two_resume.log"; fail "the two-rank run did not resume from its step-20 checkpoint"; }
same_groups "$(ckpt "$work/two_full" 40)" "$(ckpt "$work/two_split" 40)" "${groups[@]}"
echo "2. two ranks: stopped at 20 and resumed = uninterrupted, bit for bit"

# 3. The 2-rank checkpoint of step 20 resumed on 1 and on 4 ranks, keeping the global batch of 16.
run onto_one 75 "$dptrain" "${common[@]}" --checkpoint-dir "$work/onto_one" --stop-at-step 30
run onto_four 75 run_mpi -n 4 "$dptrain" "${common[@]}" --checkpoint-dir "$work/onto_four" --stop-at-step 30
grep -q "1 rank x batch 16 = 16" "$work/onto_one.log" || { cat "$work/onto_one.log"; fail "1 rank did not keep the global batch"; }
grep -q "4 ranks x batch 4 = 16" "$work/onto_four.log" || { cat "$work/onto_four.log"; fail "4 ranks did not keep the global batch"; }
fresh10=$(logged_loss "$work/two_full.log" 10) fresh30=$(logged_loss "$work/two_full.log" 30)
for n in one four; do
  file=$(ckpt "$work/onto_$n" 30)
  [[ -f $file ]] || fail "the run resumed onto $n rank(s) wrote no checkpoint at step 30"
  step=$(inspect_field "$file" step) samples=$(inspect_field "$file" samples_in_epoch)
  [[ $step == 30 && $samples == 480 ]] ||
    fail "resumed onto $n rank(s): $file is at step '$step' with '$samples' samples of the epoch (expected 30 and 480)"
  loss=$(logged_loss "$work/onto_$n.log" 30)
  below "$loss" "$fresh10" || fail "resumed onto $n rank(s): loss $loss at step 30, not below the fresh run's $fresh10 at step 10"
  within "$loss" "$fresh30" 0.01 relative ||
    fail "resumed onto $n rank(s): loss $loss at step 30, the uninterrupted 2-rank run had $fresh30"
done
# Summation order differs, so the weights agree closely, not exactly. An element-wise relative
# tolerance fails on the weights that pass near zero; 1e-5 is about 1e-3 of lenet's typical weight.
close_params "$(ckpt "$work/onto_one" 30)" "$(ckpt "$work/onto_four" 30)" 1e-5 ||
  { head -n 40 "$work/h5diff.log"; fail "the parameters at step 30 differ by more than 1e-5 between 1 and 4 ranks"; }
! close_params "$(ckpt "$work/onto_one" 30)" "$(ckpt "$work/one_full" 40)" 1e-5 ||
  fail "the parameters at steps 30 and 40 agree within 1e-5: the comparison cannot tell runs apart"
echo "3. 2 ranks -> 1 and 4 ranks: step 30, 480 samples; loss $fresh10 (fresh, step 10) > $loss ~ $fresh30 (uninterrupted, step 30)"

# 4. A truncated or empty newest checkpoint is skipped: the run resumes from the one before.
newest=$(basename "$(ckpt "$work/one_full" 40)")
for damage in truncated empty; do
  cp -r "$work/one_full" "$work/$damage"
  if [[ $damage == truncated ]]; then
    truncate -s "$(($(stat -c %s "$work/$damage/$newest") / 2))" "$work/$damage/$newest"
  else
    : > "$work/$damage/$newest"
  fi
  run "$damage" 75 "$dptrain" "${common[@]}" --batch-size 16 --checkpoint-dir "$work/$damage" --stop-at-step 21
  grep -q "dptrain: warning: .*$newest" "$work/$damage.log" || { cat "$work/$damage.log"; fail "no warning naming the $damage $newest"; }
  grep -q "resuming from .*ckpt-000000020.h5: step 20" "$work/$damage.log" ||
    { cat "$work/$damage.log"; fail "with a $damage newest checkpoint, the run did not resume from step 20"; }
done
echo "4. a truncated and an empty newest checkpoint are skipped with a warning"

# 5. A signal to one rank of two: both stop after the same step, one checkpoint, exit 75. USR1 by
# default; with --preempt-signal USR2 (for jobs where NCCL or another library takes USR1) it is USR2,
# and TERM (Slurm's last word at the time limit and on scancel) works with either.
binary=$(readlink -f "$dptrain")
# wait_for_stop NAME: the background job (output in $work/NAME.log) must exit 75 after rank 0 reported
# the stop; sets `stopped` to the step it stopped after.
wait_for_stop() {
  local code=0
  wait "$background" || code=$?
  background=""
  [[ $code -eq 75 ]] || { cat "$work/$1.log"; fail "the $1 job exited with $code, expected 75"; }
  stopped=$(sed -n 's/^stop requested .* after step \([0-9]*\);.*/\1/p' "$work/$1.log")
  [[ -n $stopped ]] || { cat "$work/$1.log"; fail "$1: rank 0 did not report the stop"; }
}
rank_pids() {  # rank_pids PATTERN: the dptrain processes (not mpiexec) whose command line holds PATTERN
  local pid
  ranks=()
  for pid in $(pgrep -f -- "$1"); do
    [[ $(readlink -f "/proc/$pid/exe" 2> /dev/null) == "$binary" ]] && ranks+=("$pid")
  done
}
# signal_one_rank NAME SIGNAL [OPTIONS...]: a 2-rank run with OPTIONS into $work/NAME; SIGNAL to one
# rank once step 5 is logged; the run must stop with one checkpoint, at the step it reported.
signal_one_rank() {
  local name=$1 signal=$2
  shift 2
  "$mpiexec" --oversubscribe --allow-run-as-root -n 2 "$dptrain" train --model lenet --data "$work/fm" --lr 0.05 \
    --threads 1 --batch-size 8 --steps 100000 --checkpoint-every 0 --log-every 5 --checkpoint-dir "$work/$name" \
    "$@" > "$work/$name.log" 2>&1 &
  background=$!
  wait_for_line "$work/$name.log" "step 5/" "$background" 60 "the $name job"
  rank_pids "$work/$name"
  [[ ${#ranks[@]} -eq 2 ]] || fail "found ${#ranks[@]} dptrain rank processes of the $name job (${ranks[*]}), expected 2"
  target=$(printf '%s\n' "${ranks[@]}" | sort -n | tail -n 1)
  kill -s "$signal" "$target"
  wait_for_stop "$name"
  files=("$work/$name"/ckpt-*.h5)
  [[ ${#files[@]} -eq 1 && -f ${files[0]} ]] || fail "the $name job left ${#files[@]} checkpoints: ${files[*]}"
  [[ $(cat "$work/$name/latest") == "$(basename "${files[0]}")" ]] || fail "latest does not name ${files[0]}"
  [[ $(inspect_field "${files[0]}" step) == "$stopped" ]] || fail "${files[0]} is not at step $stopped, where the job stopped"
  echo "5. SIG$signal ${*:+($*) }to rank pid $target of (${ranks[*]}): both stopped after step $stopped, one checkpoint, exit 75"
}
signal_one_rank signal USR1
signal_one_rank usr2 USR2 --preempt-signal USR2
signal_one_rank term_usr2 TERM --preempt-signal USR2
# Both ranks signalled the moment the ready file appears, before or during the first step: the
# handlers are in place, so the run stops at the next step boundary with a checkpoint instead of dying.
ready=$work/early.ready
"$mpiexec" --oversubscribe --allow-run-as-root -n 2 "$dptrain" train --model lenet --data "$work/fm" --lr 0.05 \
  --threads 1 --batch-size 8 --steps 100000 --checkpoint-every 0 --checkpoint-dir "$work/early" \
  --ready-file "$ready" > "$work/early.log" 2>&1 &
background=$!
for _ in $(seq 600); do
  [[ -e $ready ]] && break
  kill -0 "$background" 2> /dev/null || { cat "$work/early.log"; fail "the job ended before creating its --ready-file"; }
  sleep 0.1
done
[[ -e $ready ]] || { cat "$work/early.log"; fail "no --ready-file after 60 s"; }
rank_pids "$ready"
[[ ${#ranks[@]} -eq 2 ]] || fail "found ${#ranks[@]} dptrain rank processes of the early-signalled job, expected 2"
kill -USR1 "${ranks[@]}"
wait_for_stop early
[[ -f $(ckpt "$work/early" "$stopped") ]] || { cat "$work/early.log"; fail "no checkpoint of the early stop"; }
echo "5. SIGUSR1 to both ranks as soon as --ready-file exists: stopped after step $stopped with its checkpoint, exit 75"

# 6. dptrain eval on 1 and 2 ranks: the training run's validation top-1.
run eval_one 0 "$dptrain" eval --checkpoint "$work/one_full" --data "$work/fm" --threads 1 --json "$work/eval_one.json"
run eval_two 0 run_mpi -n 2 "$dptrain" eval --checkpoint "$work/one_full" --data "$work/fm" --threads 1 --json "$work/eval_two.json"
top1() { sed -n 's/.*"top1": \([0-9.e-]*\).*/\1/p' "$1"; }
trained=$(sed -n 's/.*"validation_top1": \([0-9.e-]*\).*/\1/p' "$work/one_full.jsonl")
one=$(top1 "$work/eval_one.json") two=$(top1 "$work/eval_two.json")
[[ -n $one && $one == "$two" ]] || { cat "$work/eval_one.log" "$work/eval_two.log"; fail "eval top-1: '$one' on one rank, '$two' on two"; }
within "$one" "$trained" 1e-6 || fail "eval top-1 $one, but the training run reported $trained"
grep -q '"samples": 10000' "$work/eval_two.json" || fail "the 2-rank evaluation did not score each of the 10000 images once"
echo "6. eval: top-1 $one on 1 and 2 ranks (training reported $trained)"

# 7. A checkpoint of another model, or for another number of classes, is refused; rank 0 alone reads
# it, and its error ends the whole job at once (the stall timeout is lowered to catch a hang).
run other_model 1 "$dptrain" train --model inception-mini --data "$work/fm" --steps 40 --threads 1 --resume "$work/one_full"
grep -q "written for model lenet, not inception-mini" "$work/other_model.log" ||
  { cat "$work/other_model.log"; fail "no clear error for a checkpoint of another model"; }
run other_model_two error run_mpi -n 2 "$dptrain" train --model inception-mini --data "$work/fm" --steps 40 --threads 1 \
  --resume "$work/one_full" --stall-timeout 60s
grep -q "rank 0: error: .*written for model lenet, not inception-mini" "$work/other_model_two.log" ||
  { cat "$work/other_model_two.log"; fail "no clear error for a checkpoint of another model on two ranks"; }
run synth 0 "$dptrain" data synth "$work/three_jpeg" --classes 3 --per-class 2 --val-per-class 2 --size 28
run synth_convert 0 "$dptrain" data convert imagenet "$work/three_jpeg" "$work/three" --size 28 --shards 1 --val-shards 1
run other_classes error run_mpi -n 2 "$dptrain" eval --checkpoint "$work/one_full" --data "$work/three" --threads 1 \
  --stall-timeout 60s
grep -q "error: .*holds a lenet for 10 classes.* has 3 classes" "$work/other_classes.log" ||
  { cat "$work/other_classes.log"; fail "no clear error for evaluating a 10-class checkpoint on 3 classes"; }
echo "7. a lenet checkpoint is refused by inception-mini (1 and 2 ranks), and by eval on 3 classes"

# 8. Dynamic loss scaling, exercised in fp32 on the CPU (fp16 needs a GPU).
scaled=("${common[@]}" --batch-size 16 --loss-scale dynamic)
run ls_full 0 "$dptrain" "${scaled[@]}" --checkpoint-dir "$work/ls_full" --metrics "$work/ls_full.jsonl"
run ls_stop 75 "$dptrain" "${scaled[@]}" --checkpoint-dir "$work/ls_split" --stop-at-step 20
run ls_resume 0 "$dptrain" "${scaled[@]}" --checkpoint-dir "$work/ls_split"
grep -q "loss scaling: dynamic from 65536" "$work/ls_full.log" || { cat "$work/ls_full.log"; fail "no loss-scaling line"; }
same_groups "$(ckpt "$work/ls_full" 40)" "$(ckpt "$work/ls_split" 40)" /params /optimizer /progress
attribute() { h5dump -a "/progress/$2" "$1" | sed -n 's/.*(0): \([0-9.e+]*\).*/\1/p'; }
[[ $(attribute "$(ckpt "$work/ls_split" 40)" loss_scale_clean_steps) == 40 ]] ||
  fail "the resumed run's checkpoint does not count 40 clean steps: $(attribute "$(ckpt "$work/ls_split" 40)" loss_scale_clean_steps)"
[[ $(attribute "$(ckpt "$work/ls_split" 20)" loss_scale) == 65536 ]] || fail "the step-20 checkpoint does not hold the scale 65536"
grep -q '"loss_scale": 65536' "$work/ls_full.jsonl" || fail "the metrics do not report the loss scale"
same_groups "$(ckpt "$work/one_full" 40)" "$(ckpt "$work/ls_full" 40)" /params
echo "8. dynamic loss scale: resumed = uninterrupted bit for bit (40 clean steps counted), and = the unscaled run"

# 9. Device and precision mistakes.
run bf16_cpu error "$dptrain" train --model lenet --data "$work/fm" --steps 2 --precision bf16
grep -q "error: --precision bf16 needs --backend cuda" "$work/bf16_cpu.log" || { cat "$work/bf16_cpu.log"; fail "bf16 on the CPU"; }
run cuda_here error "$dptrain" train --model lenet --data "$work/fm" --steps 2 --backend cuda
grep -Eq "error: (this dptrain was built without the CUDA backend|--backend cuda: no usable GPU here)" "$work/cuda_here.log" ||
  { cat "$work/cuda_here.log"; fail "--backend cuda without a GPU"; }
run bad_scale error "$dptrain" train --model lenet --data "$work/fm" --steps 2 --loss-scale lots
grep -q "error: --loss-scale must be auto, none, dynamic or a positive number, not 'lots'" "$work/bad_scale.log" ||
  { cat "$work/bad_scale.log"; fail "a bad --loss-scale"; }
run bad_signal error "$dptrain" train --model lenet --data "$work/fm" --steps 2 --preempt-signal INT
grep -q "error: --preempt-signal 'INT' is not one of USR1, USR2, HUP and TERM" "$work/bad_signal.log" ||
  { cat "$work/bad_signal.log"; fail "a bad --preempt-signal"; }
echo "9. bf16 on the CPU, --backend cuda without a GPU, a bad --loss-scale and a bad --preempt-signal each end with one sentence"
echo "PASS"
