#!/usr/bin/env bash
# End-to-end on the local Slurm test cluster: the launch linter of `dptrain info` on real srun launches.
#  1. srun without an MPI plugin (--mpi=none) on 2 tasks: each task runs alone; each says so, with
#     --mpi=pmix as the fix.
#  2. the same job launched right (the profile's plugin): 2 ranks, no warning.
#  3. two tasks of one node bound to overlapping CPU sets (--cpu-bind=map_cpu is one CPU each; the
#     second task adds a CPU with taskset): named with both sets.
set -uo pipefail
# shellcheck source=tests/e2e/slurm_env.sh
source "$(dirname "$0")/slurm_env.sh" "$1"
# shellcheck source=slurm/testcluster/testcluster.env
source "$DPTRAIN_PROFILE"

# run_job NAME SRUN-ARGUMENTS...: `dptrain info` in a 1-node, 2-task job; its output in $work/NAME.out.
run_job() {
  local name=$1 job state
  shift
  job=$(sbatch --parsable --partition="$DPTRAIN_PARTITION" --nodes=1 --ntasks=2 --time=00:01:00 \
          --job-name="e2e-launch-$name" --output="$work/$name.out" --wrap="srun $* $DPTRAIN_BIN info") ||
    fail "sbatch ($name) failed"
  state=$(wait_job "$job" 90)
  [[ $state == COMPLETED ]] || { cat "$work/$name.out"; fail "job $job ($name) ended $state, not COMPLETED"; }
}

run_job singleton --mpi=none
[[ $(grep -c "^warning: srun started 2 tasks, but this one runs as a job of 1 rank" "$work/singleton.out") -eq 2 ]] ||
  { cat "$work/singleton.out"; fail "each of the 2 singleton tasks should warn once"; }
grep -q "^  fix: launch with srun --mpi=pmix" "$work/singleton.out" ||
  { cat "$work/singleton.out"; fail "the singleton warning gives no fix"; }
echo "1. srun --mpi=none: both tasks warn that they run alone, with the fix"

run_job right "--mpi=$DPTRAIN_SRUN_MPI"
grep -q "^2 ranks on 1 node" "$work/right.out" || { cat "$work/right.out"; fail "the right launch is not 2 ranks"; }
! grep -q "^warning:" "$work/right.out" || { cat "$work/right.out"; fail "a right launch was warned about"; }
echo "2. srun --mpi=$DPTRAIN_SRUN_MPI: 2 ranks, no warning"

# The second task (SLURM_LOCALID 1) widens its one CPU to CPUs 0-1, overlapping the first task's 0.
cat > "$work/widen.sh" <<SH
#!/usr/bin/env bash
if [[ \$SLURM_LOCALID == 1 ]]; then exec taskset -c 0-1 "\$@"; else exec taskset -c 0 "\$@"; fi
SH
chmod +x "$work/widen.sh"
job=$(sbatch --parsable --partition="$DPTRAIN_PARTITION" --nodes=1 --ntasks=2 --time=00:01:00 \
        --job-name=e2e-launch-cpus --output="$work/cpus.out" \
        --wrap="srun --mpi=$DPTRAIN_SRUN_MPI --kill-on-bad-exit=1 --cpu-bind=none $work/widen.sh $DPTRAIN_BIN info") || fail "sbatch (cpus) failed"
state=$(wait_job "$job" 90)
[[ $state == COMPLETED ]] || { cat "$work/cpus.out"; fail "job $job (cpus) ended $state, not COMPLETED"; }
grep -q "^warning: ranks 0 and 1 on .* are bound to overlapping CPU sets (0 and 0-1)" "$work/cpus.out" ||
  { cat "$work/cpus.out"; fail "overlapping CPU sets were not named"; }
echo "3. two ranks on overlapping CPU sets: named"
echo "PASS"
