#!/usr/bin/env bash
# The shipped Slurm scripts' options, without a cluster: stub sbatch, srun and scontrol first on PATH
# and a stub dptrain record what reaches them. For each option of train.sbatch, submit.sh,
# bench.sbatch, report.sbatch and scaling-study.sh, as `--opt value` and `--opt=value`, before and
# after other options: it arrives where it belongs (the script's own setting, sbatch, or dptrain)
# exactly once, and an option that replaces a script default is never on dptrain's line twice. Also:
# the warning when the job's partition is not the profile's, and the site set-up hook (DPTRAIN_SETUP)
# running before dptrain. Every failure is listed, then the test fails.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
slurm=$repo/slurm
work=$(mktemp -d)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT
# Nothing of the caller's Slurm job or dptrain settings may reach the scripts.
while read -r name; do unset "$name"; done < <(compgen -v | grep -E '^(SLURM_|DPTRAIN_)')
# shellcheck source=tests/e2e/slurm_stubs.sh
source "$(dirname "${BASH_SOURCE[0]}")/slurm_stubs.sh"
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- the stubs ---------------------------------------------------------------------------------------
# Each writes into $STUB_LOG (one directory a run): the arguments one a line, and "order" (who ran when).
mkdir -p "$work/bin" "$work/dptrain-bin" "$work/site-bin"
cat > "$work/bin/sbatch" <<'EOF'
#!/usr/bin/env bash
{ printf '%s\n' "$@"; echo "--call-end--"; } >> "$STUB_LOG/sbatch.calls"
printf '%s\n' "$@" > "$STUB_LOG/sbatch.args"
echo "${DPTRAIN_PROFILE:-}" > "$STUB_LOG/sbatch.profile"
echo 4242
EOF
cat > "$work/bin/srun" <<'EOF'
#!/usr/bin/env bash
# srun's own options (all given as --opt=value by the scripts) are dropped; the command runs as rank 0.
{ printf '%s\n' "$@"; echo "--call-end--"; } >> "$STUB_LOG/srun.calls"
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
SLURM_PROCID=0 exec "$@"
EOF
write_scontrol_stub "$work/bin"
cat > "$work/dptrain-bin/dptrain" <<'EOF'
#!/usr/bin/env bash
# A stand-in for dptrain: `train --help` names the options train.sbatch looks for; every other run
# records its arguments (dptrain-<command>.args) and what the site set-up left (dptrain-<command>.setup).
cmd=$1
shift
if [[ ${1:-} == --help ]]; then
  [[ $cmd != train ]] || echo "--checkpoint-dir --preempt-signal --ready-file --failure-report"
  exit 0
