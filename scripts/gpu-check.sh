#!/usr/bin/env bash
# The check of a machine with an NVIDIA GPU, in one run of under 7 minutes (docs/gpu-check.md):
#
#   on the build machine:  scripts/make-gpu-bundle.sh [--train-reference]
#   copy the repository with its gpu-bundle/ folder to the GPU machine
#   on the GPU machine:    scripts/gpu-check.sh
#
#   scripts/gpu-check.sh [--bundle FILE] [--rehearse] [LAST_STAGE]      LAST_STAGE 0, 1 (default) or 2
#
# --rehearse runs stage 1's own plumbing (steps, deadline, table, bench.json, archive) where there is
# no GPU: past "no usable GPU", on the CPU backend with lenet and inception-mini in fp32 (a test's).
# Stage 0, pre-flight (under a minute, all on stdout): unpacks the bundle (tar, else Python's
#   tarfile), finds every CUDA library the bundle needs (cuda-libs.txt) in $DPTRAIN_CUDA_LIBS,
#   $LD_LIBRARY_PATH, /usr/local/nvidia/lib*, the site-packages nvidia/*/lib folders of every python3,
#   $CUDA_HOME, /usr/local/cuda*/lib*, `ldconfig -p` and the system folders, prints the file each
#   soname resolved to, runs `ld.so --list` on every executable (and stops on "not found" or an
#   undefined symbol), as well as the bundled Open MPI's mpiexec and MCA components, then
#   `dptrain info`: the CUDA runtime, driver, cuBLAS, cuDNN (found and built with), NCCL (found and
#   built with) and the GPUs. With no device it stops with "no usable GPU" and the runtime's
#   cudaError (exit 3).
# Stage 1 (under 5 minutes): first, after the device test, `dptrain bench --layers` of ResNet-50 in
#   bf16: where its step's time goes, per layer kind and per layer, and every convolution's fastest
#   cuDNN algorithm against its fastest deterministic one (the per-kind table in the summary, the rest
#   in the log); then the GPU tests (NCCL on one rank; NCCL on two ranks and a rank
#   frozen in the GPU allreduce, both under the bundle's own Open MPI mpiexec; CPU/GPU agreement of
#   every op in fp32, bf16 and fp16, a model step, the same step twice bit for bit; the gradient reducer
#   with late streams; ResNet-50's stem at batch 512 against the CPU), then `dptrain bench` of
#   ResNet-50 in fp32 and bf16 (deterministic algorithms, then --nondeterministic: their cost) and
#   the PyTorch peer (torchvision ResNet-50, same batch and steps, bf16 autocast, channels-last;
#   skipped without torch), then GoogLeNet, Inception-BN and Inception-V3 while time is left.
# Stage 2 (when asked for): `dptrain train --backend cuda` in fp32, bf16 and fp16 on the dataset the
#   bundle carries (make-gpu-bundle.sh --train-reference), against the CPU run made with it.
#
# Output in $OUT (default out/gpu-check), at most 6 files: summary.txt (the verdicts and the table),
# bench.json (every benchmark, ours and the peer's) and logs.tar.gz (every log; written after each
# step and by the EXIT trap, so a run stopped at its limit still returns what it had). The tail of
# each failing log goes to stdout. Every program runs under `timeout -k` (dptrain catches SIGTERM).
# Exit status: 0 all passed, 1 something failed, 2 usage, 3 no usable GPU, 4 a library is missing.
# Knobs: BATCH (256), STEPS (10), WARMUP (3), GPU_CHECK_SECONDS (stage 1 ends by then; 300).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
start=$SECONDS
repo=$PWD
bundle_file=""
last_stage=1
rehearse=0
while (( $# )); do
  case $1 in
    --bundle) bundle_file=$2; shift 2 ;;
    --rehearse) rehearse=1; shift ;;
    0 | 1 | 2) last_stage=$1; shift ;;
    *) echo "usage: $0 [--bundle FILE] [--rehearse] [0|1|2]" >&2; exit 2 ;;
  esac
done
if [[ -z $bundle_file ]]; then
  for f in gpu-bundle/bundle.tar.gz gpu-bundle/bundle.tar.xz; do [[ -f $f ]] && { bundle_file=$f; break; }; done
