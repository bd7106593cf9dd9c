#!/usr/bin/env bash
# Installs what dptrain needs to build, test and run its demo, and nothing that is already there.
# Idempotent: a second run installs nothing. On Debian/Ubuntu it uses apt-get; elsewhere it prints
# what to install (or how to use the Spack environment at the repository root).
set -euo pipefail

# Debian packages, grouped by why we need them.
build_pkgs=(cmake g++ make pkg-config clang-format clang-tidy ccache)  # clang-format, clang-tidy: the style tests; ccache: repeated builds
lib_pkgs=(libdnnl-dev libopenmpi-dev openmpi-bin libhdf5-dev hdf5-tools libcli11-dev catch2 libturbojpeg0-dev
          libjpeg62-turbo-dev
          nlohmann-json3-dev zlib1g-dev)
data_pkgs=(dataset-fashion-mnist)
# The local Slurm test cluster (slurmctld, slurmd, the PMIx plugin, munge), the report's plot, and
# the lint of the shipped scripts.
cluster_pkgs=(slurm-wlm slurm-wlm-basic-plugins munge libpmix2 gnuplot-nox shellcheck)
# tests/packaging reads spack.yaml and the Spack recipe (python3-yaml), and runs a real Spack when one
# is there: its concretizer clingo loads through cffi, `spack style` runs isort, black and flake8.
packaging_pkgs=(python3 python3-yaml python3-cffi-backend git xz-utils isort black flake8)
all_pkgs=("${build_pkgs[@]}" "${lib_pkgs[@]}" "${data_pkgs[@]}" "${cluster_pkgs[@]}" "${packaging_pkgs[@]}")
# --test (make test): also what only the tests need. The interop tests compare our models with
# torchvision's (Debian's PyTorch, CPU only); building and running dptrain needs none of it.
test_pkgs=(python3-torch python3-torchvision python3-numpy)
if [[ "${1:-}" == "--test" ]]; then
  all_pkgs+=("${test_pkgs[@]}")
elif [[ $# -gt 0 ]]; then
  echo "usage: install-deps.sh [--test]" >&2
  exit 2
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  cat <<MSG
install-deps: this is not a Debian-like system, so nothing was installed.
Install these (or their equivalents) yourself: a C++20 compiler, CMake >= 3.25, oneDNN, Open MPI,
HDF5 (C library and tools), CLI11, Catch2 v2, libjpeg-turbo, nlohmann-json, zlib, Python 3 with
PyYAML (for the tests), and optionally CUDA + cuDNN + NCCL.
With Spack:  spack env activate . && spack concretize && spack install   (see docs/installing.md)
MSG
  exit 0
fi

missing=()
for pkg in "${all_pkgs[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#all_pkgs[@]} Debian packages are installed"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The package lists may be stale or absent on a fresh machine; refresh them once, then install.
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