fi
echo "dptrain $cmd" >> "$STUB_LOG/order"
printf '%s\n' "$@" > "$STUB_LOG/dptrain-$cmd.args"
echo "${SITE_SETUP_MARK:-none}" > "$STUB_LOG/dptrain-$cmd.setup"
if [[ $cmd == bench ]]; then  # the JSON result bench.sbatch checks for
  while [[ $# -gt 0 ]]; do [[ $1 == --json ]] && echo '{}' > "$2"; shift; done
fi
exit 0
EOF
cp "$work/dptrain-bin/dptrain" "$work/site-bin/dptrain"
chmod +x "$work"/bin/* "$work/dptrain-bin/dptrain" "$work/site-bin/dptrain"
export PATH=$work/bin:$PATH STUB_SLURM_DIR=$slurm

# --- helpers -----------------------------------------------------------------------------------------
# count_opt FILE OPT: how often OPT is on a recorded command line, as OPT or OPT=...
count_opt() { [[ -f $1 ]] || { echo 0; return; }; grep -c -e "^$2\$" -e "^$2=" "$1"; }
# opt_value FILE OPT: OPT's value there (the word after it, or what follows "=")
opt_value() {
  [[ -f $1 ]] || return 0
  awk -v o="$2" 'take { print; exit } $0 == o { take = 1 } index($0, o "=") == 1 { print substr($0, length(o) + 2); exit }' "$1"
}
# expect_once FILE OPT VALUE WHAT: OPT is there exactly once, with VALUE
expect_once() {
  local n v
  n=$(count_opt "$1" "$2")
  v=$(opt_value "$1" "$2")
  [[ $n == 1 && $v == "$3" ]] || bad "$4: $2 is on $(basename "$1" .args) $n time(s) (value '$v'), not once as '$3'"
}
expect_none() { [[ $(count_opt "$1" "$2") == 0 ]] || bad "$3: $2 reached $(basename "$1" .args)"; }

# A fresh directory for one run: the submit directory, with the default dataset, and STUB_LOG.
new_case() {
  case_dir=$(mktemp -d "$work/case.XXXXXX")
  mkdir -p "$case_dir/build/data/fashion-mnist" "$case_dir/log"
  export STUB_LOG=$case_dir/log
}
# run_job SCRIPT ARGS...: runs a batch script as Slurm would start it, in $case_dir, with
# $job_env (VAR=value words) added; stdout and stderr into $case_dir/out and err, the status in $status.
job_env=()
run_job() {
  local script=$1
  shift
  status=0
  (cd "$case_dir" && env SLURM_JOB_ID=77 SLURM_JOB_NAME=opts SLURM_SUBMIT_DIR="$case_dir" SLURM_NTASKS=1 \
     SLURM_NTASKS_PER_NODE=1 SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=node1 SLURM_JOB_PARTITION=c4130-g \
     DPTRAIN_SLURM_DIR="$slurm" DPTRAIN_BIN="$work/dptrain-bin/dptrain" "${job_env[@]}" \
     bash "$slurm/$script" "$@" > "$case_dir/out" 2> "$case_dir/err") || status=$?
}
# run_login SCRIPT ARGS...: a login-node script (submit.sh, scaling-study.sh) in $case_dir.
run_login() {
  local script=$1
  shift
  status=0
  (cd "$case_dir" && bash "$slurm/$script" "$@" > "$case_dir/out" 2> "$case_dir/err") || status=$?
}
show_case() { sed 's/^/    /' "$case_dir/out" "$case_dir/err" | tail -n 8; }

# --- train.sbatch: each of its options in both forms, before and after others -----------------------
# train_case OPT VALUE: OPT VALUE and OPT=VALUE, first and last among other options (dptrain's --lr and
# --flip, and another of the script's own); then check_train OPT VALUE WHAT says what must have happened.
check_train() {
  local opt=$1 value=$2 what=$3 args=$STUB_LOG/dptrain-train.args
  if [[ $status -ne 0 || ! -f $args ]]; then bad "$what: the job failed (exit $status)"; show_case; return; fi
  case $opt in
    --run-dir)
      expect_none "$args" --run-dir "$what"
      expect_once "$args" --metrics "$value/metrics-r0.jsonl" "$what"
      expect_once "$args" --checkpoint-dir "$value/checkpoints" "$what" ;;
    --preflight)
      expect_none "$args" --preflight "$what"
      [[ ! -f $STUB_LOG/dptrain-preflight.args ]] || bad "$what: the preflight ran" ;;
    --epochs) expect_once "$args" --epochs "$value" "$what"; expect_none "$args" --steps "$what" ;;
    --steps) expect_once "$args" --steps "$value" "$what"; expect_none "$args" --epochs "$what" ;;
    *) expect_once "$args" "$opt" "$value" "$what" ;;
  esac
  # The other options arrived too, once each.
  expect_once "$args" --lr 0.5 "$what"
  [[ $(count_opt "$args" --flip) == 1 ]] || bad "$what: --flip is not on dptrain train once"
  if [[ $opt == --model ]]; then
    expect_once "$args" --checkpoint-every 11 "$what"
  else
    expect_once "$args" --model other-model "$what"
  fi
}
train_case() {
  local opt=$1 value=$2 other form where
  other=(--model other-model)
  [[ $opt != --model ]] || other=(--checkpoint-every 11)
  for form in space equals; do
    for where in first last; do
      local given=("$opt" "$value")
      [[ $form == space ]] || given=("$opt=$value")
      new_case
      value=${value//@CASE@/$case_dir}
      given=("${given[@]//@CASE@/$case_dir}")
      mkdir -p "$case_dir/mydata"
      if [[ $where == first ]]; then
        run_job train.sbatch "${given[@]}" --lr 0.5 "${other[@]}" --flip
      else
        run_job train.sbatch --lr 0.5 "${other[@]}" --flip "${given[@]}"
      fi
      check_train "$opt" "$value" "train.sbatch ${given[*]} ($where)"
      value=$2
    done
  done
}
train_case --model lenet
train_case --data @CASE@/mydata
train_case --epochs 7
train_case --steps 9
train_case --batch-size 48
train_case --run-dir @CASE@/rd
train_case --checkpoint-dir @CASE@/ck
train_case --checkpoint-every 33
train_case --resume none
train_case --preempt-signal USR2
train_case --preflight off
# The preflight runs by default (warn), and with the other modes, in either form.
for given in "" "--preflight=exclude" "--preflight warn"; do
  new_case
  # shellcheck disable=SC2086  # the words of $given
  run_job train.sbatch $given --model lenet
  [[ -f $STUB_LOG/dptrain-preflight.args ]] || bad "train.sbatch $given: the preflight did not run"
  expect_none "$STUB_LOG/dptrain-train.args" --preflight "train.sbatch $given"
done
# The profile's --backend and --precision give way to the job's own, in either form.
for given in "--backend cpu" "--backend=cpu" "--precision fp16" "--precision=fp16"; do
  new_case
  # shellcheck disable=SC2086
  run_job train.sbatch $given
  opt=${given%%[ =]*}
  value=${given#*[ =]}
  expect_once "$STUB_LOG/dptrain-train.args" "$opt" "$value" "train.sbatch $given"
done
# Options the script sets itself never reach dptrain a second time: refused before srun.
for given in "-- --model lenet" "-- --steps=3" "-- --run-dir=x" "-- --preflight off" "--metrics m.jsonl" "--ready-file=r"; do
  new_case
  # shellcheck disable=SC2086
  run_job train.sbatch $given
  [[ $status -ne 0 && ! -f $STUB_LOG/srun.calls ]] || bad "train.sbatch $given: not refused before srun (exit $status)"
  opt=${given#-- }
  opt=${opt%%[ =]*}
  grep -q "dptrain-slurm: error: .*$opt" "$case_dir/err" || bad "train.sbatch $given: no error line naming $opt"
done
# After "--", dptrain's options still go on as given.
new_case
run_job train.sbatch --model lenet -- --lr 0.25 --seed=5
expect_once "$STUB_LOG/dptrain-train.args" --lr 0.25 "train.sbatch -- --lr 0.25"
expect_once "$STUB_LOG/dptrain-train.args" --seed 5 "train.sbatch -- --seed=5"

# --- submit.sh: its own options apart from sbatch's and the script's, wherever they are given --------
# check_submit OPT VALUE WHAT: sbatch got the profile's options built from it, once, and nothing else of it.
check_submit() {
  local opt=$1 value=$2 what=$3 args=$STUB_LOG/sbatch.args
  if [[ $status -ne 0 || ! -f $args ]]; then bad "$what: submit.sh failed (exit $status)"; show_case; return; fi
  expect_none "$args" --profile "$what"
  expect_none "$args" -- "$what"
  case $opt in
    --profile)
      expect_once "$args" --partition c4130-k "$what"
      expect_once "$args" --cpus-per-task 3 "$what"
      [[ $(<"$STUB_LOG/sbatch.profile") == "$slurm/partitions/c4130-k.env" ]] ||
        bad "$what: the job's DPTRAIN_PROFILE is '$(<"$STUB_LOG/sbatch.profile")'" ;;
    --nodes) expect_once "$args" --nodes "$value" "$what" ;;
    --gpus-per-node)
      expect_once "$args" --gpus-per-node "$value" "$what"
      expect_once "$args" --ntasks-per-node "$value" "$what" ;;
  esac
  # The script and its arguments come last, as given.
  [[ $(tail -n 3 "$args" | paste -sd' ') == "$slurm/train.sbatch --model lenet" ]] ||
    bad "$what: the script's arguments are '$(sed -n "\|^$slurm/train.sbatch\$|,\$p" "$args" | paste -sd' ')'"
}
submit_case() {
  local opt=$1 value=$2 form where given other
  other=(--gpus-per-node 1)
  [[ $opt != --gpus-per-node ]] || other=(--nodes 2)
  for form in space equals; do
    given=("$opt" "$value")
    [[ $form == space ]] || given=("$opt=$value")
    # first; among the sbatch options, after the first of them; last before "--"; without sbatch options.
    for where in first after-sbatch last own-only; do
      new_case
      case $where in
        first) run_login submit.sh "${given[@]}" --time=01:00:00 --job-name jn "${other[@]}" -- "$slurm/train.sbatch" --model lenet ;;
        after-sbatch) run_login submit.sh --time=01:00:00 "${given[@]}" --job-name jn -- "$slurm/train.sbatch" --model lenet ;;
        last) run_login submit.sh "${other[@]}" --time=01:00:00 --job-name jn "${given[@]}" -- "$slurm/train.sbatch" --model lenet ;;
        own-only) run_login submit.sh "${other[@]}" "${given[@]}" "$slurm/train.sbatch" --model lenet ;;
      esac
      check_submit "$opt" "$value" "submit.sh ${given[*]} ($where)"
      if [[ $where != own-only && -f $STUB_LOG/sbatch.args ]]; then  # the sbatch options, once each
        expect_once "$STUB_LOG/sbatch.args" --time 01:00:00 "submit.sh ${given[*]} ($where)"
        expect_once "$STUB_LOG/sbatch.args" --job-name jn "submit.sh ${given[*]} ($where)"
      fi
    done
  done
}
submit_case --profile c4130-k
submit_case --nodes 3
submit_case --gpus-per-node 2
# submit.sh's options after the script would go to the script: refused before sbatch.
for given in "--nodes 2" "--profile=c4130-k"; do
  new_case
  # shellcheck disable=SC2086
  run_login submit.sh "$slurm/train.sbatch" --model lenet $given
  [[ $status -ne 0 && ! -f $STUB_LOG/sbatch.args ]] || bad "submit.sh SCRIPT ... $given: not refused (exit $status)"
  grep -q "give it before the script" "$case_dir/err" || bad "submit.sh SCRIPT ... $given: no error naming it"
done
new_case
run_login submit.sh --time=01:00:00 "$slurm/train.sbatch"
[[ $status -ne 0 && ! -f $STUB_LOG/sbatch.args ]] || bad "submit.sh: sbatch options without '--' were not refused"
new_case
run_login submit.sh --help
grep -q 'Everything after SCRIPT goes to the script' "$case_dir/out" || bad "submit.sh --help does not say where options go"

# --- bench.sbatch and report.sbatch ------------------------------------------------------------------
for form in space equals; do
  for where in first last; do
    new_case
    if [[ $form == space ]]; then given=(--model lenet --out "$case_dir/r.json"); else given=(--model=lenet "--out=$case_dir/r.json"); fi
    if [[ $where == first ]]; then
      run_job bench.sbatch "${given[@]}" --steps 3 --image-size 28
    else
      run_job bench.sbatch --steps 3 --image-size 28 "${given[@]}"
    fi
    what="bench.sbatch ${given[*]} ($where)"
    [[ $status -eq 0 ]] || { bad "$what: the job failed (exit $status)"; show_case; }
    expect_once "$STUB_LOG/dptrain-bench.args" --model lenet "$what"
    expect_once "$STUB_LOG/dptrain-bench.args" --json "$case_dir/r.json" "$what"
    expect_once "$STUB_LOG/dptrain-bench.args" --steps 3 "$what"
    expect_none "$STUB_LOG/dptrain-bench.args" --out "$what"

    new_case
    echo '{}' > "$case_dir/a.json"
    echo '{}' > "$case_dir/b.json"
    if [[ $form == space ]]; then given=(--out "$case_dir/rep"); else given=("--out=$case_dir/rep"); fi
    if [[ $where == first ]]; then
      run_job report.sbatch "${given[@]}" "$case_dir/a.json" "$case_dir/b.json"
    else
      run_job report.sbatch "$case_dir/a.json" "$case_dir/b.json" "${given[@]}"
    fi
    what="report.sbatch ${given[*]} ($where)"
    [[ $status -eq 0 ]] || { bad "$what: the job failed (exit $status)"; show_case; }
    expect_once "$STUB_LOG/dptrain-report.args" --csv "$case_dir/rep.csv" "$what"
    [[ $(head -n 2 "$STUB_LOG/dptrain-report.args" 2> /dev/null | paste -sd' ') == "$case_dir/a.json $case_dir/b.json" ]] ||
      bad "$what: dptrain report did not get the two results first"
  done
done
new_case
run_job bench.sbatch --model lenet --json x.json
[[ $status -ne 0 && ! -f $STUB_LOG/srun.calls ]] || bad "bench.sbatch --json: not refused before srun"

# --- scaling-study.sh --------------------------------------------------------------------------------
# study_case OPT VALUE: in both forms, before and after the model and another option; each bench job's
# sbatch call (the first one checked) shows it once.
study_case() {
  local opt=$1 value=$2 form where given other calls first
  other=(--steps 5)
  [[ $opt != --steps ]] || other=(--warmup 1)
  for form in space equals; do
    given=("$opt" "$value")
    [[ $form == space ]] || given=("$opt=$value")
    for where in first last; do
      new_case
      if [[ $where == first ]]; then
        run_login scaling-study.sh "${given[@]}" "${other[@]}" lenet -- --image-size 28
      else
        run_login scaling-study.sh "${other[@]}" lenet "${given[@]}" -- --image-size 28
      fi
      what="scaling-study.sh ${given[*]} ($where)"
      calls=$STUB_LOG/sbatch.calls
      if [[ $status -ne 0 || ! -f $calls ]]; then bad "$what: failed (exit $status)"; show_case; continue; fi
      first=$STUB_LOG/bench-1.args
      awk '/^--call-end--$/ { exit } { print }' "$calls" > "$first"
      case $opt in
        --gpus) [[ $(grep -c "^$slurm/bench.sbatch\$" "$calls") == 2 ]] || bad "$what: not 2 bench jobs" ;;
        --batch-size|--steps|--warmup) expect_once "$first" "$opt" "$value" "$what" ;;
        --out) expect_once "$first" --out "$case_dir/$value/bench-lenet-1gpu.json" "$what" ;;
        --profile) expect_once "$first" --partition c4130-k "$what"; expect_none "$first" --profile "$what" ;;
        --time) expect_once "$first" --time "$value" "$what" ;;
      esac
      expect_once "$first" --image-size 28 "$what"
    done
  done
}
study_case --gpus "1 2"
study_case --batch-size 16
study_case --steps 7
study_case --warmup 2
study_case --out res
study_case --profile c4130-k
study_case --time 00:05:00
new_case
run_login scaling-study.sh lenet -- --steps=9
[[ $status -ne 0 && ! -f $STUB_LOG/sbatch.calls ]] || bad "scaling-study.sh -- --steps=9: not refused before sbatch"

# --- the partition Slurm gave the job against the profile's -----------------------------------------
# partition_case SCRIPT PROFILE PARTITION EXPECT(warn|quiet)
partition_case() {
  local script=$1 profile=$2 partition=$3 expect=$4 lines
  new_case
  job_env=(DPTRAIN_PROFILE="$profile" SLURM_JOB_PARTITION="$partition")
  run_job "$script" --model lenet
  job_env=()
  lines=$(grep -c "warning: .*partition" "$case_dir/err")
  if [[ $expect == warn ]]; then
    if [[ $lines != 1 ]] ||
       ! grep -q "partition '$partition' (SLURM_JOB_PARTITION).*partition '$profile' (DPTRAIN_PARTITION)" "$case_dir/err"; then
      bad "$script in partition $partition with profile $profile: not one warning line naming both ($lines)"
    fi
    ! grep -q "warning: .*partition" "$case_dir/out" || bad "$script: the partition warning went to stdout"
  else
    [[ $lines == 0 ]] || bad "$script in partition $partition with profile $profile: a warning where they match"
  fi
  [[ $status -eq 0 ]] || bad "$script in partition $partition: the job failed (exit $status)"
}
partition_case train.sbatch c4130-g gpu warn
partition_case train.sbatch c4130-k c4130-g warn
partition_case train.sbatch c4130-g c4130-g quiet
partition_case train.sbatch c4130-k c4130-k quiet
partition_case bench.sbatch c4130-g gpu warn
partition_case bench.sbatch c4130-g c4130-g quiet

# --- the site set-up hook (DPTRAIN_SETUP) ------------------------------------------------------------
# The set-up puts dptrain on PATH (no DPTRAIN_BIN), exports a mark and reads an unset variable (as module
# and spack do); it must run once, before anything of dptrain's.
cat > "$work/setup.sh" <<EOF
echo setup >> "\$STUB_LOG/order"
export PATH=$work/site-bin:\$PATH
export SITE_SETUP_MARK=loaded\${SOME_UNSET_VARIABLE}
EOF
setup_case() {  # setup_case WHAT SCRIPT ARGS... (job_env set by the caller)
  local what=$1 script=$2 cmd
  shift 2
  cmd=${script%.sbatch}
  run_job "$script" "$@"
  if [[ $status -ne 0 ]]; then bad "$what: the job failed (exit $status)"; show_case; return; fi
  [[ $(head -n 1 "$STUB_LOG/order" 2> /dev/null) == setup && $(grep -c '^setup$' "$STUB_LOG/order") == 1 ]] ||
    bad "$what: the set-up did not run once before dptrain ($(paste -sd, "$STUB_LOG/order" 2> /dev/null))"
  [[ $(cat "$STUB_LOG/dptrain-$cmd.setup" 2> /dev/null) == loaded ]] || bad "$what: dptrain $cmd ran without the set-up's environment"
  grep -q "site set-up: sourcing" "$case_dir/out" || bad "$what: the log does not name the set-up"
}
new_case
job_env=(DPTRAIN_SETUP="$work/setup.sh" DPTRAIN_BIN=)
setup_case "train.sbatch with DPTRAIN_SETUP" train.sbatch --model lenet
grep -q "^dptrain-slurm: srun .*$work/site-bin/dptrain train" "$case_dir/out" || bad "train.sbatch did not run the dptrain the set-up put on PATH"
new_case
setup_case "bench.sbatch with DPTRAIN_SETUP" bench.sbatch --model lenet
new_case
echo '{}' > "$case_dir/a.json"
setup_case "report.sbatch with DPTRAIN_SETUP" report.sbatch --out "$case_dir/rep" "$case_dir/a.json"
# From a profile, relative to the submit directory.
new_case
cp "$work/setup.sh" "$case_dir/site-setup.sh"
cat > "$case_dir/site.env" <<EOF
: "\${DPTRAIN_SETUP:=site-setup.sh}"
source $slurm/partitions/c4130-g.env
EOF
job_env=(DPTRAIN_PROFILE="$case_dir/site.env" DPTRAIN_BIN=)
setup_case "train.sbatch with a profile's DPTRAIN_SETUP" train.sbatch --model lenet
# A set-up that fails ends the job before dptrain runs; one that is missing is named.
new_case
cat > "$case_dir/broken.sh" <<'EOF'
echo setup >> "$STUB_LOG/order"
false
EOF
job_env=(DPTRAIN_SETUP="$case_dir/broken.sh")
run_job train.sbatch --model lenet
[[ $status -ne 0 && ! -f $STUB_LOG/dptrain-train.args ]] || bad "a failing set-up did not end the job before dptrain (exit $status)"
new_case
job_env=(DPTRAIN_SETUP="$case_dir/missing.sh")
run_job train.sbatch --model lenet
if [[ $status -eq 0 ]] || ! grep -q "DPTRAIN_SETUP=.*missing.sh" "$case_dir/err"; then bad "a missing set-up file was not named"; fi
job_env=()

if (( failures > 0 )); then
  echo "FAIL: $failures check(s) failed"
  exit 1
fi
echo "PASS (train.sbatch, submit.sh, bench.sbatch, report.sbatch, scaling-study.sh options in both forms; the partition warning; DPTRAIN_SETUP)"
