# Sourced by end-to-end tests that compare the parameters of two checkpoints within a tolerance.
# shellcheck shell=bash
# close_params A B DELTA: every parameter within DELTA (h5diff -d; the CRC-32 attributes, which differ
# whenever one bit does, are left out). Differences go to $work/h5diff.log.
close_params() {
  local excluded=() name
  for name in $(h5ls -r "$1/params" | awk '$2 == "Dataset" { print $1 }'); do
    excluded+=(--exclude-attribute "/params$name")
  done
  # shellcheck disable=SC2154  # $work is the sourcing test's work directory
  h5diff -r -d "$3" "${excluded[@]}" "$1" "$2" /params /params > "$work/h5diff.log" 2>&1
}
