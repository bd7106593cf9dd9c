#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: `dptrain preflight` under srun passes a healthy 2-node
# job, names node2 when its ranks get about a fifth of the CPU time the others get (a slow node made
# real: their GEMM is slower, not reported slower), and slurm/train.sbatch --preflight exclude leaves
# node2 behind before training and trains on node1 with the same global batch.
# The throttle: node2's ranks are pinned to the last CPU this job may use, beside eight busy loops
# pinned there too; node1's ranks are pinned to the other CPUs. It needs no cgroup, no root and no
# kernel feature, and the ranks keep running (a rank stopped by signals makes Open MPI's TCP
# connections fail). The cluster's nodes share this machine's cores with the other tests, so the
# comparisons use --min-fraction 0.5.
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
# shellcheck source=slurm/testcluster/testcluster.env
source "$DPTRAIN_PROFILE"
data=${2:?usage: $0 DPTRAIN DATA}
if (( $(python3 -c "import os; print(len(os.sched_getaffinity(0)))") < 2 )); then
  echo "SKIP: one CPU here; a node's ranks cannot be throttled apart from the other node's"
  exit 77
fi

# The dptrain of the throttled cluster. The busy loops end with the rank, or after 5 minutes at most
# should the wrapper be killed.
throttled=$work/throttled-dptrain
cat > "$throttled" <<SH
#!/usr/bin/env bash
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\\n")')
last=\${cpus[-1]}
others=\$(IFS=,; echo "\${cpus[*]:0:\${#cpus[@]}-1}")
[[ \${SLURMD_NODENAME:-} == node2 ]] || exec taskset -c "\$others" "$dptrain" "\$@"
hogs=()
for _ in 1 2 3 4 5 6 7 8; do
  taskset -c "\$last" timeout 300 sh -c 'while :; do :; done' &
  hogs+=(\$!)
done
taskset -c "\$last" "$dptrain" "\$@"
status=\$?
kill "\${hogs[@]}" 2>/dev/null
exit \$status
SH
chmod +x "$throttled"

# NAME TASKS_PER_NODE BINARY [SRUN_FLAG]: srun dptrain preflight on 2 nodes; prints the job id. The healthy
# job gets --kill-on-bad-exit (a rank that crashes ends the job at once); the throttled one must not,
# since it checks the exit code every rank gives (77), which srun would replace by its kill's.
preflight_job() {
  sbatch --parsable --partition="$DPTRAIN_PARTITION" --nodes=2 --ntasks-per-node="$2" --time=00:02:00 \
    --job-name="e2e-$1" --output="$work/$1-%j.out" \
    --wrap="srun --mpi=$DPTRAIN_SRUN_MPI ${4:-} $3 preflight --min-fraction 0.5 --measure-mb 4 --json $work/$1.json \
            --failure-report $work/$1.report"
}

job=$(preflight_job healthy 1 "$dptrain" --kill-on-bad-exit=1) || fail "sbatch (healthy) failed"
state=$(wait_job "$job" 120)
cat "$work"/healthy-*.out
[[ $state == COMPLETED ]] || fail "the healthy preflight ended $state, not COMPLETED"
grep -q "^preflight: passed in [0-9.]* s: no node below 50% of the median" "$work"/healthy-*.out || fail "no pass line"
[[ -e $work/healthy.report && ! -s $work/healthy.report ]] || fail "a healthy job's failure report names something"
python3 - "$work/healthy.json" <<'PY' || fail "the healthy figures"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ranks = [l for l in lines if l["type"] == "rank"]
assert [r["node"] for r in ranks] == ["node1", "node2"], ranks
assert all(r["gemm_gflops"] > 0 and r["allreduce_between_nodes_gbps"] > 0 for r in ranks), ranks
assert not [l for l in lines if l["type"] == "slow"], lines
PY

job=$(preflight_job throttled 2 "$throttled") || fail "sbatch (throttled) failed"
state=$(wait_job "$job" 120)
cat "$work"/throttled-*.out
[[ $state == FAILED && $(job_field "$job" ExitCode) == 77:0 ]] ||
  fail "the throttled preflight ended $state ($(job_field "$job" ExitCode)), not FAILED with exit code 77"
grep -q "dptrain: preflight: node node2 is slow: GEMM (fp32) [0-9.]* GFLOP/s on rank [23]" "$work"/throttled-*.out ||
  fail "the log does not name node2's GEMM"
[[ $(cut -d' ' -f1 "$work/throttled.report" | sort -u) == node=node2 ]] || { cat "$work/throttled.report"; fail "the report names other nodes than node2"; }

# train.sbatch runs the preflight first and, with --preflight exclude, trains without node2.
job=$(DPTRAIN_BIN=$throttled DPTRAIN_PREFLIGHT_MIN_FRACTION=0.5 DPTRAIN_PREFLIGHT_ARGS="--measure-mb 4" \
      bash "$repo/slurm/submit.sh" --nodes 2 --gpus-per-node 2 --time=00:10:00 --job-name=e2e-preflight-train \
        --output="$work/train-%j.out" -- "$repo/slurm/train.sbatch" \
        --model lenet --data "$data" --steps 20 --batch-size 16 --lr 0.05 --log-every 10 --run-dir "$work/run" \
        --preflight exclude) || fail "submitting train.sbatch"
state=$(wait_job "$job" 240)
cat "$work"/train-*.out
[[ $state == COMPLETED ]] || fail "train.sbatch --preflight exclude ended $state"
grep -q "preflight: leaving node2 behind: preflight: rank=" "$work"/train-*.out ||
  fail "train.sbatch does not say it leaves node2 behind for the preflight"
grep -q "running on 1 of the 2 allocated nodes (node1), 2 ranks, global batch 64" "$work"/train-*.out ||
  fail "the training did not run on node1 alone with the global batch of 64"
grep -q "^node2 .* preflight: " "$work/run/bad-nodes" || fail "bad-nodes does not list node2 with the preflight's reason"
grep -q "training finished" "$work"/train-*.out || fail "the training did not finish"
echo "PASS"
