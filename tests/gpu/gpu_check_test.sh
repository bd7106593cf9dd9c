#!/usr/bin/env bash
# scripts/make-gpu-bundle.sh and scripts/gpu-check.sh's stage 0 on this machine, as a GPU machine
# would run them: the bundle is made from this build, and stage 0 unpacks it into a temporary
# folder, finds the CUDA libraries, loads every executable (the bundled Open MPI's mpiexec and MCA
# components too) and runs `dptrain info`.
#  1. Without a GPU it ends with "no usable GPU" and the runtime's cudaError name (exit 3; with a
#     GPU: "stage 0 passed", exit 0), leaving at most 6 files in $OUT, whose log archive unpacks;
#     it names the cuDNN and NCCL versions found beside those the bundle was built with.
#  2. Without a working gzip or xz program it unpacks (and packs its logs) with Python's tarfile.
#  3. Libraries laid out as PyTorch's nvidia-* wheels lay them out (in a python3's
#     site-packages) are found there, preferred, and are what `dptrain info` reports loaded.
#  4. A CUDA library the bundle needs and the machine lacks stops it with "NOT FOUND" (exit 4).
#  5. --rehearse runs stage 1's plumbing on the CPU backend: a table, a valid bench.json, the archive;
#     the two-rank tests run under the bundle's mpiexec, and without a GPU both of their ranks report
#     themselves skipped (which proves the launch and MPI_Init worked); with a GPU they pass.
# Usage: gpu_check_test.sh BUILD_DIR, or gpu_check_test.sh --no-cuda (reports itself skipped).
set -uo pipefail
if [[ ${1:-} == --no-cuda ]]; then
  echo "SKIP: dptrain was built without the CUDA backend (no CUDA toolkit): there is no bundle to check"
  exit 77
