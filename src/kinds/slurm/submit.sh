#!/bin/sh
# Submits an mlw run to Slurm, in the run folder:
#   sh ./submit.sh RETRY_SECONDS SBATCH_OPTION...
# Standard input holds job.sh, run.env and the GPU sampler (exec/sampler.sh, sampler.awk, and
# sampler.nvml: the NVML reader as sampler.sh takes it in MLW_NVML), each
# after a line with its length in bytes. Prints
# the job id (and nothing else on stdout); a refusal writes 125 to exit_code and exits non-zero
# with sbatch's words.
set -u
retry=$1
shift
for f in job.sh run.env sampler.sh sampler.awk sampler.nvml; do
  read -r n || exit 125
  head -c "$n" >"$f" || exit 125
done
echo "$retry" >slurm_retry
if ! id=$(sbatch --parsable "$@" job.sh </dev/null); then
  echo 125 >exit_code
  exit 1
fi
# --parsable prints "ID" or "ID;CLUSTER".
id=${id%%;*}
echo "$id" >job_id
echo "$id"
