#!/usr/bin/env bash
# End-to-end: the two ways the loader reads shards give the same training. The converter's raw shards
# (contiguous images) are read with pread of the contiguous images, its JPEG shards (packed,
# contiguous bytes) with pread of the packed bytes; the same shards repacked with gzip (h5repack) go
# through H5Dread under the HDF5 lock. `data verify` names the path of each, the training log says
# which one a run takes, and two runs with the same seed end with bit-identical losses and weights.
set -uo pipefail
dptrain=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for tool in h5repack h5diff python3; do
  command -v "$tool" > /dev/null || { echo "SKIP: no $tool"; exit 77; }
done

"$dptrain" data convert fashion-mnist "$work/fast" --shards 3 > "$work/convert.log" 2>&1 || { cat "$work/convert.log"; fail "conversion"; }
"$dptrain" data synth "$work/synth" --classes 4 --per-class 40 --val-per-class 4 --size 40 > "$work/synth.log" 2>&1 ||
  { cat "$work/synth.log"; fail "synth"; }
"$dptrain" data convert imagenet "$work/synth" "$work/jpeg_fast" --size 32 --encoding jpeg --shards 3 --val-shards 1 \
  > "$work/convert_jpeg.log" 2>&1 || { cat "$work/convert_jpeg.log"; fail "JPEG conversion"; }
# A copy of `$1` (a dataset) in `$2` with every shard's dataset `$3` gzip-compressed (in chunks of
# `$4` when given), and the manifest's checksums made those of the new files.
repack() {
  mkdir "$2"
  local layout=()
  [[ -n ${4:-} ]] && layout=(-l "$3:CHUNK=$4")
  for shard in "$1"/*.h5; do
    h5repack "${layout[@]}" -f "$3":GZIP=1 "$shard" "$2/$(basename "$shard")" || fail "h5repack $shard"
  done
  python3 - "$1/manifest.json" "$2" <<'PY' || fail "rewriting the manifest's checksums"
import json, sys, zlib, pathlib
manifest = json.load(open(sys.argv[1]))
out = pathlib.Path(sys.argv[2])
for split in manifest["splits"].values():
    for shard in split["shards"]:
        shard["checksum"] = "crc32:%08x" % (zlib.crc32((out / shard["file"]).read_bytes()) & 0xFFFFFFFF)
json.dump(manifest, open(out / "manifest.json", "w"), indent=2)
PY
}
# One image per chunk: h5repack's own chunks of a contiguous dataset would hold many images, each
# decompressed again for every sample read.
repack "$work/fast" "$work/gzip" images 1x28x28x1
repack "$work/jpeg_fast" "$work/jpeg_gzip" jpeg_bytes

"$dptrain" data verify "$work/fast" > "$work/verify_fast.log" 2>&1 || { cat "$work/verify_fast.log"; fail "verify (fast)"; }
"$dptrain" data verify "$work/gzip" > "$work/verify_gzip.log" 2>&1 || { cat "$work/verify_gzip.log"; fail "verify (gzip)"; }
cat "$work/verify_fast.log" "$work/verify_gzip.log"
grep -q "read path: pread of the contiguous images (4 shards)" "$work/verify_fast.log" || fail "verify does not name the pread path"
grep -q "read path: HDF5 (H5Dread under the lock): the chunks are filtered (compressed) (4 shards)" "$work/verify_gzip.log" ||
  fail "verify does not name the fallback and why"

for kind in fast gzip; do
  "$dptrain" train --model lenet --data "$work/$kind" --steps 25 --batch-size 32 --lr 0.1 --flip --pad 2 --crop 28 \
    --loader-threads 2 --seed 5 --log-every 5 --metrics "$work/$kind.jsonl" --checkpoint-dir "$work/ckpt_$kind" \
    > "$work/train_$kind.log" 2>&1 || { cat "$work/train_$kind.log"; fail "training on $kind"; }
done
grep -q "samples read by pread of the contiguous images" "$work/train_fast.log" || { cat "$work/train_fast.log"; fail "the log does not name the pread path"; }
grep -q "samples read by HDF5 (H5Dread under the lock)" "$work/train_gzip.log" || { cat "$work/train_gzip.log"; fail "the log does not name the fallback"; }
losses() { grep '"type": "step"' "$1" | sed 's/.*"loss": \([^,]*\),.*/\1/'; }
[[ $(losses "$work/fast.jsonl" | wc -l) -eq 5 ]] || fail "expected 5 step lines"
diff <(losses "$work/fast.jsonl") <(losses "$work/gzip.jsonl") || fail "the losses differ between the two read paths"
h5diff "$work/ckpt_fast/ckpt-000000025.h5" "$work/ckpt_gzip/ckpt-000000025.h5" /params /params ||
  fail "the weights after 25 steps differ between the two read paths"

# JPEG: the packed bytes by pread, and gzip-compressed through HDF5, train the same.
"$dptrain" data verify "$work/jpeg_fast" > "$work/verify_jpeg_fast.log" 2>&1 || { cat "$work/verify_jpeg_fast.log"; fail "verify (JPEG)"; }
"$dptrain" data verify "$work/jpeg_gzip" > "$work/verify_jpeg_gzip.log" 2>&1 || { cat "$work/verify_jpeg_gzip.log"; fail "verify (JPEG gzip)"; }
cat "$work/verify_jpeg_fast.log" "$work/verify_jpeg_gzip.log"
grep -q "read path: pread of the packed JPEG bytes (4 shards)" "$work/verify_jpeg_fast.log" || fail "verify does not name the JPEG pread path"
grep -q "read path: HDF5 (H5Dread under the lock): the JPEG bytes are chunked (or compact) (4 shards)" \
  "$work/verify_jpeg_gzip.log" || fail "verify does not name the JPEG fallback and why"
for kind in jpeg_fast jpeg_gzip; do
  "$dptrain" train --model lenet --data "$work/$kind" --steps 10 --batch-size 16 --lr 0.05 --flip --crop 28 \
    --loader-threads 2 --seed 5 --log-every 5 --metrics "$work/$kind.jsonl" --checkpoint-dir "$work/ckpt_$kind" \
    > "$work/train_$kind.log" 2>&1 || { cat "$work/train_$kind.log"; fail "training on $kind"; }
done
grep -q "samples read by pread of the packed JPEG bytes" "$work/train_jpeg_fast.log" || fail "the log does not name the JPEG pread path"
[[ $(losses "$work/jpeg_fast.jsonl" | wc -l) -eq 2 ]] || fail "expected 2 step lines (JPEG)"
diff <(losses "$work/jpeg_fast.jsonl") <(losses "$work/jpeg_gzip.jsonl") || fail "the JPEG losses differ between the read paths"
h5diff "$work/ckpt_jpeg_fast/ckpt-000000010.h5" "$work/ckpt_jpeg_gzip/ckpt-000000010.h5" /params /params ||
  fail "the weights after 10 JPEG steps differ between the two read paths"
echo "PASS"