fi
build=$(cd "$1" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
gpu_here=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then gpu_here=1; fi

bash "$repo/scripts/make-gpu-bundle.sh" --no-build --build-dir "$build" --output "$work/bundle" >"$work/make.log" 2>&1 ||
  { cat "$work/make.log"; fail "make-gpu-bundle.sh failed"; }
bundle=$work/bundle/bundle.tar.gz
[[ -s $bundle ]] || fail "no bundle.tar.gz was made"
echo "0. $(tail -n 1 "$work/make.log")"

stage0() {  # stage0 NAME [ENV...]: stage 0 with its own $OUT; output in $work/NAME.log, exit code in $rc
  local name=$1
  shift
  mkdir -p "$work/$name"
  env "$@" OUT="$work/$name/out" bash "$repo/scripts/gpu-check.sh" --bundle "$bundle" 0 >"$work/$name.log" 2>&1
  rc=$?
}
expect_end() {  # expect_end NAME: the verdict of a machine without (or with) a GPU
  if (( gpu_here )); then
    if [[ $rc -ne 0 ]] || ! grep -q 'stage 0 passed' "$work/$1.log"; then
      cat "$work/$1.log"
      fail "$1: stage 0 failed on a GPU machine (exit $rc)"
    fi
  else
    [[ $rc -eq 3 ]] || { cat "$work/$1.log"; fail "$1: exit code $rc, not 3 (no usable GPU)"; }
    grep -Eq 'no usable GPU: cudaGetDeviceCount: cudaError[A-Za-z]+ \(' "$work/$1.log" ||
      { cat "$work/$1.log"; fail "$1: no 'no usable GPU' line naming the cudaError"; }
  fi
}

# 1. Stage 0 as it runs on a GPU machine.
stage0 plain
expect_end plain
files=$(find "$work/plain/out" -type f | wc -l)
(( files <= 6 )) || fail "stage 0 left $files files in \$OUT (the check writes at most 6)"
[[ -s $work/plain/out/summary.txt && -s $work/plain/out/logs.tar.gz ]] || fail "no summary.txt or logs.tar.gz in \$OUT"
grep -q 'libcudnn.so.9 -> /' "$work/plain.log" || fail "stage 0 did not say where libcudnn.so.9 is"
grep -q 'ld.so --list: every executable loads' "$work/plain.log" || fail "stage 0 did not check the executables load"
grep -Eq '^ +cuDNN +9\.' "$work/plain.log" || fail "dptrain info did not report cuDNN"
grep -Eq 'versions: cuDNN 9\.[0-9.]+ found, built with 9\.[0-9.]+; NCCL 2\.[0-9.]+ found, built with 2\.[0-9.]+' "$work/plain.log" ||
  { cat "$work/plain.log"; fail "stage 0 did not name the cuDNN and NCCL versions found and built with"; }
grep -Eq "loads with all its libraries and symbols, and so do Open MPI's mpiexec and its [0-9]+ MCA components" "$work/plain.log" ||
  { cat "$work/plain.log"; fail "stage 0 did not check the bundled Open MPI loads"; }
python3 -c 'import sys, tarfile; names = tarfile.open(sys.argv[1]).getnames(); sys.exit("logs/info.txt" not in names)' \
  "$work/plain/out/logs.tar.gz" || fail "logs.tar.gz does not hold logs/info.txt"
echo "1. $(grep -E 'no usable GPU|stage 0 passed' "$work/plain.log" | tail -n 1); $files files in \$OUT"

# 2. No gzip or xz program: tar cannot unpack, Python's tarfile does.
mkdir -p "$work/no-gzip-bin"
for tool in gzip xz; do printf '#!/bin/sh\necho "%s: not installed" >&2\nexit 127\n' "$tool" >"$work/no-gzip-bin/$tool"; done
chmod +x "$work/no-gzip-bin"/*
stage0 no-gzip PATH="$work/no-gzip-bin:$PATH"
expect_end no-gzip
grep -q "unpacked with Python's tarfile" "$work/no-gzip.log" || { cat "$work/no-gzip.log"; fail "no fallback to Python's tarfile"; }
[[ -s $work/no-gzip/out/logs.tar.gz ]] || fail "without gzip no logs.tar.gz was written"
echo "2. without gzip and xz: unpacked and packed by Python's tarfile"

# 3. The H200 machine's layout: the CUDA libraries only in the site-packages of a virtual
# environment's python3 (PyTorch's, there), as the wheels nvidia-cuda-runtime / nvidia-cublas
# (nvidia/cu13/lib), nvidia-cudnn-cu13 and nvidia-nccl-cu13 put them.
if python3 -m venv --without-pip "$work/venv" >"$work/venv.log" 2>&1; then
  site=$("$work/venv/bin/python3" -c 'import site; print(site.getsitepackages()[0])')
else  # no venv module: a stand-in python3 that names its site-packages
  site=$work/site-packages
  mkdir -p "$work/venv/bin"
  printf '#!/bin/sh\necho "%s"\n' "$site" >"$work/venv/bin/python3"
  chmod +x "$work/venv/bin/python3"
fi
toolkit=$(dirname "$(grep -m 1 -o '/[^ ]*/libcudnn.so.9' "$work/plain.log")")
mkdir -p "$site/nvidia/cu13/lib" "$site/nvidia/cudnn/lib" "$site/nvidia/nccl/lib"
for lib in "$toolkit"/libcudart.so.* "$toolkit"/libcublas*.so.*; do ln -s "$lib" "$site/nvidia/cu13/lib/"; done
for lib in "$toolkit"/libcudnn*.so.9; do ln -s "$lib" "$site/nvidia/cudnn/lib/"; done
ln -s "$toolkit/libnccl.so.2" "$site/nvidia/nccl/lib/"
stage0 wheels PATH="$work/venv/bin:$PATH" LD_LIBRARY_PATH=
expect_end wheels
for soname in libcudart.so.13 libcublas.so.13 libcudnn.so.9 libcudnn_cnn.so.9 libnccl.so.2; do
  grep -q "$soname -> $site/nvidia/" "$work/wheels.log" || { cat "$work/wheels.log"; fail "$soname was not taken from the wheels"; }
done
grep -Eq "^ +cuDNN .*\($site/nvidia/cudnn/lib/libcudnn.so.9\)" "$work/wheels.log" ||
  { cat "$work/wheels.log"; fail "dptrain info did not load cuDNN from the wheels"; }
echo "3. wheels in site-packages: found, preferred and loaded ($(grep -m 1 -Eo 'cuDNN +[0-9.]+, built with .*' "$work/wheels.log"))"

# 4. A library the machine lacks.
mkdir -p "$work/repack"
tar -C "$work/repack" -xzf "$bundle" || fail "cannot unpack the bundle"
echo libdptrain_not_anywhere.so.1 >>"$work/repack/cuda-libs.txt"
bundle=$work/missing.tar.gz
(cd "$work/repack" && tar -czf "$bundle" -- *) || fail "cannot repack the bundle"
stage0 missing
[[ $rc -eq 4 ]] || { cat "$work/missing.log"; fail "a missing library: exit code $rc, not 4"; }
if ! grep -q 'libdptrain_not_anywhere.so.1 -> NOT FOUND' "$work/missing.log" || ! grep -q 'STOP:' "$work/missing.log"; then
  cat "$work/missing.log"
  fail "a missing library was not named with a STOP line"
fi
echo "4. a missing library: $(grep -m 1 'STOP:' "$work/missing.log" | sed 's/^\[[^]]*\] //')"
# 5. Stage 1's plumbing, rehearsed on the CPU backend: the table, bench.json and the archive.
bundle=$work/bundle/bundle.tar.gz
mkdir -p "$work/rehearsal"
BATCH=4 STEPS=2 WARMUP=1 OUT="$work/rehearsal/out" bash "$repo/scripts/gpu-check.sh" --bundle "$bundle" --rehearse 1 \
  >"$work/rehearsal.log" 2>&1
rc=$?
(( rc <= 1 )) || { cat "$work/rehearsal.log"; fail "rehearsal: exit code $rc"; }
grep -Eq '^\| lenet \| fp32 \| 4 \| [0-9.]+ \|' "$work/rehearsal.log" || { cat "$work/rehearsal.log"; fail "rehearsal: no table row for lenet"; }
# The first benchmark's --layers tables reach the summary: every kind of lenet's layers with a time, the
# step's own row.
for kind in convolution pooling linear softmax_cross_entropy step; do
  grep -Eq "^ +${kind} .* [0-9]+\.[0-9]{3} +[0-9.]+%$" "$work/rehearsal/out/summary.txt" ||
    { cat "$work/rehearsal/out/summary.txt"; fail "rehearsal: no '$kind' row in the per-layer-kind table of the summary"; }
done
python3 - "$work/rehearsal/out" <<'PY' || fail "rehearsal: bench.json, logs.tar.gz or the file count is wrong"
import json, os, sys, tarfile
out = sys.argv[1]
assert len(os.listdir(out)) <= 6, os.listdir(out)
runs = json.load(open(os.path.join(out, "bench.json")))["runs"]
assert [(r["source"], r["result"]["model"]) for r in runs] == [("dptrain", "lenet"), ("dptrain", "inception-mini")], runs
assert all(r["result"]["images_per_sec"] > 0 for r in runs)
assert "logs/dptrain-lenet-fp32.log" in tarfile.open(os.path.join(out, "logs.tar.gz")).getnames()
PY
for test in gpu_nccl_np2 gpu_nccl_frozen_rank; do
  if (( gpu_here )); then
    grep -q "$test: passed" "$work/rehearsal.log" || { cat "$work/rehearsal.log"; fail "rehearsal: $test did not pass on a GPU machine"; }
  else
    grep -q "$test: SKIPPED (ranks saying so: 2 of 2; SKIP: no usable GPU" "$work/rehearsal.log" ||
      { cat "$work/rehearsal.log"; fail "rehearsal: $test was not skipped by both ranks under the bundled mpiexec"; }
  fi
done
echo "5. rehearsal of stage 1 on the CPU: $(grep -m 1 '^| lenet' "$work/rehearsal.log"); $(grep -m 1 -o 'gpu_nccl_frozen_rank: [A-Za-z]*[^;]*' "$work/rehearsal.log")"
echo "PASS"
