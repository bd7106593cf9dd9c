#!/usr/bin/env bash
# Formats our C++ and CUDA sources with the repository's .clang-format (Google style, 120 columns).
#   scripts/format.sh           rewrite every .cpp/.hpp/.cu/.cuh of the tree in place (`make format`)
#   scripts/format.sh --check   change nothing; list the files that differ and exit 1 (the CTest
#                               test style_format and `make format-check`)
# Formatting is pinned to clang-format 14 (Debian 12's): other versions break some lines differently.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac
formatter=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z $formatter ]]; then
  echo "scripts/format.sh: clang-format not found (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
# The sources of a git checkout (tracked, and new ones not ignored); every source below the tree
# otherwise (a release tarball).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.cu' '*.cuh')
else
  mapfile -t files < <(find app lib tests -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' | sort)
fi
if (( check == 0 )); then
  "$formatter" -i "${files[@]}"
  exit 0
fi
differ=()
for f in "${files[@]}"; do
  "$formatter" --dry-run --Werror "$f" >/dev/null 2>&1 || differ+=("$f")
done
if (( ${#differ[@]} > 0 )); then
  echo "not formatted with .clang-format (run 'make format'):" >&2
  printf '  %s\n' "${differ[@]}" >&2
  exit 1
fi
echo "${#files[@]} sources formatted with .clang-format ($("$formatter" --version | head -1))"
