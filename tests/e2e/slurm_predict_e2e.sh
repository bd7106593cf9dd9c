#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: `dptrain predict --measure` under the cluster's srun on
# 2 nodes of 2 ranks measures the link in a node and between nodes, and predicts with them.
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
# shellcheck source=slurm/testcluster/testcluster.env
source "$DPTRAIN_PROFILE"

job=$(sbatch --parsable --partition="$DPTRAIN_PARTITION" --nodes=2 --ntasks-per-node=2 --time=00:02:00 \
        --job-name=e2e-predict --output="$work/predict-%j.out" \
        --wrap="srun --mpi=$DPTRAIN_SRUN_MPI $DPTRAIN_BIN predict --measure --measure-mb 4 --model lenet \
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
echo "PASS"
