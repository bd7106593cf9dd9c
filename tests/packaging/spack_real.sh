#!/usr/bin/env bash
# The Spack environments and recipe, run by a real Spack (CTest label packaging).
#
# Usage: spack_real.sh SOURCE_DIR CHECK
#   readme        the guide's environment (spack.yaml), concretized with docs/installing.md's own commands
#   env-create    `spack env create` from spack.yaml elsewhere still finds the recipe and the clone
#   audit         `spack audit packages dptrain`, and a plain dptrain@0.1.0 has a git fetcher
#   style         `spack style` on the recipe (isort, black, flake8 with Spack's settings)
#   cuda          dptrain +cuda cuda_arch=90 concretizes against the site externals (CUDA 13)
#   install       spack/site-externals: `spack install --test=root` (build plus unit tests)
#   test-run      the installed dptrain info says it was built by Spack; `spack test run dptrain`
#   reinstall     a second `spack install` rebuilds nothing
#   dev-change    the recipe's detect_dev_src_change(): a touched tracked file or a new source file
#                 counts, Spack's own files in the clone do not
#
# Spack: the one SPACK_ROOT names, else `spack` on PATH, else the offline Spack 1.1.1 archive
# ../shared/tools/spack-offline.tar.xz (from SOURCE_DIR), unpacked once into SOURCE_DIR/build/spack.
# With none of them the check prints SKIP with the reason (CTest's SKIP_REGULAR_EXPRESSION).
set -euo pipefail
root=$(cd "$1" && pwd)
check=$2
cd "$root"

archive=$root/../shared/tools/spack-offline.tar.xz
unpacked=$root/build/spack/spack-offline
if [[ -n ${SPACK_ROOT:-} && -f $SPACK_ROOT/share/spack/setup-env.sh ]]; then
  . "$SPACK_ROOT/share/spack/setup-env.sh"
elif command -v spack >/dev/null 2>&1; then
  . "$(dirname "$(dirname "$(command -v spack)")")/share/spack/setup-env.sh"
elif [[ -f $unpacked/env.sh || -f $archive ]]; then
  if [[ ! -f $unpacked/env.sh ]]; then
    # Unpack beside, then rename: a run killed half-way leaves no half Spack behind to be reused.
    rm -rf "$root/build/spack/.unpacking"
    mkdir -p "$root/build/spack/.unpacking"
    tar -xJf "$archive" -C "$root/build/spack/.unpacking"
    mv "$root/build/spack/.unpacking/spack-offline" "$unpacked"
    rmdir "$root/build/spack/.unpacking"
  fi
  . "$unpacked/env.sh"
else
  echo "SKIP: no Spack (set SPACK_ROOT, put spack on PATH, or provide $archive)"
  exit 0
fi
echo "Spack $(spack --version) in $(spack location -r)"

site=spack/site-externals
here=$root/tests/packaging
fail() { echo "FAIL: $*" >&2; exit 1; }
timed() {  # timed LABEL COMMAND...: runs it and prints how long it took
  local label=$1 start=$SECONDS
  shift
  "$@"
  echo "TIME: $label $((SECONDS - start)) s"
}

# The builds of dptrain (install, reinstall) go through ccache when it is installed: CI compiled the
# same sources with the same compiler and flags for `make test` a moment ago, so Spack's build reuses
# those objects and this check costs its configure, link and unit tests, not a second compile. The
# wrapper's target flags (-march, -mtune for the spec's target) are left out of ccache's key: they
# change the code's speed, never what the recipe under test configures, links and installs.
# CCACHE_DIR is passed on explicitly, as Spack's build environment may not keep HOME.
spack_ccache=()
if command -v ccache >/dev/null 2>&1; then
  spack_ccache=(-c config:ccache:true)
  CCACHE_DIR=$(ccache -k cache_dir)
  export CCACHE_DIR CCACHE_IGNOREOPTIONS="-march=* -mtune=*"
fi

case $check in
readme)
  # The guide's commands, as written there (the fenced block after "## Install with Spack" in
  # docs/installing.md), without `spack install`: installing that environment downloads every source.
  block=$(awk '/^## Install with Spack/ {s = 1} s && /^```/ {if (b) exit; b = 1; next} b' docs/installing.md)
  expected=$'spack env activate .\nspack concretize\nspack install'
  [[ $block == "$expected" ]] || fail "docs/installing.md's Spack commands changed; update this test:"$'\n'"$block"
  # A spack.lock already here would make `spack concretize` a no-op: set it aside for the run.
  saved=""
  if [[ -f spack.lock ]]; then
    saved=$(mktemp)
    mv spack.lock "$saved"
  fi
  restore() { rm -f spack.lock; if [[ -n $saved ]]; then mv "$saved" spack.lock; fi; }
  trap restore EXIT
  log=$(mktemp)
  while read -r line; do
    [[ $line == "spack install" ]] && continue
    echo "+ $line"
    # Not a pipe: `spack env activate` must run in this shell.
    timed "$line" $line > >(tee -a "$log")
  done <<<"$block"
  # What `spack concretize` printed: the roots, one of each (unify), so dptrain's CUDA is the root's.
  grep -E '^ *[^ ]+ +[a-z0-9]{7} +dptrain@0\.1\.0\+cuda.*cuda_arch:?=60' "$log" >/dev/null \
    || fail "spack concretize did not give dptrain +cuda cuda_arch=60"
  grep -E '^ *[^ ]+ +[a-z0-9]{7} +cuda@12\.' "$log" >/dev/null || fail "the environment's CUDA is not 12.x"
  rm -f "$log"
  ;;
