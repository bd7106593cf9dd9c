#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: slurm/scaling-study.sh at small sizes (lenet, 28x28,
# 1, 2 and 4 "GPUs" on one node and 8 on two, one after another) submits real bench jobs and a report
# job, which writes the table, the CSV and the PNG chart.
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"

out=$work/study
timeout 200 bash "$repo/slurm/scaling-study.sh" --gpus "1 2 4 8" --batch-size 8 --steps 3 --warmup 1 \
  --time 00:03:00 --out "$out" --sequential --wait lenet -- --image-size 28 --classes 10 > "$work/study.log" 2>&1
rc=$?
cat "$work/study.log"
if [[ $rc -ne 0 ]]; then
  for log in "$out"/*.out; do echo "--- $log"; cat "$log"; done
  fail "scaling-study.sh exited with $rc"
fi

for gpus in 1 2 4 8; do
  result=$out/bench-lenet-${gpus}gpu.json
  [[ -s $result ]] || { cat "$out"/bench-lenet-"${gpus}"gpu-*.out; fail "no bench result for $gpus GPUs"; }
  grep -q "\"world_size\": $gpus," "$result" || { cat "$result"; fail "the $gpus-GPU result does not say world_size $gpus"; }
done
grep -q "8 GPU(s) on 2 node(s)" "$work/study.log" || fail "8 GPUs were not submitted on 2 nodes"
# The 8-GPU job ran on two nodes of the cluster.
grep -q "on 2 node(s) node\[[1-4]-[1-4]\], 8 ranks" "$out"/bench-lenet-8gpu-*.out || { cat "$out"/bench-lenet-8gpu-*.out; fail "the 8-GPU job did not run 8 ranks on 2 nodes"; }

csv=$out/scaling-lenet.csv
[[ -s $csv ]] || fail "no CSV"
cat "$csv"
[[ $(cut -d, -f1,2 "$csv" | tr '\n' ' ') == "model,gpus lenet,1 lenet,2 lenet,4 lenet,8 " ]] || fail "CSV rows"
# The 1-GPU row is the base: speedup 1, efficiency 1; every efficiency is speedup / GPUs.
awk -F, 'NR > 1 { if ($4 <= 0 || ($5 - $4 / $2) > 1e-6 || ($4 / $2 - $5) > 1e-6) bad = 1 }
         NR == 2 && ($4 != 1 || $5 != 1) { bad = 1 } END { exit bad }' "$csv" || fail "speedup/efficiency columns"
grep -q "efficiency" "$out/scaling-lenet.txt" 2>/dev/null || fail "no table"
png=$out/scaling-lenet.png
[[ $(head -c 8 "$png" | od -An -tx1 | tr -d ' \n') == "89504e470d0a1a0a" ]] || fail "$png is not a PNG"
echo "PASS"
