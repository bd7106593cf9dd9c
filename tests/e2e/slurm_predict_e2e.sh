#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: `dptrain predict --measure` under the cluster's srun on
# 2 nodes of 2 ranks measures the link in a node and between nodes, and predicts with them; then a
# training job on the same 2 nodes with a straggler made on purpose (rank 3, on node2, sleeps 40 ms a
# step: the test build dptrain_throttled, $DPTRAIN_THROTTLED_BIN, with DPTRAIN_TEST_THROTTLE) names
# rank 3 and its node in its log.
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
# shellcheck source=slurm/testcluster/testcluster.env
source "$DPTRAIN_PROFILE"
: "${DPTRAIN_THROTTLED_BIN:?the test build dptrain_throttled, set by tests/e2e/CMakeLists.txt}"

job=$(sbatch --parsable --partition="$DPTRAIN_PARTITION" --nodes=2 --ntasks-per-node=2 --time=00:02:00 \
        --job-name=e2e-predict --output="$work/predict-%j.out" \
        --wrap="srun --mpi=$DPTRAIN_SRUN_MPI --kill-on-bad-exit=1 $DPTRAIN_BIN predict --measure --measure-mb 4 --model lenet \
                --image-size 28 --classes 10 --images-per-second 500 --gpus 1,2,4 --json $work/predict.json") ||
  fail "sbatch failed"
echo "job $job"
state=$(wait_job "$job" 150)
cat "$work"/predict-*.out
[[ $state == COMPLETED ]] || fail "job $job ended $state, not COMPLETED"
grep -q "in a node (2 ranks) [0-9.]* GB/s + [0-9.]* us; between nodes (2) [0-9.]* GB/s" "$work"/predict-*.out ||
  fail "the job did not measure both links on 2 nodes of 2 ranks"
python3 - "$work/predict.json" <<'PY' || fail "the prediction's JSON"
import json, sys
j = json.load(open(sys.argv[1]))
links = j["links"]
assert links["measured"] is True and links["gpus_per_node"] == 2, links
assert links["intra_bus_gbps"] > 0 and links["inter_bus_gbps"] > 0, links
assert [r["nodes"] for r in j["rows"]] == [1, 1, 2], j["rows"]
PY

"$DPTRAIN_BIN" data synth "$work/synth" --classes 4 --per-class 30 --val-per-class 2 --size 28 > /dev/null 2>&1 ||
  fail "data synth"
"$DPTRAIN_BIN" data convert imagenet "$work/synth" "$work/data" --size 28 --shards 2 --val-shards 1 > /dev/null 2>&1 ||
  fail "data convert"
job=$(DPTRAIN_TEST_THROTTLE=3:40 sbatch --parsable --partition="$DPTRAIN_PARTITION" --nodes=2 --ntasks-per-node=2 \
        --time=00:02:00 --job-name=e2e-straggler --output="$work/straggler-%j.out" \
        --wrap="srun --mpi=$DPTRAIN_SRUN_MPI --kill-on-bad-exit=1 $DPTRAIN_THROTTLED_BIN train --model lenet --data $work/data --steps 60 \
                --batch-size 8 --lr 0.05 --log-every 20 --threads 1") || fail "sbatch (straggler) failed"
echo "job $job"
state=$(wait_job "$job" 150)
cat "$work"/straggler-*.out
[[ $state == COMPLETED ]] || fail "job $job ended $state, not COMPLETED"
grep -q "warning: rank 3 (node node2) computed [0-9]*% longer than the median rank" "$work"/straggler-*.out ||
  fail "the log does not name rank 3 on node2 as a straggler"
# Another rank may be named on a loaded machine (a few ms of noise can be 10% of a 5 ms step), but
# never as far over the median as the throttled one.
python3 - "$work"/straggler-*.out <<'PY' || fail "another rank was named as slower than the throttled one"
import re, sys
excess = {int(r): int(p) for r, p in re.findall(r"warning: rank (\d+) \(node [^)]*\) computed (\d+)% longer", open(sys.argv[1]).read())}
assert excess and max(excess, key=excess.get) == 3, excess
assert all(p < excess[3] / 2 for r, p in excess.items() if r != 3), excess
PY
echo "PASS"
