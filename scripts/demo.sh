#!/usr/bin/env bash
# The demo `make demo` runs: what this build can do, on this machine. (It becomes the Fashion-MNIST
# training job when the data pipeline lands.)
set -euo pipefail
dptrain=${1:-build/cpu/app/dptrain}
echo "== dptrain info"
"$dptrain" info
echo
echo "== dptrain inspect --list"
"$dptrain" inspect --list
echo
echo "== dptrain bench --model inception-mini --batch-size 64 --steps 10 --warmup 2 --classes 10 --image-size 28"
"$dptrain" bench --model inception-mini --batch-size 64 --steps 10 --warmup 2 --classes 10 --image-size 28