fi
out=${OUT:-out/gpu-check}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
batch=${BATCH:-256}
steps=${STEPS:-10}
warmup=${WARMUP:-3}
deadline=${GPU_CHECK_SECONDS:-300}  # seconds from the start; stage 1 starts nothing after it
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
logs=$work/logs
mkdir -p "$logs" "$work/bin"
rm -f "$out/summary.txt" "$out/bench.json" "$out/logs.tar.gz"
status=0

say() { echo "[gpu-check $(date +%T) +$((SECONDS - start))s] $*" | tee -a "$out/summary.txt"; }
pack_logs() {  # the archive is replaced whole, so a kill at any moment leaves the last complete one
  tar -C "$work" -czf "$out/.logs.tar.gz" logs 2>/dev/null ||
    python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1], "w:gz"); t.add(sys.argv[2], "logs"); t.close()' \
      "$out/.logs.tar.gz" "$logs" 2>/dev/null
  mv -f "$out/.logs.tar.gz" "$out/logs.tar.gz" 2>/dev/null
}
# shellcheck disable=SC2317  # run by the EXIT trap
finish() {
  local rc=$?
  pack_logs
  rm -rf "$work"
  echo "[gpu-check] exit $rc after $((SECONDS - start)) s; in $out: $(find "$out" -mindepth 1 -printf '%P ')"
  exit "$rc"
}
trap finish EXIT
trap 'say "stopped by a signal"; exit 143' TERM INT
show_tail() {  # show_tail LOG: the end of a failing log, on stdout (which the caller sees even when $OUT is lost)
  echo "----- last lines of $(basename "$1") -----"
  tail -n "${2:-25}" "$1"
  echo "-----"
}

# ---------------------------------------------------------------------------------------- stage 0
say "stage 0: pre-flight on $(uname -n) ($(uname -r)); bundle ${bundle_file:-none}"
if command -v nvidia-smi >/dev/null; then
  timeout -k 2 20 nvidia-smi >"$logs/nvidia-smi.txt" 2>&1
  smi_gpus=$(timeout -k 2 10 nvidia-smi -L 2>/dev/null)
  say "nvidia-smi: ${smi_gpus:-no GPU listed}"
else
  smi_gpus=""
  say "nvidia-smi: not installed"
fi

[[ -n $bundle_file && -f $bundle_file ]] || { say "STOP: no bundle: run scripts/make-gpu-bundle.sh on the build machine and copy gpu-bundle/ along"; exit 4; }
bundle=$work/bundle
mkdir -p "$bundle"
if ! tar -C "$bundle" -xf "$bundle_file" 2>"$logs/unpack.log"; then
  # tar needs gzip (or xz) as a program; Python's tarfile reads both formats itself.
  rm -rf "$bundle" && mkdir -p "$bundle"
  if python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle_file" "$bundle" \
       2>>"$logs/unpack.log"; then
    say "unpacked with Python's tarfile (tar could not: $(head -n 1 "$logs/unpack.log"))"
  else
    show_tail "$logs/unpack.log"
    say "STOP: cannot unpack $bundle_file with tar or Python's tarfile"
    exit 4
  fi
fi
loader=$(find "$bundle/lib" -maxdepth 1 -name 'ld-linux-x86-64.so.*' | head -n 1)
[[ -x $loader && -s $bundle/cuda-libs.txt ]] || { say "STOP: the bundle has no loader or cuda-libs.txt: remake it"; exit 4; }

# Where CUDA libraries may be, in the order they are preferred.
search_dirs=()
add_dirs() { local d; for d in "$@"; do [[ -d $d && $d != */stubs* ]] && search_dirs+=("$d"); done; }
IFS=: read -ra extra <<<"${DPTRAIN_CUDA_LIBS:-}:${LD_LIBRARY_PATH:-}"
add_dirs "${extra[@]}"
add_dirs /usr/local/nvidia/lib64 /usr/local/nvidia/lib
pythons=()
for py in $(type -aP python3 python3.{8..14} 2>/dev/null) /opt/*/.venv/bin/python3 /opt/*/bin/python3; do
  # Not resolved through links: a virtual environment's python3 is a link, and only called by its
  # own path does it see the environment's site-packages.
  [[ -x $py && " ${pythons[*]} " != *" $py "* ]] && pythons+=("$py")
