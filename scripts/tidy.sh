#!/usr/bin/env bash
# clang-tidy over our C++ sources (lib/ and app/) with a small set of checks that find real bugs and
# have no false positives in this code, every warning an error:
#   bugprone-use-after-move             a moved-from object used again
#   bugprone-dangling-handle            a string_view or span left pointing into a temporary
#   bugprone-undefined-memory-manipulation  memcpy/memset on a type that is not trivially copyable
#   bugprone-string-constructor         std::string(count, char) with the arguments swapped, and alike
#   bugprone-suspicious-memset-usage    memset with its fill and size swapped
#   bugprone-move-forwarding-reference  std::move on a forwarding reference
#   performance-unnecessary-copy-initialization  a copy of what a const reference would serve
#   performance-for-range-copy          a range-for loop that copies each element
#   misc-redundant-expression           x == x, a || a and alike
#   scripts/tidy.sh BUILD_DIR   (a configured build: its compile_commands.json; the CTest test style_tidy)
# Pinned to clang-tidy 14 (Debian 12's); the CUDA sources are left out (clang-tidy cannot read nvcc's
# flags). Not performance-move-const-arg: whether std::move of a dnnl::memory::desc does anything
# depends on the oneDNN version (a plain struct in 2.x, a handle in 3.x).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/tidy.sh BUILD_DIR}
[[ -f $build/compile_commands.json ]] || { echo "scripts/tidy.sh: no $build/compile_commands.json" >&2; exit 2; }
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[[ -n $tidy ]] || { echo "scripts/tidy.sh: clang-tidy not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
checks='-*,bugprone-use-after-move,bugprone-dangling-handle,bugprone-undefined-memory-manipulation,'
checks+='bugprone-string-constructor,bugprone-suspicious-memset-usage,bugprone-move-forwarding-reference,'
checks+='performance-unnecessary-copy-initialization,performance-for-range-copy,'
checks+='misc-redundant-expression'
# The sources the build compiles, of lib/ and app/ (not the CUDA library's).
mapfile -t files < <(python3 - "$build/compile_commands.json" "$PWD" <<'PY'
import json, os, sys
root = sys.argv[2]
seen = set()
for entry in json.load(open(sys.argv[1])):
    path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), root)
    if path.endswith(".cpp") and path.startswith(("lib/", "app/")) and "/cuda/" not in path and path not in seen:
        seen.add(path)
        print(path)
PY
)
(( ${#files[@]} > 0 )) || { echo "scripts/tidy.sh: no sources in $build/compile_commands.json" >&2; exit 2; }
jobs=$(nproc)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
printf '%s\n' "${files[@]}" |
  xargs -P "$jobs" -n 8 "$tidy" -p "$build" --quiet --checks="$checks" --warnings-as-errors='*' \
    --header-filter="$PWD/(lib|app)/.*" >"$log" 2>&1 || status=$?
grep -v "^[0-9]* warnings\? generated\.$" "$log" || true
if (( status != 0 )); then
  echo "clang-tidy found problems (above)" >&2
  exit 1
fi
echo "${#files[@]} sources pass clang-tidy ($("$tidy" --version | grep -o 'version [0-9.]*'))"
