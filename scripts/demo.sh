#!/usr/bin/env bash
# `make demo`: convert Fashion-MNIST (once), train inception-mini on it for two epochs, evaluate on
# the 10,000 test images after each epoch, print the accuracy and images/sec, and draw the curves
# (build/demo-curves.png). About 4 minutes on two cores; the validation top-1 accuracy ends near 0.91.
set -euo pipefail
dptrain=${1:-build/cpu/app/dptrain}
data=${DPTRAIN_DEMO_DATA:-build/data/fashion-mnist}
"$dptrain" info
echo
"$dptrain" data convert fashion-mnist "$data"
echo
"$dptrain" train --model inception-mini --data "$data" --epochs 2 --batch-size 64 --lr 0.8 \
  --warmup-epochs 0.1 --flip --log-every 200 --metrics build/demo-metrics.jsonl
echo
echo "Per-step and per-evaluation metrics (JSON lines): build/demo-metrics.jsonl"
"$dptrain" plot build/demo-metrics.jsonl --label "inception-mini, Fashion-MNIST" -o build/demo-curves.png