done
for py in "${pythons[@]}"; do
  while read -r site; do
    add_dirs "$site"/nvidia/*/lib
  done < <(timeout -k 2 5 "$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
done
add_dirs /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib /usr/local/lib/python3*/dist-packages/nvidia/*/lib
cuda_home=${CUDA_HOME:-/usr/local/cuda}
add_dirs "$cuda_home/lib64" "$cuda_home/lib" "$cuda_home/targets/x86_64-linux/lib"
add_dirs /usr/local/cuda*/lib64 /usr/local/cuda*/lib /usr/local/cuda*/targets/x86_64-linux/lib
ldconfig_list=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null)
add_dirs /usr/lib/x86_64-linux-gnu /usr/lib64 /lib64 /usr/lib /lib
printf '%s\n' "${search_dirs[@]}" | awk '!seen[$0]++' >"$logs/search-dirs.txt"
say "searching $(wc -l <"$logs/search-dirs.txt") folders (python3: ${#pythons[@]} found) for $(wc -l <"$bundle/cuda-libs.txt") CUDA libraries"

resolve() {  # resolve SONAME: the file it is found as, first in the folders, then through ldconfig
  local d
  while read -r d; do
    [[ -e $d/$1 ]] && { echo "$d/$1"; return 0; }
  done <"$logs/search-dirs.txt"
  awk -v so="$1" '$1 == so && $NF !~ /stubs/ {print $NF; exit}' <<<"$ldconfig_list" | grep . && return 0
  return 1
}
lib_dirs=() lib_files=()
missing=0 driver=""
while read -r soname need; do
  if file=$(resolve "$soname"); then
    say "  $soname -> $file ($(basename "$(readlink -f "$file")"))"
    lib_dirs+=("$(dirname "$file")") lib_files+=("$file")
    [[ $soname == libcuda.so.1 ]] && driver=$file
  elif [[ $soname == libcuda.so.1 ]]; then
    say "  $soname -> not found: no NVIDIA driver library on this machine"
  elif [[ $need == optional ]]; then
    say "  $soname -> not found (optional)"
  else
    say "  $soname -> NOT FOUND"
    missing=1
  fi
done <"$bundle/cuda-libs.txt"
libpath=$bundle/lib
for d in "${lib_dirs[@]}"; do [[ :$libpath: == *:$d:* ]] || libpath+=:$d; done
echo "$libpath" >"$logs/library-path.txt"
if (( missing )); then
  say "STOP: a CUDA library the bundle needs is not on this machine (see above; DPTRAIN_CUDA_LIBS=DIR adds a folder)"
  exit 4
fi

