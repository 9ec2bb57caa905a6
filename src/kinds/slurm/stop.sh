# shellcheck shell=sh
# mlw_stop JOB: cancels the Slurm job (Slurm signals its steps; job.sh records the ending).
mlw_stop() {
  scancel "$1" 2>&1
  exit 0
}
