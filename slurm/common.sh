# Shared by the scripts in slurm/ (sourced, not run): the partition profile, the dptrain binary, the
# sbatch options of a job shape, and the srun command of a job step.
# shellcheck shell=bash

dptrain_die() { echo "dptrain-slurm: error: $*" >&2; exit 1; }
dptrain_log() { echo "dptrain-slurm: $*"; }
dptrain_require_job() {
  [[ -n ${SLURM_JOB_ID:-} ]] ||
    dptrain_die "$1 is a batch script: submit it with sbatch or slurm/submit.sh (see slurm/README.md, or --help)"
}

# Sources the partition profile: DPTRAIN_PROFILE is a name in slurm/partitions (c4130-g, c4130-k) or a
# path to an .env file. Values already in the environment win over the profile's.
dptrain_load_profile() {
  local slurm_dir=$1 profile=${DPTRAIN_PROFILE:-c4130-g} file
  if [[ $profile == */* || $profile == *.env ]]; then
    file=$profile
  else
    file=$slurm_dir/partitions/$profile.env
  fi
  [[ -f $file ]] || dptrain_die "no partition profile '$profile' ($file); see $slurm_dir/partitions/"
  # shellcheck source=partitions/c4130-g.env
  source "$file"
  DPTRAIN_PROFILE_FILE=$(cd "$(dirname "$file")" && pwd)/$(basename "$file")
  export DPTRAIN_PROFILE=$DPTRAIN_PROFILE_FILE
}

# Plain `sbatch slurm/train.sbatch` loads the default profile (c4130-g) whatever partition the job was
# given (`sbatch -p gpu`): one line on stderr when the partition Slurm gave the job is not the profile's.
dptrain_check_partition() {
  local job=${SLURM_JOB_PARTITION:-} profile=${DPTRAIN_PARTITION:-}
  [[ -n $job && -n $profile && $job != "$profile" ]] || return 0
  echo "dptrain-slurm: warning: the job runs in partition '$job' (SLURM_JOB_PARTITION) but profile" \
       "$DPTRAIN_PROFILE_FILE is for partition '$profile' (DPTRAIN_PARTITION); choose the profile with" \
       "DPTRAIN_PROFILE=... or slurm/submit.sh --profile" >&2
}

# The site's environment set-up (module load, spack env activate, ...): DPTRAIN_SETUP names a bash file
# (absolute, or relative to the submit directory) that the batch scripts source inside the job, after
# the profile and before they look for dptrain. It runs under `set -e` (a command in it that fails ends
# the job there) but not `set -u`: module and Spack's shell functions read unset variables.
dptrain_site_setup() {
  local file=${DPTRAIN_SETUP:-}
  [[ -n $file ]] || return 0
  [[ $file == /* ]] || file=${SLURM_SUBMIT_DIR:-$PWD}/$file
  [[ -f $file ]] || dptrain_die "DPTRAIN_SETUP=$DPTRAIN_SETUP: no such file ($file)"
  dptrain_log "site set-up: sourcing $file"
  set +u
  # shellcheck source=/dev/null
  source "$file"
  set -u
}

# The dptrain to run: DPTRAIN_BIN, else `dptrain` on PATH, else the repository's CUDA or CPU build.
dptrain_find_binary() {
  local slurm_dir=$1 candidate
  if [[ -n ${DPTRAIN_BIN:-} ]]; then
    [[ -x $DPTRAIN_BIN ]] || dptrain_die "DPTRAIN_BIN=$DPTRAIN_BIN is not an executable"
    echo "$DPTRAIN_BIN"
    return
  fi
  if command -v dptrain >/dev/null 2>&1; then command -v dptrain; return; fi
  for candidate in "$slurm_dir/../build/cuda/app/dptrain" "$slurm_dir/../build/cpu/app/dptrain"; do
    if [[ -x $candidate ]]; then
      echo "$(cd "$(dirname "$candidate")" && pwd)/dptrain"
      return
    fi
  done
  dptrain_die "no dptrain found: put it on PATH, set DPTRAIN_BIN, or build it (make build)"
}

# The sbatch options of a job of NODES nodes with TASKS ranks (one per GPU) on each, from the profile.
# Prints one option per line (read them with mapfile).
dptrain_sbatch_options() {
  local nodes=$1 tasks=$2 gpus extra
  echo "--partition=$DPTRAIN_PARTITION"
  echo "--nodes=$nodes"
  echo "--ntasks-per-node=$tasks"
  echo "--cpus-per-task=$DPTRAIN_CPUS_PER_TASK"
  if [[ ${DPTRAIN_GPUS_PER_NODE:-0} -gt 0 ]]; then
    gpus=$tasks
    [[ -n ${DPTRAIN_GPU_TYPE:-} ]] && gpus=$DPTRAIN_GPU_TYPE:$tasks
    echo "--gpus-per-node=$gpus"
  fi
  read -r -a extra <<< "${DPTRAIN_SBATCH_EXTRA:-}"
  [[ ${#extra[@]} -eq 0 ]] || printf '%s\n' "${extra[@]}"
}

# The launcher of a job step on every rank of the allocation, into the array `launcher`:
# srun with the profile's MPI plugin and binding, or mpiexec when DPTRAIN_SRUN_MPI=none (Open MPI:
# its exit code is the first failed rank's; it forwards USR1 and USR2 to the ranks, and answers TERM,
# HUP and INT by ending them, TERM after a second and SIGKILL a second later, and returning 1).
dptrain_launcher() {
  local cpus=${SLURM_CPUS_PER_TASK:-${DPTRAIN_CPUS_PER_TASK:-1}}
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$cpus}
  if [[ ${DPTRAIN_SRUN_MPI:-pmix} == none ]]; then
    command -v mpiexec >/dev/null 2>&1 || dptrain_die "DPTRAIN_SRUN_MPI=none needs mpiexec on PATH"
    # Open MPI starts its daemons on the allocated nodes through Slurm; ranks are placed per node.
    launcher=(mpiexec -n "${SLURM_NTASKS:?not in a Slurm job}" --map-by "ppr:${SLURM_NTASKS_PER_NODE%%(*}:node"
              --bind-to none)
    return
  fi
  launcher=(srun "--mpi=${DPTRAIN_SRUN_MPI:-pmix}" --kill-on-bad-exit=1 "--cpus-per-task=$cpus")
  [[ -n ${DPTRAIN_CPU_BIND:-} ]] && launcher+=("--cpu-bind=$DPTRAIN_CPU_BIND")
  if [[ -n ${DPTRAIN_GPU_BIND:-} && ${DPTRAIN_GPUS_PER_NODE:-0} -gt 0 ]]; then
    launcher+=("--gpu-bind=$DPTRAIN_GPU_BIND")
  fi
  return 0
}

# Open MPI 4's mpiexec reports a rank that exits with a code other than 0 in two boxed messages on its
# standard error: "Primary job terminated normally, but 1 process returned a non-zero exit code. Per
# user-direction, the job has been aborted." and "mpiexec detected that one or more processes exited
# with non-zero status ... Exit code: 75". For 75 (checkpointed, requeue) that is no error. This filter
# of mpiexec's standard error drops those two boxes when the code is 75 and passes every other line on
# as it comes (mpiexec --quiet would hide Open MPI's real error messages too). It ignores the stop
# signals: mpiexec writes through it until mpiexec ends.
dptrain_mpiexec_filter() {
  trap '' TERM HUP INT USR1 USR2
  local line in_box="" box=() held=()
  while IFS= read -r line || [[ -n $line ]]; do
    if [[ -z $in_box ]]; then
      if [[ $line =~ ^-{20,}$ ]]; then
        in_box=1
        box=("$line")
      else
        (( ${#held[@]} == 0 )) || printf '%s\n' "${held[@]}"
        held=()
        printf '%s\n' "$line"
      fi
      continue
    fi
    box+=("$line")
    [[ $line =~ ^-{20,}$ ]] || continue
    in_box=""
    if [[ ${#held[@]} -eq 0 && ${box[*]} == *"Per user-direction, the job has been aborted."* ]]; then
      held=("${box[@]}")  # kept until the next box tells the exit code
    elif [[ ${box[*]} == *"exited with non-zero status"* && ${box[*]} =~ Exit\ code:\ +75(\ |$) ]]; then
      held=()
    else
      (( ${#held[@]} == 0 )) || printf '%s\n' "${held[@]}"
      held=()
      printf '%s\n' "${box[@]}"
    fi
  done
  (( ${#held[@]} == 0 )) || printf '%s\n' "${held[@]}"
  (( ${#box[@]} == 0 )) || [[ -z $in_box ]] || printf '%s\n' "${box[@]}"
  return 0
}

# The profile's device and arithmetic, DPTRAIN_BACKEND (cuda on the GPU partitions) and
# DPTRAIN_PRECISION, into the array `device_args`, unless the job's own options (the arguments) name
# them: `--backend cpu` on the command line wins over the profile.
dptrain_device_args() {
  local given=" $* "
  device_args=()
  if [[ -n ${DPTRAIN_BACKEND:-} && $given != *" --backend "* && $given != *" --backend="* ]]; then
    device_args+=(--backend "$DPTRAIN_BACKEND")
  fi
  if [[ -n ${DPTRAIN_PRECISION:-} && $given != *" --precision "* && $given != *" --precision="* ]]; then
    device_args+=(--precision "$DPTRAIN_PRECISION")
  fi
  return 0
}

# One line that names the job, for the head of its log.
dptrain_job_banner() {
  echo "=== job ${SLURM_JOB_NAME:-?} ${SLURM_JOB_ID:-?} (restart ${SLURM_RESTART_COUNT:-0}) on ${SLURM_JOB_NUM_NODES:-?}" \
       "node(s) ${SLURM_JOB_NODELIST:-?}, ${SLURM_NTASKS:-?} ranks, partition ${SLURM_JOB_PARTITION:-?}," \
       "profile ${DPTRAIN_PROFILE_FILE:-?}, $(date -u '+%Y-%m-%dT%H:%M:%SZ') ==="
}