# Each executable through the bundled loader, as it will run: every library found, every symbol bound.
for exe in "$bundle"/bin/*; do
  name=$(basename "$exe")
  printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' "$loader" "$libpath" "$exe" >"$work/bin/$name"
  chmod +x "$work/bin/$name"
  # ld.so --list, and with LD_BIND_NOW and LD_WARN every symbol resolved as well (what `ldd -r` does).
  timeout -k 2 20 env LD_TRACE_LOADED_OBJECTS=1 LD_WARN=yes LD_BIND_NOW=yes "$loader" --library-path "$libpath" "$exe" \
    >"$logs/ld-$name.txt" 2>&1
  if grep -Eq 'not found|undefined symbol|version .* not found' "$logs/ld-$name.txt"; then
    grep -E 'not found|undefined symbol' "$logs/ld-$name.txt" | head -n 10
    say "STOP: $name cannot load here (ld.so --list: a library or symbol not found; see above)"
    exit 4
  fi
done
# The driver and cuDNN's sub-libraries are loaded at run time, so each found library is listed too.
for lib in "${lib_files[@]}"; do
  echo "== $lib" >>"$logs/ld-cuda-libraries.txt"
  timeout -k 2 20 "$loader" --library-path "$libpath" --list "$lib" >>"$logs/ld-cuda-libraries.txt" 2>&1
done
if grep -q 'not found' "$logs/ld-cuda-libraries.txt" 2>/dev/null; then
  grep -e '^==' -e 'not found' "$logs/ld-cuda-libraries.txt" | grep -B1 'not found' | head -n 20
  say "STOP: a CUDA library found here misses a library it needs (see above)"
  exit 4
fi
# The bundle's Open MPI (the two-rank tests): mpiexec through the bundled loader, told by Open MPI's
# and PMIx's relocation variables where its components, help texts and parameter files lie. --argv0
# keeps its name relative: an absolute one would make it add its folders to the ranks' PATH and
# LD_LIBRARY_PATH. The ranks it forks are the wrappers above, which exec the bundled loader in turn.
mpiexec=""
if [[ -x $bundle/openmpi/bin/mpiexec ]]; then
  mpiexec=$work/bin/mpiexec
  {
    printf '#!/bin/sh\n'
    printf 'export OPAL_PREFIX="%s" OPAL_EXEC_PREFIX="%s" OPAL_BINDIR="%s" OPAL_LIBDIR="%s"\n' \
      "$bundle/openmpi" "$bundle/openmpi" "$bundle/openmpi/bin" "$bundle/lib"
    printf 'export OPAL_PKGLIBDIR="%s" OPAL_DATAROOTDIR="%s" OPAL_DATADIR="%s" OPAL_PKGDATADIR="%s" OPAL_SYSCONFDIR="%s"\n' \
      "$bundle/openmpi/lib/openmpi3" "$bundle/openmpi/share" "$bundle/openmpi/share" "$bundle/openmpi/share/openmpi" \
      "$bundle/openmpi/etc"
    printf 'export PMIX_PREFIX="%s" PMIX_INSTALL_PREFIX="%s" PMIX_LIBDIR="%s" PMIX_PKGLIBDIR="%s"\n' \
      "$bundle/pmix" "$bundle/pmix" "$bundle/lib" "$bundle/pmix/lib/pmix"
    printf 'export PMIX_DATAROOTDIR="%s" PMIX_DATADIR="%s" PMIX_PKGDATADIR="%s" PMIX_SYSCONFDIR="%s" PMIX_MCA_mca_base_component_path="%s"\n' \
      "$bundle/pmix/share" "$bundle/pmix/share" "$bundle/pmix/share/pmix" "$bundle/pmix/etc" "$bundle/pmix/lib/pmix"
    # One node: shared memory between the ranks, without the single-copy mechanism containers forbid.
    printf 'export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none\n'
    # No hwloc plugins from the machine (they would load its libraries beside the bundle's).
    printf 'export HWLOC_PLUGINS_PATH="%s"\n' "$bundle/openmpi/no-hwloc-plugins"
    printf 'exec "%s" --library-path "%s" --argv0 mpiexec "%s" "$@"\n' "$loader" "$bundle/lib" "$bundle/openmpi/bin/mpiexec"
  } >"$mpiexec" || { say "STOP: cannot write $mpiexec"; exit 1; }
  chmod +x "$mpiexec" || { say "STOP: cannot make $mpiexec executable"; exit 1; }
  ld_failed=0
  timeout -k 2 20 env LD_TRACE_LOADED_OBJECTS=1 LD_WARN=yes LD_BIND_NOW=yes "$loader" --library-path "$bundle/lib" \
    "$bundle/openmpi/bin/mpiexec" >"$logs/ld-mpiexec.txt" 2>&1 || ld_failed=1
  for component in "$bundle"/openmpi/lib/openmpi3/*.so "$bundle"/pmix/lib/pmix/*.so; do
    [[ -f $component ]] || continue
    echo "== $component" >>"$logs/ld-mca-components.txt"
    timeout -k 2 20 "$loader" --library-path "$bundle/lib" --list "$component" >>"$logs/ld-mca-components.txt" 2>&1 ||
      { echo "(exit $?)" >>"$logs/ld-mca-components.txt"; ld_failed=1; }
  done
  if (( ld_failed )) || grep -Eq 'not found|undefined symbol' "$logs/ld-mpiexec.txt" "$logs/ld-mca-components.txt"; then
    grep -h -e '^==' -e 'not found' -e 'undefined symbol' -e '^(exit' "$logs/ld-mpiexec.txt" "$logs/ld-mca-components.txt" |
      grep -B1 -e 'not found' -e 'undefined symbol' -e '^(exit' | head -n 20
    say "STOP: the bundled Open MPI cannot load here (see above)"
    exit 4
  fi
fi
say "ld.so --list: every executable loads with all its libraries and symbols$([[ -n $mpiexec ]] && echo ", and so do Open MPI's mpiexec and its $(grep -c '^==' "$logs/ld-mca-components.txt") MCA components")"

timeout -k 5 60 "$work/bin/dptrain" info >"$logs/info.txt" 2>&1
rc=$?
if (( rc != 0 )); then
  sed 's/^/    /' "$logs/info.txt" | tee -a "$out/summary.txt"
  show_tail "$logs/info.txt"
  say "STOP: dptrain info failed (exit $rc)"
  exit 1
fi
# The versions found here beside those the bundle was built against: cuDNN's line names both; NCCL's
# build version is on the toolkit line ("toolkit: ...", then "cuDNN X (...), NCCL Y (...)").
found_cudnn=$(sed -n 's/^cuDNN  *\([0-9][0-9.]*\).*/\1/p' "$logs/info.txt" | head -n 1)
built_cudnn=$(sed -n 's/^cuDNN  *[0-9.]*, built with \([0-9][0-9.]*\).*/\1/p' "$logs/info.txt" | head -n 1)
found_nccl=$(sed -n 's/^NCCL  *\([0-9][0-9.]*\).*/\1/p' "$logs/info.txt" | head -n 1)
built_nccl=$(sed -n '/^toolkit:/,/^[^ t]/s/.*NCCL \([0-9][0-9.]*\).*/\1/p' "$logs/info.txt" | head -n 1)
versions() {  # versions NAME FOUND BUILT
  local note=""
  [[ -n $2 && -n $3 && ${2%%.*} != "${3%%.*}" ]] && note=" (a different major version)"
  echo "$1 ${2:-unknown} found, built with ${3:-unknown}$note"
}
say "versions: $(versions cuDNN "$found_cudnn" "$built_cudnn"); $(versions NCCL "$found_nccl" "$built_nccl")"
sed 's/^/    /' "$logs/info.txt" | tee -a "$out/summary.txt"
gpus_line=$(grep -m 1 '^GPUs ' "$logs/info.txt")
if [[ $gpus_line =~ none:\ (.*) ]]; then
  say "no usable GPU: ${BASH_REMATCH[1]}"
  [[ -n $smi_gpus ]] && say "but nvidia-smi lists one: the CUDA runtime sees no device through driver ${driver:-(none found)}"
  (( rehearse )) || exit 3
  say "rehearsal: going on with the CPU backend"
