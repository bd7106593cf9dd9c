#!/usr/bin/env bash
# The CUDA toolkit a build uses is the one it is given (Spack passes its cuda's nvcc and prefix), never
# /usr/local/cuda when that exists too. A fake toolkit (a stub nvcc that reports CUDA 12.4, and no
# libraries) is given four ways: CUDACXX, -DCUDAToolkit_ROOT, -DCMAKE_CUDA_COMPILER and the
# CUDAToolkit_ROOT environment variable. Each configure of the `cuda` preset must choose the stub
# (the "CUDA toolkit:" line names the nvcc and the root taken) and then fail naming it (there is no
# cudart beside it) instead of quietly building with another toolkit. A -DCUDAToolkit_ROOT that is
# not the given compiler's toolkit is refused, and a named compiler that does not exist counts as
# missing. Usage: cuda_toolkit_choice.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: $0 SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

toolkit=$work/cuda-12.4-fake
mkdir -p "$toolkit/bin" "$toolkit/include" "$toolkit/lib64"
cat > "$toolkit/bin/nvcc" <<'NVCC'
#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "nvcc: NVIDIA (R) Cuda compiler driver"
  echo "Cuda compilation tools, release 12.4, V12.4.131"
  exit 0
fi
echo "fake nvcc: cannot compile" >&2
exit 1
NVCC
chmod +x "$toolkit/bin/nvcc"

# configure NAME [ENV=VALUE...] -- [CMAKE ARGS...]: the output of a configure of the cuda preset.
configure() {
  local name=$1; shift
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  env -u CUDACXX -u CUDAToolkit_ROOT "${env[@]}" cmake --preset cuda -S "$src" -B "$work/build-$name" \
    -DDPTRAIN_BUILD_TESTS=OFF "$@" > "$work/$name.log" 2>&1
  echo $? > "$work/$name.rc"
}

check() {  # check NAME FROM: the stub was chosen (from FROM), and the configure failed naming it
  local name=$1 from=$2 log=$work/$1.log
  grep -q "CUDA toolkit: nvcc $toolkit/bin/nvcc (from $from), root $toolkit" "$log" ||
    { cat "$log"; fail "$name: the configure did not take the given toolkit"; }
  if grep -q "CUDA backend: CUDA" "$log"; then cat "$log"; fail "$name: the configure built with another toolkit"; fi
  [[ $(cat "$work/$name.rc") -ne 0 ]] || fail "$name: the configure succeeded with a toolkit that cannot compile"
  # CMake wraps an error's lines: join them first.
  tr -s ' \n' ' ' < "$log" | grep -q "a working CUDA toolkit (nvcc $toolkit/bin/nvcc from $from" ||
    { cat "$log"; fail "$name: the error does not name the given toolkit"; }
  echo "ok: $name chose $toolkit (from $from) and stopped on it"
}

configure cudacxx CUDACXX="$toolkit/bin/nvcc" --
check cudacxx CUDACXX
configure root -- -DCUDAToolkit_ROOT="$toolkit"
check root CUDAToolkit_ROOT
configure compiler -- -DCMAKE_CUDA_COMPILER="$toolkit/bin/nvcc"
check compiler CMAKE_CUDA_COMPILER
# And the environment's CUDAToolkit_ROOT (what a module or Spack's build environment may set).
configure root_env CUDAToolkit_ROOT="$toolkit" --
check root_env CUDAToolkit_ROOT
# Two toolkits at once: refused, naming both.
configure mixed -- -DCMAKE_CUDA_COMPILER="$toolkit/bin/nvcc" -DCUDAToolkit_ROOT=/usr/local/cuda
[[ $(cat "$work/mixed.rc") -ne 0 ]] || fail "a compiler and a CUDAToolkit_ROOT of another toolkit were accepted"
tr -s ' \n' ' ' < "$work/mixed.log" | grep -q "CUDAToolkit_ROOT /usr/local/cuda is not the toolkit of the CUDA compiler" ||
  { cat "$work/mixed.log"; fail "the error does not name the two toolkits"; }
echo "ok: a compiler of one toolkit with the root of another is refused"
# A compiler that does not exist, with DPTRAIN_CUDA=AUTO: the build goes on without CUDA.
configure absent CUDACXX="$work/nowhere/bin/nvcc" -- -DDPTRAIN_CUDA=AUTO
[[ $(cat "$work/absent.rc") -eq 0 ]] || { cat "$work/absent.log"; fail "an absent compiler stopped an AUTO configure"; }
grep -q "CUDA backend not built; missing: a working CUDA toolkit (nvcc $work/nowhere/bin/nvcc from CUDACXX" "$work/absent.log" ||
  { cat "$work/absent.log"; fail "the AUTO configure does not say why CUDA is not built"; }
echo "ok: an absent compiler is reported missing and the build goes on without CUDA"
echo "PASS"
