#!/usr/bin/env bash
# `dptrain train --backend cuda` end to end, on a small learnable dataset made on the spot (`dptrain
# data synth`: no dataset files needed on a GPU machine). The same run on the CPU is the reference:
#  1. fp32 on the GPU reaches the CPU's validation top-1 (within 0.05) and reports its GPU memory;
#  2. bf16, and fp16 with dynamic loss scaling, learn as well (within 0.05 of fp32 on the GPU);
#  3. a 2-rank job (NCCL) when the machine has 2 GPUs;
#  4. a stopped fp16 run resumes; 5. `dptrain eval --backend cuda` of its checkpoint agrees with the CPU's;
#  6. an fp32 run stopped and resumed takes its cuDNN algorithms from the checkpoint and ends bit for
#     bit where the uninterrupted run ends.
# Without a usable GPU it reports itself skipped (exit 77).
# Usage: train_gpu_e2e.sh DPTRAIN [MPIEXEC]
set -uo pipefail
dptrain=$1
mpiexec=${2:-mpiexec}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run NAME COMMAND...: output in $work/NAME.log, shown on failure
  local name=$1
  shift
  "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$name: exit code $?"; }
}
top1() { sed -n 's/.*"validation_top1": \([0-9.e-]*\).*/\1/p' "$1" | tail -n 1; }
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

probe=$("$dptrain" train --backend cuda --model lenet --data "$work" --steps 1 2>&1)
if grep -Eq "no usable GPU here|built without the CUDA backend" <<<"$probe"; then
  echo "SKIP: $(grep -o 'error: .*' <<<"$probe" | head -n 1)"
  exit 77
fi

run synth "$dptrain" data synth "$work/jpeg" --classes 4 --per-class 120 --val-per-class 30 --size 32
run convert "$dptrain" data convert imagenet "$work/jpeg" "$work/data" --size 32 --shards 2 --val-shards 1
common=(train --model inception-mini --data "$work/data" --steps 120 --batch-size 32 --lr 0.2 --log-every 40 --threads 2)

run cpu "$dptrain" "${common[@]}" --metrics "$work/cpu.jsonl"
run fp32 "$dptrain" "${common[@]}" --backend cuda --metrics "$work/fp32.jsonl"
cpu=$(top1 "$work/cpu.jsonl") fp32=$(top1 "$work/fp32.jsonl")
within "$fp32" "$cpu" 0.05 || fail "validation top-1 on the GPU (fp32) $fp32, on the CPU $cpu"
grep -q '"gpu_memory_peak_mib"' "$work/fp32.jsonl" || fail "the GPU run does not report its memory"
echo "1. fp32: top-1 $fp32 on the GPU, $cpu on the CPU"

for precision in bf16 fp16; do
  run "$precision" "$dptrain" "${common[@]}" --backend cuda --precision "$precision" --metrics "$work/$precision.jsonl"
  value=$(top1 "$work/$precision.jsonl")
  within "$value" "$fp32" 0.05 || fail "validation top-1 in $precision $value, in fp32 $fp32"
  echo "2. $precision: top-1 $value"
done
grep -q "loss scaling: dynamic" "$work/fp16.log" || fail "fp16 did not scale its loss"

gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
if (( gpus >= 2 )) && command -v "$mpiexec" > /dev/null; then
  run two "$mpiexec" --allow-run-as-root -n 2 "$dptrain" "${common[@]}" --batch-size 16 --backend cuda \
    --metrics "$work/two.jsonl"
  grep -q "gradients: .*NCCL" "$work/two.log" || { cat "$work/two.log"; fail "the 2-rank job did not use NCCL"; }
  two=$(top1 "$work/two.jsonl")
  within "$two" "$fp32" 0.05 || fail "validation top-1 on 2 GPUs $two, on 1 GPU $fp32"
  echo "3. two GPUs (NCCL): top-1 $two"
else
  echo "3. fewer than 2 GPUs (or no mpiexec): the 2-rank job is left out"
fi

# A stopped fp16 run resumes with its loss scale.
"$dptrain" "${common[@]}" --backend cuda --precision fp16 --checkpoint-dir "$work/ckpt" --stop-at-step 60 \
  > "$work/stop.log" 2>&1
[[ $? -eq 75 ]] || { cat "$work/stop.log"; fail "the fp16 run did not stop with exit code 75"; }
run resume "$dptrain" "${common[@]}" --backend cuda --precision fp16 --checkpoint-dir "$work/ckpt"
grep -q "resuming from .*: step 60" "$work/resume.log" || { cat "$work/resume.log"; fail "no resume at step 60"; }
echo "4. fp16 stopped at step 60 and resumed"
eval_top1() { sed -n 's/.*"top1": \([0-9.e-]*\).*/\1/p' "$1"; }
run eval_cpu "$dptrain" eval --checkpoint "$work/ckpt" --data "$work/data" --json "$work/eval_cpu.json"
run eval_gpu "$dptrain" eval --checkpoint "$work/ckpt" --data "$work/data" --backend cuda --json "$work/eval_gpu.json"
within "$(eval_top1 "$work/eval_gpu.json")" "$(eval_top1 "$work/eval_cpu.json")" 0.01 ||
  fail "eval top-1 on the GPU $(eval_top1 "$work/eval_gpu.json"), on the CPU $(eval_top1 "$work/eval_cpu.json")"
echo "5. eval of the fp16 checkpoint: top-1 $(eval_top1 "$work/eval_gpu.json") on the GPU, $(eval_top1 "$work/eval_cpu.json") on the CPU"
# 6. Bit-exact resume on the GPU: deterministic algorithms, chosen once and carried by the checkpoint.
exact=("${common[@]}" --backend cuda --steps 40 --checkpoint-every 20)
run exact_full "$dptrain" "${exact[@]}" --checkpoint-dir "$work/exact_full"
"$dptrain" "${exact[@]}" --checkpoint-dir "$work/exact_split" --stop-at-step 20 > "$work/exact_stop.log" 2>&1
[[ $? -eq 75 ]] || { cat "$work/exact_stop.log"; fail "the fp32 run did not stop with exit code 75"; }
h5dump -a /tuned_choices "$work/exact_split/ckpt-000000020.h5" > "$work/choices.txt" 2>&1 ||
  { cat "$work/choices.txt"; fail "the GPU checkpoint stores no cuDNN algorithm choices"; }
run exact_resume "$dptrain" "${exact[@]}" --checkpoint-dir "$work/exact_split"
grep -q "cuDNN algorithms: [0-9]* choices taken from the checkpoint" "$work/exact_resume.log" ||
  { cat "$work/exact_resume.log"; fail "the resumed run did not take the checkpoint's cuDNN algorithms"; }
groups=(/params /optimizer /progress)
h5ls "$work/exact_full/ckpt-000000040.h5/buffers" > /dev/null 2>&1 && groups+=(/buffers)
for group in "${groups[@]}"; do
  h5diff -r "$work/exact_full/ckpt-000000040.h5" "$work/exact_split/ckpt-000000040.h5" "$group" "$group" \
    > "$work/h5diff.log" 2>&1 || { head -n 40 "$work/h5diff.log"; fail "$group differs after the GPU resume"; }
done
echo "6. fp32 stopped at 20 and resumed on the GPU = uninterrupted, bit for bit"
echo "PASS"