fi
gpu_name=$(grep -m 1 '^  cuda:0' "$logs/info.txt" | sed 's/^  cuda:0  //')
say "stage 0 passed: ${gpus_line#GPUs } GPU(s), cuda:0 = $gpu_name"
pack_logs
(( last_stage >= 1 )) || exit 0

# ---------------------------------------------------------------------------------------- stage 1
left() { echo $((deadline - (SECONDS - start))); }
limit() { local l; l=$(left); (( l > $1 )) && l=$1; echo "$l"; }  # limit CAP: CAP, or what is left
step() {  # step NAME CAP COMMAND...: COMMAND under timeout -k, output in logs/NAME.log; its exit code
  # (200: not run, too little time left before the deadline)
  local name=$1 cap=$2 lim
  shift 2
  lim=$(limit "$cap")
  if (( lim < 15 )); then
    echo "not run: out of time" >"$logs/$name.log"
    return 200
  fi
  timeout -k 10 "$lim" "$@" >"$logs/$name.log" 2>&1
}
mpi_step() {  # mpi_step NAME EXE CAP [PASS_REGEX]: two ranks of the bundled EXE under the bundle's mpiexec, judged
  # as CTest judges the test of that name: a "SKIP:" line is a skip whatever the exit code; with
  # PASS_REGEX, a line matching it passes and nothing else does; without, exit code 0 passes.
  local name=$1 exe=$2 cap=$3 pass=${4:-} rc skips
  if [[ -z $mpiexec || ! -x $work/bin/$exe ]]; then
    echo "not run: the bundle has no Open MPI or no $exe (remake it)" >"$logs/$name.log"
    say "$name: FAILED (the bundle has no Open MPI or no $exe: remake it with make-gpu-bundle.sh)"
    status=1
    pack_logs
    return
  fi
  step "$name" "$cap" "$mpiexec" --oversubscribe --allow-run-as-root --tag-output -n 2 "$work/bin/$exe"
  rc=$?
  case $rc in
    124 | 137)
      # mpiexec, stopped by timeout, normally takes its ranks down; a rank it left (one frozen by
      # the test, say) would hold the GPU through the benchmarks.
      for pid in $(pgrep -f -- "$bundle/bin/$exe" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
      verdict "$name" "$rc"; return ;;
    200) verdict "$name" "$rc"; return ;;
  esac
  # (--tag-output: each line of a rank's output starts with [JOB,RANK]<stdout>.)
  skips=$(grep 'SKIP:' "$logs/$name.log" | grep -o '^\[[0-9]*,[0-9]*\]' | sort -u | wc -l)
  if grep -q 'SKIP:' "$logs/$name.log"; then
    say "$name: SKIPPED (ranks saying so: $skips of 2; $(grep -m 1 -o 'SKIP:.*' "$logs/$name.log"))"
    status=1
  elif [[ -n $pass ]]; then
    if grep -Eq -- "$pass" "$logs/$name.log"; then
      say "$name: passed ($(grep -m 1 -Eo -- "$pass" "$logs/$name.log" | cut -c 1-60)...)"
    else
      say "$name: FAILED (exit $rc; no line matches the expected report)"
      show_tail "$logs/$name.log"
      status=1
    fi
  else
    verdict "$name" "$rc"
    return
  fi
  pack_logs
}
verdict() {  # verdict NAME RC: one summary line; the log's tail on stdout on failure
  case $2 in
    0) say "$1: passed" ;;
    77) say "$1: SKIPPED ($(grep -m 1 'SKIP' "$logs/$1.log"))"; status=1 ;;
    124 | 137) say "$1: TIMED OUT"; show_tail "$logs/$1.log"; status=1 ;;
    200) say "$1: not run (out of time)" ;;
    *) say "$1: FAILED (exit $2)"; show_tail "$logs/$1.log"; status=1 ;;
  esac
  pack_logs
}
say "stage 1: GPU tests, then benchmarks (batch $batch, $warmup warm-up + $steps timed steps) until +${deadline}s"
step gpu_device 60 "$work/bin/gpu_device"; verdict gpu_device $?

