#!/usr/bin/env bash
# dptrain leaves CUDA_MODULE_LOADING to the user (forcing EAGER measured slower; docs/performance.md):
# `dptrain info` shows the value the CUDA runtime sees. Needs the CUDA libraries, not a GPU.
# Usage: module_loading_test.sh DPTRAIN
set -uo pipefail
dptrain=$1
fail() { echo "FAIL: $*"; exit 1; }
unset_out=$(env -u CUDA_MODULE_LOADING "$dptrain" info 2>&1) || { echo "$unset_out"; fail "dptrain info failed"; }
grep -q "^modules  CUDA_MODULE_LOADING=unset (CUDA's default: lazy)$" <<<"$unset_out" ||
  { echo "$unset_out"; fail "unset, dptrain changed CUDA_MODULE_LOADING"; }
for value in EAGER LAZY; do
  out=$(CUDA_MODULE_LOADING=$value "$dptrain" info 2>&1) || { echo "$out"; fail "dptrain info failed"; }
  grep -q "^modules  CUDA_MODULE_LOADING=$value$" <<<"$out" ||
    { echo "$out"; fail "the user's CUDA_MODULE_LOADING=$value was not kept"; }
done
echo "PASS: CUDA's default unless the user sets it (EAGER and LAZY kept)"
