#!/usr/bin/env bash
# The demo `make demo` runs: what this build can do, on this machine.
set -euo pipefail
dptrain=${1:-build/cpu/app/dptrain}
echo "== dptrain info"
"$dptrain" info