# The benchmarks' helpers first: where ResNet-50's bf16 step spends its time is the first thing printed.
runs=()  # "source model precision" of every result file, in order, for bench.json and the table
write_bench_json() {
  local first=1 entry src model precision
  {
    printf '{"gpu": "%s", "batch_size": %s, "steps": %s, "warmup": %s, "runs": [\n' "$gpu_name" "$batch" "$steps" "$warmup"
    for entry in "${runs[@]}"; do
      read -r src model precision <<<"$entry"
      (( first )) || printf ',\n'
      first=0
      printf '{"source": "%s", "result": ' "$src"
      cat "$logs/$src-$model-$precision.json"
      printf '}'
    done
    printf '\n]}\n'
  } >"$out/.bench.json" && mv -f "$out/.bench.json" "$out/bench.json"
}
field() { grep -o "\"$2\": *[-0-9.e+]*" "$1" 2>/dev/null | head -n 1 | sed 's/.*: *//'; }
rate() { awk -v r="$(field "$1" images_per_sec)" -v e="$(field "$1" images_per_sec_stderr)" 'BEGIN {printf "%.1f +/- %.1f images/s", r, e}'; }
backend=cuda headline=resnet50 first=bf16 others=(googlenet inception-bn inception-v3)
(( rehearse )) && backend=cpu headline=lenet first=fp32 others=(inception-mini)
# bench MODEL PRECISION [nondeterministic|layers|nchw]: nondeterministic takes cuDNN's fastest
# algorithms, atomics too; layers adds `--layers` (where the step's time goes, per layer kind and per
# layer, and every convolution's best algorithm against its best deterministic one) and copies its
# tables into the summary; nchw runs with DPTRAIN_LAYOUT=nchw (16-bit activations are NHWC by default).
bench() {
  local name=dptrain-$1-$2 rc extra=() label=$2 layout=()
  if [[ ${3:-} == nondeterministic ]]; then extra=(--nondeterministic) label=$2-nondeterministic name+=-nondeterministic; fi
  if [[ ${3:-} == nchw ]]; then layout=(env DPTRAIN_LAYOUT=nchw) label=$2-nchw name+=-nchw; fi
  [[ ${3:-} == layers ]] && extra=(--layers)
  if [[ $backend == cpu && $2 != fp32 ]]; then say "$1 $2: left out (the CPU backend trains in fp32)"; return; fi
  if [[ $backend == cpu && ${3:-} == nondeterministic ]]; then say "$1 $label: left out (the CPU backend has no algorithm search)"; return; fi
  if [[ $backend == cpu && ${3:-} == nchw ]]; then say "$1 $label: left out (the CPU backend has its own layouts)"; return; fi
  step "$name" 120 "${layout[@]}" "$work/bin/dptrain" bench --backend "$backend" --model "$1" --precision "$2" --batch-size "$batch" \
    --steps "$steps" --warmup "$warmup" --json "$logs/$name.json" "${extra[@]}"
  rc=$?
  if (( rc == 0 )) && [[ -s $logs/$name.json ]]; then
    runs+=("dptrain $1 $label")
    write_bench_json
    say "$1 $label: $(rate "$logs/$name.json")$(grep -m 1 -o 'GPU memory: .*' "$logs/$name.log" | sed 's/^/; /')$(grep -m 1 -o 'cuDNN algorithm search: .*' "$logs/$name.log" | sed 's/^/; /')"
    if [[ ${3:-} == layers ]]; then  # the per-kind table, the convolutions' sums; the rest stays in the log
      sed -n '/^time per layer kind/,/^time per layer (/p' "$logs/$name.log" | sed '$d' | sed 's/^/    /' | tee -a "$out/summary.txt"
      grep -E '^  sum over the layers: ' "$logs/$name.log" | sed 's/^/    convolutions:/' | tee -a "$out/summary.txt"
    fi
    pack_logs
  else
    verdict "$name" "$rc"
  fi
}
peer_python=""
peer() {  # peer PRECISION: torchvision's ResNet-50 in PyTorch, the same batch and steps
  local name=pytorch-resnet50-$1 rc
  if [[ -z $peer_python ]]; then
    for py in "${pythons[@]}"; do
      if timeout -k 5 60 "$py" -c 'import torch, torchvision' >>"$logs/peer-import.log" 2>&1; then peer_python=$py; break; fi
    done
    [[ -n $peer_python ]] || peer_python=none
  fi
  if [[ $peer_python == none ]]; then
    say "PyTorch peer $1: skipped (no python3 here imports torch and torchvision)"
    return
  fi
  step "$name" 120 env PYTHONUNBUFFERED=1 "$peer_python" "$repo/scripts/gpu-check-peer.py" --precision "$1" \
    --batch-size "$batch" --steps "$steps" --warmup "$warmup" --json "$logs/$name.json"
  rc=$?
  if (( rc == 0 )) && [[ -s $logs/$name.json ]]; then
    runs+=("pytorch resnet50 $1")
    write_bench_json
    say "PyTorch resnet50 $1: $(rate "$logs/$name.json")$(sed -n 's/.*"gpu_memory_peak_mib": *\([0-9]*\).*/; GPU memory: \1 MiB peak/p' "$logs/$name.json")"
    pack_logs
  else
    verdict "$name" "$rc"
  fi
}
bench "$headline" "$first" layers

