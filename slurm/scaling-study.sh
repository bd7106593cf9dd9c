#!/usr/bin/env bash
# The scaling study of the whitepaper (Figure 6): `dptrain bench` of one model on 1, 2 and 4 GPUs of one
# node and on 8, 12 and 16 GPUs of 2, 3 and 4 nodes, at a fixed batch per GPU, then a job that runs
# `dptrain report` on the results (table, CSV, PNG chart of the speedup).
set -euo pipefail

usage() {
  cat <<'EOF_USAGE'
Usage: slurm/scaling-study.sh [OPTIONS] MODEL [-- DPTRAIN BENCH OPTIONS]

Submits one bench job per GPU count and a report job that waits for them; prints the job ids and
where the report will be.

  --gpus "1 2 4 8 12 16"  GPU counts; counts above a node's GPUs use whole nodes (default as shown)
  --batch-size B          images per GPU per step, the same for every count (default 64)
  --steps S               timed steps (default 50)
  --warmup W              untimed steps first (default 5)
  --out DIR               results and report (default results/scaling-<model>-<date>)
  --profile NAME|FILE     partition profile (default c4130-g; DPTRAIN_PROFILE)
  --time T                time limit of each bench job (default 00:30:00)
  --sequential            run the bench jobs one after another (each after the previous one ends),
                          so they do not share nodes, switches or a file system with each other
  --wait                  wait for the report job and print the table
Each option as --opt VALUE or --opt=VALUE. Other bench options (e.g. --image-size 224) follow "--".
EOF_USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

counts="1 2 4 8 12 16"
batch=64
steps=50
warmup=5
out=
time_limit=00:30:00
wait_for_report=0
sequential=0
model=
bench_extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --gpus=*|--batch-size=*|--steps=*|--warmup=*|--out=*|--profile=*|--time=*)
      set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;  # --opt=value is --opt value
  esac
  case $1 in
    -h|--help) usage; exit 0 ;;
    --gpus) counts=${2:?--gpus needs a list}; shift 2 ;;
    --batch-size) batch=${2:?--batch-size needs a value}; shift 2 ;;
    --steps) steps=${2:?--steps needs a value}; shift 2 ;;
    --warmup) warmup=${2:?--warmup needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    --profile) export DPTRAIN_PROFILE=${2:?--profile needs a value}; shift 2 ;;
    --time) time_limit=${2:?--time needs a value}; shift 2 ;;
    --wait) wait_for_report=1; shift ;;
    --sequential) sequential=1; shift ;;
    --) shift; bench_extra=("$@"); break ;;
    -*) usage >&2; dptrain_die "unknown option '$1'" ;;
    *) [[ -z $model ]] || dptrain_die "one model per study ('$model' and '$1' given)"; model=$1; shift ;;
  esac
done
[[ -n $model ]] || { usage >&2; exit 2; }
# The study gives every bench job these itself: one more after "--" would reach dptrain bench twice.
for arg in "${bench_extra[@]}"; do
  case ${arg%%=*} in
    --batch-size|--steps|--warmup) dptrain_die "${arg%%=*} is the study's own option: give it before '--', not after" ;;
    --model|--out|--json) dptrain_die "${arg%%=*} after '--': the study names the model and its result files itself" ;;
  esac
done
command -v sbatch >/dev/null 2>&1 || dptrain_die "sbatch is not on PATH: run this on a Slurm login node"
dptrain_load_profile "$here"
per_node=$DPTRAIN_GPUS_PER_NODE
(( per_node > 0 )) || dptrain_die "the profile has no GPUs per node (DPTRAIN_GPUS_PER_NODE)"
out=${out:-results/scaling-$model-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export DPTRAIN_SLURM_DIR=$here

jobs=()
results=()
for gpus in $counts; do
  [[ $gpus =~ ^[1-9][0-9]*$ ]] || dptrain_die "GPU count '$gpus' is not a positive number"
  # Up to one node's GPUs on one node; beyond, whole nodes (8 GPUs = 2 nodes x 4).
  if (( gpus <= per_node )); then
    nodes=1; tasks=$gpus
  else
    (( gpus % per_node == 0 )) || dptrain_die "$gpus GPUs do not fill whole nodes of $per_node GPUs"
    nodes=$(( gpus / per_node )); tasks=$per_node
  fi
  result=$out/bench-$model-${gpus}gpu.json
  mapfile -t options < <(dptrain_sbatch_options "$nodes" "$tasks")
  if [[ $sequential -eq 1 && ${#jobs[@]} -gt 0 ]]; then options+=("--dependency=afterany:${jobs[-1]}"); fi
  job=$(sbatch --parsable "${options[@]}" --time="$time_limit" --job-name="bench-$model-${gpus}gpu" \
          --output="$out/bench-$model-${gpus}gpu-%j.out" "$here/bench.sbatch" \
          --model "$model" --batch-size "$batch" --steps "$steps" --warmup "$warmup" --out "$result" \
          "${bench_extra[@]}")
  job=${job%%;*}
  dptrain_log "$gpus GPU(s) on $nodes node(s): job $job"
  jobs+=("$job")
  results+=("$result")
done

dependency=afterany:$(IFS=:; echo "${jobs[*]}")
report=$(sbatch --parsable --partition="$DPTRAIN_PARTITION" --dependency="$dependency" \
           --job-name="report-$model" --output="$out/report-%j.out" "$here/report.sbatch" \
           --out "$out/scaling-$model" "${results[@]}")
report=${report%%;*}
dptrain_log "report: job $report, after ${jobs[*]}; it writes $out/scaling-$model.{txt,csv,png}"

if [[ $wait_for_report -eq 1 ]]; then
  while squeue -h -j "$report" 2>/dev/null | grep -q .; do sleep 5; done
  [[ -s $out/scaling-$model.txt ]] || dptrain_die "the report job wrote no table; see $out/report-$report.out"
  cat "$out/scaling-$model.txt"
fi
