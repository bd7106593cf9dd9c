#!/usr/bin/env bash
# dptrain loads CUDA's kernels eagerly unless the user chose (app/main.cpp): `dptrain info` shows the
# CUDA_MODULE_LOADING the CUDA runtime sees. Needs the CUDA libraries, not a GPU.
# Usage: module_loading_test.sh DPTRAIN
set -uo pipefail
dptrain=$1
fail() { echo "FAIL: $*"; exit 1; }
unset_out=$(env -u CUDA_MODULE_LOADING "$dptrain" info 2>&1) || { echo "$unset_out"; fail "dptrain info failed"; }
grep -q "^modules  CUDA_MODULE_LOADING=EAGER$" <<<"$unset_out" ||
  { echo "$unset_out"; fail "unset, CUDA_MODULE_LOADING did not become EAGER"; }
lazy_out=$(CUDA_MODULE_LOADING=LAZY "$dptrain" info 2>&1) || { echo "$lazy_out"; fail "dptrain info failed"; }
grep -q "^modules  CUDA_MODULE_LOADING=LAZY$" <<<"$lazy_out" ||
  { echo "$lazy_out"; fail "the user's CUDA_MODULE_LOADING=LAZY was not kept"; }
echo "PASS: EAGER unless the user sets it (LAZY kept)"