step gpu_nccl 60 "$work/bin/gpu_nccl"; verdict gpu_nccl $?
# Two ranks under mpiexec (seconds each). The frozen rank's report, as tests/gpu/CMakeLists.txt expects it.
mpi_step gpu_nccl_np2 gpu_nccl 45
frozen_report='rank 0: collective #[0-9]+ \([a-z -]+\) has waited [0-9]+ s, longer than --stall-timeout 8 s. ranks that stopped answering \(frozen, killed, or their node is lost\): 1 on node1 '
mpi_step gpu_nccl_frozen_rank gpu_nccl_frozen_rank 45 "$frozen_report"
step gpu_backend_agreement 100 "$work/bin/gpu_backend_agreement"; verdict gpu_backend_agreement $?
grep -E '^(agreement |bf16 batch norm|fp16 batch norm|algorithm searches )' "$logs/gpu_backend_agreement.log" | sed 's/^/    /' | tee -a "$out/summary.txt"
# The other layout of each precision: 16-bit NCHW (and fp32 NCHW again, its default).
step gpu_backend_agreement_nchw 100 env DPTRAIN_LAYOUT=nchw "$work/bin/gpu_backend_agreement"; verdict gpu_backend_agreement_nchw $?
grep -E '^agreement ' "$logs/gpu_backend_agreement_nchw.log" | sed 's/^/    nchw: /' | tee -a "$out/summary.txt"
step gpu_reducer_fence 30 "$work/bin/gpu_reducer_fence"; verdict gpu_reducer_fence $?
grep -E '^reducer fence' "$logs/gpu_reducer_fence.log" | sed 's/^/    /' | tee -a "$out/summary.txt"
step gpu_resnet_stem 60 "$work/bin/gpu_resnet_stem"; verdict gpu_resnet_stem $?
grep -E '^(resnet50 stem|agreement |algorithm searches )' "$logs/gpu_resnet_stem.log" | sed 's/^/    /' | tee -a "$out/summary.txt"

