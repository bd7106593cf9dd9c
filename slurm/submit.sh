#!/usr/bin/env bash
# Submits one of the batch scripts with the sbatch options of a partition profile (partition, ranks
# and GPUs per node, cores per rank, site options), so the same script serves configuration G, K or
# another site's nodes.
set -euo pipefail

usage() {
  cat <<'EOF_USAGE'
Usage: slurm/submit.sh [--profile NAME|FILE] [--nodes N] [--gpus-per-node G] [SBATCH OPTIONS --] SCRIPT [SCRIPT ARGS]

  --profile NAME|FILE   c4130-g (default), c4130-k, or a path to an .env file (DPTRAIN_PROFILE)
  --nodes N             nodes (default 1)
  --gpus-per-node G     ranks and GPUs per node (default: the profile's, 4 on a C4130)
  SBATCH OPTIONS --     more sbatch options (e.g. --time=12:00:00 --job-name=googlenet --), then "--"

Examples:
  slurm/submit.sh --nodes 2 slurm/train.sbatch --model googlenet --data /lustre/imagenet-h5 --epochs 90
  slurm/submit.sh --profile c4130-k --time=01:00:00 -- slurm/bench.sbatch --model inception-v3
Prints the job id.
EOF_USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

nodes=1
gpus_per_node=
sbatch_extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --profile) export DPTRAIN_PROFILE=${2:?--profile needs a value}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a value}; shift 2 ;;
    --gpus-per-node) gpus_per_node=${2:?--gpus-per-node needs a value}; shift 2 ;;
    -*)
      # sbatch options up to "--"
      while [[ $# -gt 0 && $1 != -- ]]; do sbatch_extra+=("$1"); shift; done
      [[ $# -gt 0 ]] || dptrain_die "sbatch options must end with '--' before the script"
      shift ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || { usage >&2; exit 2; }
script=$1
shift
[[ -f $script ]] || dptrain_die "no batch script '$script'"
dptrain_load_profile "$here"
gpus_per_node=${gpus_per_node:-$DPTRAIN_GPUS_PER_NODE}

mapfile -t options < <(dptrain_sbatch_options "$nodes" "$gpus_per_node")
export DPTRAIN_SLURM_DIR=$here
sbatch --parsable "${options[@]}" "${sbatch_extra[@]}" "$script" "$@"
