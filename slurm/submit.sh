#!/usr/bin/env bash
# Submits one of the batch scripts with the sbatch options of a partition profile (partition, ranks
# and GPUs per node, cores per rank, site options), so the same script serves configuration G, K or
# another site's nodes.
set -euo pipefail

usage() {
  cat <<'EOF_USAGE'
Usage: slurm/submit.sh [OPTIONS] [SBATCH OPTIONS --] SCRIPT [SCRIPT ARGS]

Options (--opt VALUE or --opt=VALUE, before the script, anywhere among the sbatch options too):
  --profile NAME|FILE   c4130-g (default), c4130-k, or a path to an .env file (DPTRAIN_PROFILE)
  --nodes N             nodes (default 1)
  --gpus-per-node G     ranks and GPUs per node (default: the profile's, 4 on a C4130)
  SBATCH OPTIONS --     every other option before the script goes to sbatch (e.g. --time=12:00:00
                        --job-name=googlenet); when there are any, "--" ends them, before the script
Everything after SCRIPT goes to the script (to train.sbatch: its options and dptrain train's); the
options above are not taken there: give them before the script.

Examples:
  slurm/submit.sh --nodes 2 slurm/train.sbatch --model googlenet --data /lustre/imagenet-h5 --epochs 90
  slurm/submit.sh --time=01:00:00 --profile=c4130-k -- slurm/bench.sbatch --model inception-v3
Prints the job id.
EOF_USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

nodes=1
gpus_per_node=
sbatch_extra=()
sbatch_end=""  # set by the "--" that ends the sbatch options
while [[ $# -gt 0 ]]; do
  case $1 in
    --profile=*|--nodes=*|--gpus-per-node=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;  # --opt=value is --opt value
  esac
  case $1 in
    -h|--help) usage; exit 0 ;;
    --profile) export DPTRAIN_PROFILE=${2:?--profile needs a value}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a value}; shift 2 ;;
    --gpus-per-node) gpus_per_node=${2:?--gpus-per-node needs a value}; shift 2 ;;
    --) sbatch_end=1; shift; break ;;
    -*) sbatch_extra+=("$1"); shift ;;
    # A word after an sbatch option may be its value (--time 1:00:00), so only "--" ends them.
    *) [[ ${#sbatch_extra[@]} -gt 0 ]] || break; sbatch_extra+=("$1"); shift ;;
  esac
done
[[ ${#sbatch_extra[@]} -eq 0 || -n $sbatch_end ]] || dptrain_die "sbatch options must end with '--' before the script"
[[ $# -gt 0 ]] || { usage >&2; exit 2; }
script=$1
shift
# What follows the script is the script's: none of the batch scripts (nor dptrain) takes these.
for arg in "$@"; do
  case ${arg%%=*} in
    --profile|--nodes|--gpus-per-node)
      dptrain_die "$arg after $script would go to the script, not to submit.sh: give it before the script" ;;
  esac
done
[[ -f $script ]] || dptrain_die "no batch script '$script'"
dptrain_load_profile "$here"
gpus_per_node=${gpus_per_node:-$DPTRAIN_GPUS_PER_NODE}

mapfile -t options < <(dptrain_sbatch_options "$nodes" "$gpus_per_node")
export DPTRAIN_SLURM_DIR=$here
sbatch --parsable "${options[@]}" "${sbatch_extra[@]}" "$script" "$@"
