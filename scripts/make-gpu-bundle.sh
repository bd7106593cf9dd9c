#!/usr/bin/env bash
# Builds, on this machine (no GPU needed), what scripts/gpu-check.sh runs on a lent GPU machine whose
# image has the CUDA toolkit, cuDNN and NCCL but none of our Debian dependencies (oneDNN, HDF5,
# Open MPI, libjpeg-turbo, ...): the `cuda` preset's dptrain and GPU test executables, stripped, with
# every shared library they load from here except the CUDA ones (the image's are used) - glibc and
# its loader included, so the bundle does not depend on the image's distribution or glibc version.
#
#   scripts/make-gpu-bundle.sh     # -> gpu-bundle/bundle.tar.xz (git-ignored), prints its size
#
# The device tool carries it with the working tree: run(command="scripts/gpu-check.sh",
# carry=["gpu-bundle"]). Unpacked it is about 60 MiB (oneDNN alone is 30), packed about a third of
# that; the carry limit is 64 MiB in all, and the script fails above 48 MiB packed.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
bundle=gpu-bundle
targets=(dptrain gpu_device gpu_backend_agreement)

cmake --preset cuda >/dev/null
cmake --build --preset cuda -j "$jobs" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
rm -rf "$bundle"
mkdir -p "$stage/bin" "$stage/lib" "$bundle"
cp build/cuda/app/dptrain build/cuda/tests/gpu/gpu_device build/cuda/tests/gpu/gpu_backend_agreement "$stage/bin/"
strip --strip-unneeded "$stage"/bin/*

# The libraries the executables load, minus the GPU stack that must match the machine's driver.
is_cuda_lib() { [[ "$(basename "$1")" =~ ^lib(cuda|cudart|cublas|cublasLt|cudnn|nccl|nvrtc|nvJitLink|nvidia-) ]]; }
for exe in "$stage"/bin/*; do
  ldd "$exe" | awk '/=> \// {print $3; next} /ld-linux/ {print $1}'
done | sort -u | while read -r lib; do
  is_cuda_lib "$lib" && continue
  cp -L "$lib" "$stage/lib/"
done
# (bench and the GPU tests never call MPI_Init, so Open MPI's run-time components are not needed.)
chmod u+w "$stage"/lib/*
strip --strip-unneeded "$stage"/lib/*.so* 2>/dev/null || true
tar -C "$stage" -cJf "$bundle/bundle.tar.xz" bin lib

size_kib=$(du -sk "$bundle" | cut -f1)
echo "gpu-bundle: $(ls "$stage/lib" | wc -l) libraries, $(du -sm "$stage" | cut -f1) MiB unpacked, $((size_kib / 1024)) MiB packed"
if (( size_kib > 48 * 1024 )); then
  echo "gpu-bundle is over 48 MiB: the device tool carries 64 MiB at most with the working tree" >&2
  exit 1
fi
