#!/usr/bin/env bash
# End-to-end: `dptrain export` and `dptrain import` without PyTorch (tests/interop compares with
# torchvision). A trained lenet exported and imported again scores what it scored; eval --images
# gives the same logits from both; fine-tuning an import for other classes needs --reset-classifier;
# bad input fails with one line naming the file or the tensor, and nothing is overwritten.
set -uo pipefail
dptrain=$1
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"
run() {  # run NAME EXPECTED_EXIT COMMAND...: the command's output goes to $work/NAME.log
  local name=$1 expected=$2
  shift 2
  "$@" > "$work/$name.log" 2>&1
  local rc=$?
  [[ $rc -eq $expected ]] || { cat "$work/$name.log"; fail "$name: exit $rc, expected $expected"; }
}
says() { grep -q -- "$2" "$work/$1.log" || { cat "$work/$1.log"; fail "$1 does not say: $2"; }; }

run convert 0 "$dptrain" data convert fashion-mnist "$work/fm" --shards 2
run train 0 "$dptrain" train --model lenet --data "$work/fm" --steps 30 --batch-size 32 --checkpoint-dir "$work/ck"
run export 0 "$dptrain" export "$work/ck" "$work/lenet.safetensors"
says export "tensors with dptrain names"
says export "10 classes"
# Nothing is overwritten: not an earlier export, not the checkpoint itself; a file of the user's at
# OUT.tmp is not taken for a leftover temporary.
ckpt_file="$work/ck/$(head -n 1 "$work/ck/latest")"
sum_before=$(sha256sum < "$ckpt_file")
run export_over_ckpt 1 "$dptrain" export "$ckpt_file" "$ckpt_file"
says export_over_ckpt "already exists: dptrain export does not overwrite"
[[ $(sha256sum < "$ckpt_file") == "$sum_before" ]] || fail "export changed its own checkpoint"
run export_again 1 "$dptrain" export "$work/ck" "$work/lenet.safetensors"
says export_again "already exists"
echo mine > "$work/second.safetensors.tmp"
run export_second 0 "$dptrain" export "$work/ck" "$work/second.safetensors"
[[ $(cat "$work/second.safetensors.tmp") == mine ]] || fail "export removed the user's OUT.tmp"
cmp -s "$work/second.safetensors" "$work/lenet.safetensors" || fail "two exports of one checkpoint differ"
run export_tv 1 "$dptrain" export "$work/ck" "$work/tv.safetensors" --names torchvision
says export_tv "no torchvision counterpart"
[[ ! -e $work/tv.safetensors ]] || fail "a refused export left a file"

run import 0 "$dptrain" import "$work/lenet.safetensors" --model lenet "$work/imported.h5"
says import "imported lenet (10 classes)"
run import_again 1 "$dptrain" import "$work/lenet.safetensors" --model lenet "$work/imported.h5"
says import_again "already exists"
run import_other 1 "$dptrain" import "$work/lenet.safetensors" --model alexnet "$work/alexnet.h5"
says import_other "holds the weights of model lenet (its metadata says), not of alexnet"
head -c 100 "$work/lenet.safetensors" > "$work/cut.safetensors"
run import_cut 1 "$dptrain" import "$work/cut.safetensors" --model lenet "$work/cut.h5"
says import_cut "cut.safetensors: the header length"
[[ ! -e $work/cut.h5 ]] || fail "a refused import left a checkpoint"

# The same scores from the trained checkpoint and from its round trip through safetensors.
run eval_trained 0 "$dptrain" eval --checkpoint "$work/ck" --data "$work/fm"
run eval_imported 0 "$dptrain" eval --checkpoint "$work/imported.h5" --data "$work/fm"
for what in loss top-1 top-5 samples; do
  a=$(grep "^$what " "$work/eval_trained.log")
  b=$(grep "^$what " "$work/eval_imported.log")
  [[ -n $a && $a == "$b" ]] || fail "eval $what: '$a' trained, '$b' imported"
done

# eval --images: the logits of both on images given as a tensor, bit for bit.
python3 - "$work/images.safetensors" <<'PY' || fail "writing the images"
import json, random, struct, sys
random.seed(3)
values = [random.uniform(-2, 2) for _ in range(3 * 28 * 28)]
header = json.dumps({"images": {"dtype": "F32", "shape": [3, 1, 28, 28], "data_offsets": [0, 4 * len(values)]}})
header += " " * ((8 - len(header) % 8) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header.encode() + struct.pack(f"<{len(values)}f", *values))
PY
run logits_trained 0 "$dptrain" eval --checkpoint "$work/ck" --images "$work/images.safetensors" --logits "$work/a.st"
run logits_imported 0 "$dptrain" eval --checkpoint "$work/imported.h5" --images "$work/images.safetensors" --logits "$work/b.st"
says logits_trained "\[3,10\]"
# same_logits A B TOLERANCE: the [3, 10] logits of two files agree to TOLERANCE x their largest
# (0: bit for bit), and are not all equal.
same_logits() {
  python3 - "$@" <<'PY'
import json, struct, sys
def logits(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    entry = json.loads(data[8:8 + n])["logits"]
    begin, end = entry["data_offsets"]
    return entry["shape"], struct.unpack("<30f", data[8 + n + begin:8 + n + end])
(sa, a), (sb, b) = logits(sys.argv[1]), logits(sys.argv[2])
assert sa == sb == [3, 10], (sa, sb)
assert len(set(a)) > 1
limit = float(sys.argv[3]) * max(abs(x) for x in a)
assert a == b if limit == 0 else max(abs(x - y) for x, y in zip(a, b)) <= limit, (a, b)
PY
}
same_logits "$work/a.st" "$work/b.st" 0 || fail "the logits differ"
# In steps of 2 (the last one padded): the same logits, to float rounding (another batch size may
# take another convolution algorithm).
run logits_steps 0 "$dptrain" eval --checkpoint "$work/ck" --images "$work/images.safetensors" --logits "$work/s.st" \
  --batch-size 2
says logits_steps "in steps of 2"
same_logits "$work/a.st" "$work/s.st" 1e-5 || fail "the logits in steps of 2 differ"
run logits_again 1 "$dptrain" eval --checkpoint "$work/ck" --images "$work/images.safetensors" --logits "$work/a.st"
says logits_again "a.st already exists"
run logits_no_out 106 "$dptrain" eval --checkpoint "$work/ck" --images "$work/images.safetensors"  # an option another needs
run logits_bad 1 "$dptrain" eval --checkpoint "$work/ck" --images "$work/lenet.safetensors" --logits "$work/c.st"
says logits_bad "no tensor named 'images'"

# Weights of another input (grey lenet onto RGB images) are refused naming the tensor, fine-tuning
# or not (tests/unit/train and tests/interop fine-tune for another class count).
run synth 0 "$dptrain" data synth "$work/src" --classes 3 --per-class 8 --val-per-class 2 --size 28
run convert3 0 "$dptrain" data convert imagenet "$work/src" "$work/three" --size 28 --shards 1 --val-shards 1
run tune_rgb 1 "$dptrain" train --model lenet --data "$work/three" --steps 2 --batch-size 8 \
  --resume "$work/imported.h5" --reset-classifier --checkpoint-dir "$work/tuned"
says tune_rgb "conv1/weight has shape \[20,1,5,5\]"
echo "PASS"
