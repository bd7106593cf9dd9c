#!/usr/bin/env bash
# End-to-end: the progress lines of long phases (core/progress_line.hpp). With DPTRAIN_PROGRESS_SECONDS=0
# every update prints, so each phase shows its line on a small dataset: training between step reports,
# validation after an epoch, eval and data verify. Without it (ten seconds) these short phases print none.
set -uo pipefail
dptrain=${1:?usage: $0 DPTRAIN}
# shellcheck source=tests/e2e/e2e_common.sh
source "$(dirname "$0")/e2e_common.sh"

synth_data 16  # 64 training images, 8 for validation
data=$work/data
run() {  # run NAME ARGS...: dptrain ARGS into $work/NAME.txt, which must succeed
  local name=$1
  shift
  "$dptrain" "$@" > "$work/$name.txt" 2>&1 || { cat "$work/$name.txt"; fail "$name failed"; }
}
expect_line() {  # expect_line NAME REGEX WHAT
  grep -qE "$2" "$work/$1.txt" || { cat "$work/$1.txt"; fail "$1: no $3 line (/$2/)"; }
}

export DPTRAIN_PROGRESS_SECONDS=0
run train train --model lenet --data "$data" --batch-size 8 --epochs 1 --log-every 100 --checkpoint-dir "$work/ckpt"
# Steps 1-7 print no report (the first at the epoch's end): each prints how far the run got.
expect_line train "^training: 3 of 8 steps \(37%\), [0-9]+ s$" "training progress"
expect_line train "^validation: [0-9]+ of 8 images \([0-9]+%\), [0-9]+ s$" "validation progress"
run eval eval --checkpoint "$work/ckpt" --data "$data" --batch-size 2
expect_line eval "^eval: [0-9]+ of 8 images \([0-9]+%\), [0-9]+ s$" "eval progress"
run verify data verify "$data"
expect_line verify "^verify: [0-9]+ of 3 shards \([0-9]+%\), [0-9]+ s$" "verify progress"

# A value that is not a number of seconds is refused by name.
DPTRAIN_PROGRESS_SECONDS=soon "$dptrain" data verify "$data" > "$work/bad.txt" 2>&1 && fail "DPTRAIN_PROGRESS_SECONDS=soon was accepted"
grep -q "DPTRAIN_PROGRESS_SECONDS must be a number of seconds" "$work/bad.txt" || { cat "$work/bad.txt"; fail "the refusal does not name DPTRAIN_PROGRESS_SECONDS"; }

# The default interval: these phases take well under ten seconds, so none of them prints a line.
unset DPTRAIN_PROGRESS_SECONDS
run quiet data verify "$data"
grep -qE "^verify: " "$work/quiet.txt" && { cat "$work/quiet.txt"; fail "a progress line within the first ten seconds"; }
echo "e2e_progress: ok"
