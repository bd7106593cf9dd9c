# Sourced by the tests that run the shipped Slurm scripts without a cluster: the stub scontrol they
# share. It expands `show hostnames`, names train.sbatch as the job's command (from $STUB_SLURM_DIR)
# and records each `requeue` in $STUB_LOG/scontrol.requeue.
# shellcheck shell=bash
# write_scontrol_stub DIR: DIR/scontrol (the caller makes it executable with its other stubs).
write_scontrol_stub() {
  cat > "$1/scontrol" <<'STUB'
#!/usr/bin/env bash
case "$1 ${2:-}" in
  "show hostnames") tr ',' '\n' <<< "$3" ;;
  "show job") echo "JobId=$4 Command=$STUB_SLURM_DIR/train.sbatch" ;;
  "requeue "*) echo "$*" >> "$STUB_LOG/scontrol.requeue" ;;
esac
STUB
}