[[ $first == fp32 ]] || bench "$headline" fp32
bench "$headline" fp32 nondeterministic  # what the default's deterministic algorithms cost
bench "$headline" bf16 nondeterministic
bench "$headline" bf16 nchw  # what NHWC gains over NCHW
peer bf16
for model in "${others[@]}"; do
  bench "$model" bf16
  bench "$model" fp32
done
peer fp32

table() {
  local entry src model precision j p ratio peer_rate
  echo "| model | precision | batch | dptrain img/s | +/- | PyTorch img/s | dptrain / PyTorch | GFLOP/s | % of fp32 peak | GPU MiB | cuDNN search s |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  for entry in "${runs[@]}"; do
    read -r src model precision <<<"$entry"
    [[ $src == dptrain ]] || continue
    j=$logs/$src-$model-$precision.json p=$logs/pytorch-$model-$precision.json ratio="" peer_rate=""
    if [[ -s $p ]]; then
      peer_rate=$(field "$p" images_per_sec)
      ratio=$(awk -v a="$(field "$j" images_per_sec)" -v b="$peer_rate" 'BEGIN {if (b > 0) printf "%.2f", a / b}')
    fi
    awk -v m="$model" -v p="$precision" -v b="$batch" -v r="$(field "$j" images_per_sec)" \
        -v e="$(field "$j" images_per_sec_stderr)" -v pr="$peer_rate" -v q="$ratio" -v g="$(field "$j" gflops_achieved)" \
        -v f="$(field "$j" efficiency)" -v mem="$(field "$j" gpu_memory_peak_mib)" -v s="$(field "$j" cudnn_search_seconds)" '
      function num(x, format) { return (x == "" || x < 0) ? "" : sprintf(format, x) }  # -1: no GPU memory
      BEGIN { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", m, p, b, num(r, "%.1f"), num(e, "%.1f"),
              num(pr, "%.1f"), q, num(g, "%.0f"), (f == "" ? "" : sprintf("%.1f", 100 * f)), num(mem, "%.0f"), num(s, "%.1f") }'
  done
}
say "stage 1 done: results"
table | tee -a "$out/summary.txt"
(( last_stage >= 2 )) || exit "$status"

# ---------------------------------------------------------------------------------------- stage 2
if [[ ! -s $bundle/train/cpu.jsonl ]]; then
  say "stage 2: skipped (the bundle has no train reference: make it with make-gpu-bundle.sh --train-reference)"
  exit 1
fi
deadline=$((SECONDS - start + 240))
read -ra train_args <"$bundle/train/arguments.txt"
top1() { sed -n 's/.*"validation_top1": \([0-9.e-]*\).*/\1/p' "$1" | tail -n 1; }
cpu_top1=$(top1 "$bundle/train/cpu.jsonl")
say "stage 2: dptrain train --backend cuda ${train_args[*]} (CPU top-1 $cpu_top1, made with the bundle)"
for precision in fp32 bf16 fp16; do
  name=train-$precision
  step "$name" 90 "$work/bin/dptrain" train --data "$bundle/train/data" "${train_args[@]}" --backend cuda \
    --precision "$precision" --metrics "$logs/$name.jsonl"
  rc=$?
  if (( rc != 0 )); then verdict "$name" "$rc"; continue; fi
  gpu_top1=$(top1 "$logs/$name.jsonl")
  if awk -v a="$gpu_top1" -v b="$cpu_top1" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(d <= 0.05)}'; then
    say "$name: passed (validation top-1 $gpu_top1, CPU $cpu_top1)"
  else
    say "$name: FAILED (validation top-1 $gpu_top1, CPU $cpu_top1: more than 0.05 apart)"
    show_tail "$logs/$name.log"
    status=1
  fi
  pack_logs
done
exit "$status"
