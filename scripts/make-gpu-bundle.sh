#!/usr/bin/env bash
# Builds, on a build machine (no GPU needed), what scripts/gpu-check.sh runs on a GPU machine whose
# image has a driver and the CUDA libraries (toolkit, or PyTorch's nvidia-* wheels) but none of our
# Debian dependencies (oneDNN, HDF5, Open MPI, libjpeg-turbo, ...): the `cuda` preset's dptrain and
# GPU test executables, stripped, with every shared library they load from here except the CUDA ones
# (the machine's are found by gpu-check.sh's stage 0) - glibc and its loader included, so the bundle
# does not depend on the image's distribution or glibc version. The two-rank GPU tests need an
# MPI launcher, so the bundle also carries this machine's Open MPI run time: mpiexec, the MCA
# components of Open MPI and of PMIx that one node uses (shared memory and TCP; not UCX, libfabric,
# PSM or verbs, whose libraries are large and useless without their fabric), their help texts and
# default parameter files, under openmpi/ and pmix/ (gpu-check.sh points Open MPI's and PMIx's
# relocation variables there).
#
#   scripts/make-gpu-bundle.sh [--train-reference] [--build-dir DIR] [--no-build] [--output DIR]
#
# -> DIR/bundle.tar.gz (default gpu-bundle/, git-ignored), with bin/, lib/, openmpi/, pmix/ and cuda-libs.txt (the
# CUDA sonames the executables need, the driver's and cuDNN's run-time-loaded ones included; a line
# "SONAME optional" is one they can do without).
# --train-reference adds stage 2's input: a small dataset made here and the CPU run of
# `dptrain train` on it, so the GPU machine spends no time on CPU work.
# --no-build packs what DIR (default build/cuda) already holds (the CTest test gpu_check does).
#
# Copy gpu-bundle/ to the GPU machine with the repository and run scripts/gpu-check.sh there
# (docs/gpu-check.md). The bundle is kept small enough to travel with a checkout: this script fails
# above 48 MiB packed.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
build_dir=build/cuda
output=gpu-bundle
build=1
train_reference=0
while (( $# )); do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --train-reference) train_reference=1; shift ;;
    *) echo "usage: $0 [--train-reference] [--build-dir DIR] [--no-build] [--output DIR]" >&2; exit 2 ;;
  esac
done
targets=(dptrain gpu_device gpu_backend_agreement gpu_nccl gpu_nccl_frozen_rank gpu_reducer_fence gpu_resnet_stem)
executables=("$build_dir/app/dptrain" "$build_dir/tests/gpu/gpu_device" "$build_dir/tests/gpu/gpu_backend_agreement"
             "$build_dir/tests/gpu/gpu_nccl" "$build_dir/tests/gpu/gpu_nccl_frozen_rank"
             "$build_dir/tests/gpu/gpu_reducer_fence" "$build_dir/tests/gpu/gpu_resnet_stem")

if (( build )); then
  [[ $build_dir == build/cuda ]] && cmake --preset cuda >/dev/null  # another DIR is configured already
  cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
fi
for exe in "${executables[@]}"; do
  [[ -x $exe ]] || { echo "make-gpu-bundle: $exe is missing (build the cuda preset's ${targets[*]})" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "${executables[@]}" "$stage/bin/"
strip --strip-unneeded "$stage"/bin/*

# Open MPI's run time (Debian's layout, found through ompi_info), for the two-rank tests' mpiexec:
# mpiexec (orterun; one node needs no orted), the MCA components (minus those of fabrics a single
# node without a network fabric never uses, and of OpenSHMEM), the help texts, amca-param-sets and
# the default parameter files; PMIx's components, help texts and parameter file beside them.
command -v ompi_info >/dev/null || { echo "make-gpu-bundle: no ompi_info: Open MPI (openmpi-bin) is needed to pack mpiexec" >&2; exit 1; }
ompi_path() { ompi_info --parsable --path "$1" | awk -F: -v k="$1" '$2 == k {print $3; exit}'; }
ompi_bindir=$(ompi_path bindir)
ompi_pkglibdir=$(ompi_path pkglibdir)
ompi_pkgdatadir=$(ompi_path pkgdatadir)
ompi_sysconfdir=$(ompi_path sysconfdir)
for d in "$ompi_bindir" "$ompi_pkglibdir" "$ompi_pkgdatadir" "$ompi_sysconfdir"; do
  [[ -d $d ]] || { echo "make-gpu-bundle: Open MPI's folder '$d' (ompi_info --path all) is missing" >&2; exit 1; }
done
[[ -x $ompi_bindir/orterun ]] || { echo "make-gpu-bundle: no $ompi_bindir/orterun (Open MPI 4's mpiexec)" >&2; exit 1; }
unwanted_component='^lib(ucp|ucs|uct|ucm|fabric|psm|psm2|psm_infinipath|infinipath|ibverbs|rdmacm|efa|nl-[a-z-]*3|oshmem|mca_common_(ucx|ofi|verbs))\.so'
mkdir -p "$stage/openmpi/bin" "$stage/openmpi/lib/openmpi3" "$stage/openmpi/share" "$stage/openmpi/etc"
cp "$ompi_bindir/orterun" "$stage/openmpi/bin/mpiexec"
kept=0 dropped=()
for component in "$ompi_pkglibdir"/mca_*.so; do
  needs=$(ldd "$component")  # (captured: grep -q would cut the pipe short, which pipefail counts as failing)
  if awk '{print $1}' <<<"$needs" | grep -Eq "$unwanted_component"; then
    dropped+=("$(basename "$component" .so)")
  else
    cp "$component" "$stage/openmpi/lib/openmpi3/"
    kept=$((kept + 1))
  fi
done
cp -R "$ompi_pkgdatadir" "$stage/openmpi/share/openmpi"
for f in openmpi-mca-params.conf openmpi-default-hostfile; do
  if [[ -f $ompi_sysconfdir/$f ]]; then cp "$ompi_sysconfdir/$f" "$stage/openmpi/etc/"; fi
done
# PMIx (Open MPI 4.1 uses the external one through mca_pmix_ext3x): where libpmix.so.2 really lives.
pmix_component=$ompi_pkglibdir/mca_pmix_ext3x.so
if [[ -f $pmix_component ]]; then
  libpmix=$(ldd "$pmix_component" | awk '$1 ~ /^libpmix\.so/ {print $3; exit}')
  [[ -n $libpmix ]] || { echo "make-gpu-bundle: $pmix_component does not name a libpmix it finds" >&2; exit 1; }
  pmix_root=$(dirname "$(dirname "$(readlink -f "$libpmix")")")  # e.g. /usr/lib/x86_64-linux-gnu/pmix2
  [[ -d $pmix_root/lib/pmix && -d $pmix_root/share/pmix ]] ||
    { echo "make-gpu-bundle: PMIx's components or help texts are not under $pmix_root" >&2; exit 1; }
  mkdir -p "$stage/pmix/lib" "$stage/pmix/share" "$stage/pmix/etc"
  cp -R "$pmix_root/lib/pmix" "$stage/pmix/lib/pmix"
  cp -R "$pmix_root/share/pmix" "$stage/pmix/share/pmix"
  # Its parameter file names the components' absolute folder: gpu-check.sh sets that path itself.
  for conf in "$pmix_root/share/pmix-mca-params.conf" "$pmix_root/etc/pmix-mca-params.conf"; do
    if [[ -f $conf ]]; then
      sed '/^[[:space:]]*mca_base_component_path[[:space:]]*=/d' "$conf" >"$stage/pmix/etc/pmix-mca-params.conf"
      break
    fi
  done
fi
chmod -R u+w "$stage/openmpi" "$stage/pmix" 2>/dev/null || true
strip --strip-unneeded "$stage/openmpi/bin/mpiexec" "$stage"/openmpi/lib/openmpi3/*.so
if [[ -d $stage/pmix ]]; then strip --strip-unneeded "$stage"/pmix/lib/pmix/*.so; fi

# The libraries the executables, mpiexec and the components load, minus the GPU stack that must
# match the machine's driver.
is_cuda_lib() { [[ "$(basename "$1")" =~ ^lib(cuda|cudart|cublas|cublasLt|cudnn|nccl|nvrtc|nvJitLink|nvidia-) ]]; }
objects=("$stage"/bin/* "$stage/openmpi/bin/mpiexec" "$stage"/openmpi/lib/openmpi3/*.so)
if [[ -d $stage/pmix ]]; then objects+=("$stage"/pmix/lib/pmix/*.so); fi
for object in "${objects[@]}"; do
  needs=$(ldd "$object")
  if grep -q 'not found' <<<"$needs"; then
    echo "make-gpu-bundle: $object needs a library this machine lacks: $(grep 'not found' <<<"$needs" | tr -s ' \t\n' ' ')" >&2
    exit 1
  fi
  awk '/=> \// {print $3; next} /ld-linux/ {print $1}' <<<"$needs"
done | sort -u | while read -r lib; do
  is_cuda_lib "$lib" && continue
  cp -L "$lib" "$stage/lib/"
done
# The machine must provide these: the CUDA libraries the executables load (libcublasLt through
# libcublas too), the driver (loaded by the runtime) and cuDNN 9's sub-libraries (loaded by libcudnn.so.9 when first used).
{
  for exe in "$stage"/bin/*; do
    ldd "$exe" | awk '/=>/ {print $1}'
  done | while read -r soname; do if is_cuda_lib "$soname"; then echo "$soname"; fi; done
  echo libcuda.so.1
  cudnn=$(ldd "$stage/bin/dptrain" | awk '/libcudnn\.so/ {print $3}')
  for sub in "$(dirname "$cudnn")"/libcudnn_*.so.[0-9]; do [[ -e $sub ]] && basename "$sub"; done
  # cuDNN's run-time compiled engines use NVRTC when it is there, and do without it when it is not.
  cudart=$(ldd "$stage/bin/dptrain" | awk '/libcudart\.so/ {print $1}')
  echo "libnvrtc.so.${cudart##*.so.} optional"
} | sort -u >"$stage/cuda-libs.txt"
chmod u+w "$stage"/lib/*
strip --strip-unneeded "$stage"/lib/*.so* 2>/dev/null || true

contents=(bin lib openmpi cuda-libs.txt)
if [[ -d $stage/pmix ]]; then contents+=(pmix); fi
if (( train_reference )); then
  # Stage 2's dataset and its CPU reference run, with the arguments gpu-check.sh repeats on the GPU.
  mkdir -p "$stage/train"
  dptrain=$build_dir/app/dptrain
  "$dptrain" data synth "$stage/jpeg" --classes 4 --per-class 120 --val-per-class 30 --size 32 >/dev/null
  "$dptrain" data convert imagenet "$stage/jpeg" "$stage/train/data" --size 32 --shards 2 --val-shards 1 >/dev/null
  rm -rf "$stage/jpeg"
  echo "--model inception-mini --steps 120 --batch-size 32 --lr 0.2 --log-every 40 --threads 2" \
    >"$stage/train/arguments.txt"
  # shellcheck disable=SC2046  # the arguments are words by design
  "$dptrain" train --data "$stage/train/data" $(cat "$stage/train/arguments.txt") \
    --metrics "$stage/train/cpu.jsonl" >"$stage/train/cpu.log" 2>&1
  contents+=(train)
fi

mkdir -p "$output"
rm -f "$output/bundle.tar.gz" "$output/bundle.tar.xz"
# gzip, not xz: the GPU machine's image may lack xz, and gzip's format is also what Python's tarfile
# reads everywhere (gpu-check.sh falls back to it when tar cannot unpack).
tar -C "$stage" -czf "$output/bundle.tar.gz" "${contents[@]}"

size_kib=$(du -sk "$output/bundle.tar.gz" | cut -f1)
echo "gpu-bundle: Open MPI $(ompi_info --parsable | awk -F: '/^ompi:version:full:/ {print $4; exit}') with" \
     "$kept MCA components (left out: ${dropped[*]:-none})"
echo "gpu-bundle: $output/bundle.tar.gz, $(find "$stage/lib" -type f | wc -l) libraries, $(du -sm "$stage" | cut -f1) MiB" \
     "unpacked, $((size_kib / 1024)) MiB packed; the machine must provide: $(awk 'NF == 1' "$stage/cuda-libs.txt" | tr '\n' ' ')"
if (( size_kib > 48 * 1024 )); then
  echo "gpu-bundle is over 48 MiB, more than this script allows a bundle that travels with the repository" >&2
  exit 1
fi