env-create)
  # A named environment, as docs/installing.md says, made from the file (it lives in Spack's own tree).
  name=dptrain-env-create-test-$$
  trap 'spack env rm -y "$name" >/dev/null 2>&1 || true' EXIT
  spack env create "$name" spack.yaml
  spack -e "$name" config get repos | tee /dev/stderr | grep -F "dptrain: $root/spack/repo/spack_repo/dptrain" >/dev/null \
    || fail "the created environment lost the recipe repository"
  spack -e "$name" config get develop | tee /dev/stderr | grep -E "path: $root/?\$" >/dev/null \
    || fail "the created environment's develop path is not this clone"
  spack -e "$name" repo list | tee /dev/stderr | grep -E '^\[\+\] +dptrain ' >/dev/null \
    || fail "spack repo list in the created environment lacks the dptrain repository"
  ;;
audit)
  timed audit spack -e "$site" audit packages dptrain
  # Outside a develop: section the version must be fetchable: from the project's git repository.
  spack -e "$site" python "$here/spack_fetcher.py"
  ;;
style)
  for tool in isort black flake8; do
    command -v $tool >/dev/null || { echo "SKIP: spack style needs $tool (Debian: apt-get install isort black flake8)"; exit 0; }
  done
  # Spack's own settings (99 columns, black's profile for isort). flake8's star-import findings
  # (F403, F405, F821) come from `from spack.package import *`, which every recipe has and which
  # Spack's package repository exempts for every package.py; anything else fails.
  out=$(spack style --tool isort,black,flake8 spack/repo/spack_repo/dptrain/packages/dptrain/package.py 2>&1) || true
  echo "$out"
  grep -F "isort checks were clean" <<<"$out" >/dev/null || fail "isort wants changes"
  grep -F "black checks were clean" <<<"$out" >/dev/null || fail "black wants changes"
  if grep -E 'package\.py:[0-9]+: \[' <<<"$out" | grep -vE '\[(F403|F405|F821)\]'; then
    fail "flake8 findings above"
  fi
  ;;
cuda)
  out=$(timed "spec +cuda" spack -e "$site" spec -l dptrain +cuda cuda_arch=90)
  echo "$out"
  for want in 'dptrain@0\.1\.0\+cuda.*cuda_arch:?=90' '\^cuda@13\.0\.88' '\^cudnn@9\.19' '\^nccl@2\.28\.9'; do
    echo "$out" | grep -E "$want" >/dev/null || fail "dptrain +cuda cuda_arch=90: no match for $want"
  done
  ;;
install)
  timed concretize spack -e "$site" concretize
  timed "install --test=root" spack -e "$site" "${spack_ccache[@]}" install --test=root
  if (( ${#spack_ccache[@]} )); then ccache -s; fi
  ;;
test-run)
  info=$("$site/.spack-env/view/bin/dptrain" info)
  echo "$info"
  grep -E '^built by: spack \(dptrain@0\.1\.0~cuda' <<<"$info" >/dev/null || fail "dptrain info does not say 'built by: spack'"
  timed "test run" spack -e "$site" test run dptrain
  ;;
reinstall)
  out=$(timed "second install" spack -e "$site" "${spack_ccache[@]}" install 2>&1)
  echo "$out"
  if grep -E 'Installing dptrain|Executing phase' <<<"$out" >/dev/null; then
    fail "the second spack install rebuilt dptrain"
  fi
  grep -E '\[\+\] .*dptrain' <<<"$out" >/dev/null || grep -F 'up to date' <<<"$out" >/dev/null \
    || fail "the second spack install did not report dptrain as installed"
  ;;
dev-change)
  # Through the recipe itself, against the installed dptrain: a real rebuild costs minutes, and
  # `spack install` decides exactly by this call. Every change is undone (mtime restored, files
  # removed) before the next.
  spack -e "$site" python "$here/spack_dev_change.py"
  ;;
*)
  fail "unknown check '$check'"
  ;;
esac
echo "PASS: $check"
