#!/usr/bin/env bash
# The install tree: `cmake --install` into a fresh prefix, then the layout the Spack recipe and users
# rely on (see cmake/Install.cmake): bin/dptrain runs from there and says how it was built, the docs
# and the Slurm scripts are where docs/installing.md says, the scripts are executable.
# Usage: check_install.sh CMAKE BUILD_DIR SOURCE_DIR VERSION BUILT_BY BUILD_TYPE
set -uo pipefail
cmake=$1 build=$2 source=$3 version=$4 built_by=$5 build_type=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "FAIL: $*"; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }

dptrain=$prefix/bin/dptrain
[[ -x $dptrain ]] || fail "bin/dptrain is missing or not executable"
# Run from elsewhere, so nothing in the build tree can stand in for the installed files.
cd /
out=$("$dptrain" --version 2>&1) || fail "dptrain --version exited non-zero: $out"
[[ $out == "dptrain $version" ]] || fail "dptrain --version printed '$out', expected 'dptrain $version'"
info=$("$dptrain" info 2>&1) || { echo "$info"; fail "dptrain info exited non-zero"; }
grep -q "^built by: $built_by (" <<< "$info" || { echo "$info"; fail "dptrain info lacks 'built by: $built_by (...)'"; }
grep -q "^build:    .*$build_type" <<< "$info" || { echo "$info"; fail "dptrain info lacks the build line"; }
if command -v readelf > /dev/null && readelf -d "$dptrain" | grep -q -- "$build"; then
  fail "bin/dptrain still has a run path into the build tree $build"
fi

docs=$prefix/share/doc/dptrain
for doc in README.md datasets/README.md; do
  cmp -s "$source/$doc" "$docs/$doc" || fail "share/doc/dptrain/$doc is missing or differs from $doc"
done
# The guide (docs/*.md), every page.
for page in "$source"/docs/*.md; do
  doc=docs/$(basename "$page")
  cmp -s "$page" "$docs/$doc" || fail "share/doc/dptrain/$doc is missing or differs from $doc"
done

# Every script, setting and note under slurm/ (but the test cluster) is installed, scripts executable.
slurm=$prefix/share/dptrain/slurm
if [[ -d $source/slurm ]]; then
  [[ ! -f $source/slurm/README.md ]] || cmp -s "$source/slurm/README.md" "$docs/slurm/README.md" \
    || fail "share/doc/dptrain/slurm/README.md is missing"
  count=0
  while IFS= read -r -d '' file; do
    rel=${file#"$source/slurm/"}
    [[ -f $slurm/$rel ]] || fail "slurm/$rel was not installed to share/dptrain/slurm/$rel"
    case $rel in *.sh | *.sbatch) [[ -x $slurm/$rel ]] || fail "share/dptrain/slurm/$rel is not executable" ;; esac
    count=$((count + 1))
  done < <(find "$source/slurm" -path "$source/slurm/testcluster" -prune -o -type f \
             \( -name '*.sbatch' -o -name '*.sh' -o -name '*.env' -o -name '*.md' \) -print0)
  [[ ! -e $slurm/testcluster ]] || fail "slurm/testcluster (test infrastructure) was installed"
  echo "slurm: $count files installed"
fi
echo "PASS: $(find "$prefix" -type f | wc -l) files installed under a fresh prefix"
