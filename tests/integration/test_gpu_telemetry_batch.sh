#!/usr/bin/env bash
# GPU telemetry of batch jobs (docs/gpus.md, "Slurm", "Grid Engine"): a job given GPUs is sampled
# on the node that runs it by the sampler its job script ships, its samples and notes in the run's
# record, and the sampler ends with the job. The clusters are the real ones of
# tests/fixtures/servers.sh (slurmctld with slurmd n1 and n2; a Grid Engine cell): Slurm reached as
# the GPU test user, whose PATH has the SIMULATED nvidia-smi (tests/fixtures/nvidia-sim), Grid
# Engine as its own test user, whose jobs are given that folder on PATH with --env; the test writes
# what the simulated nvidia-smi reports. The test clusters have no GPUs, so CUDA_VISIBLE_DEVICES —
# what Slurm sets from a job's gres, and a Grid Engine site's prolog — is given with --env too.
# It proves what mlw records of what nvidia-smi says, never that a GPU computes.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_NVIDIA_SIM MLW_TEST_GPU_USER MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD \
  MLW_TEST_SSH_HOST_KEY SLURM_CONF MLW_TEST_SGE_USER
echo "SIMULATION: every GPU in this suite is simulated (tests/fixtures/nvidia-sim); no GPU is used"

GUSER=$MLW_TEST_GPU_USER
sim_start
info() { "$MLW" -o json history info -r "$1"; }
series() { metric_values ".mlw/runs/$1/metrics.jsonl" "$2"; }
# sys_lines RUN: how many sys/ samples the run's metrics have.
sys_lines() { cat ".mlw/runs/$1/metrics.jsonl" 2>/dev/null | grep -c '"sys/' || :; }
# samplers USER: how many samplers of USER run.
samplers() { ps -u "$1" -o args= | grep -c '[/]sampler[.]sh' || :; }
no_samplers() { [ "$(samplers "$1")" = 0 ]; }

new_project p-slurm
cat >busy.py <<'PY'
import sys, time
start = time.time()
while time.time() - start < float(sys.argv[1]):
    sum(range(20000))
print("BUSY done", flush=True)
PY
"$MLW" -q computetarget attach slurm -n hpc -a "127.0.0.1:$MLW_TEST_SSH_PORT" -u "$GUSER" \
  --password-stdin <"$WORK/pw" >/dev/null
expect_eq "attach a Slurm target as the GPU user" "$?" 0
echo "gpuUnusedWarnMinutes: 0.05" >>aml_config/hpc.compute
run_mlw computetarget doctor -n hpc
check "doctor says where Slurm jobs are sampled" \
  grep -Eq '^GPU sampling +- +on each node of a job given GPUs' <<<"$OUT"

# --- a job given GPU 1: its samples are GPU 1's, its CPU the script's --------------------------
load "0 0 100" "1 63 6300"
run_mlw -o json experiment submit -c hpc --env CUDA_VISIBLE_DEVICES=1 busy.py 4
expect_eq "the job completes" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
check "GPU 1 was sampled" test "$(series "$RID" sys/gpu1/util | wc -l)" -ge 2
expect_eq "… every sample its load" "$(series "$RID" sys/gpu1/util | sort -u)" "63"
expect_eq "… its memory" "$(series "$RID" sys/gpu1/mem_used | sort -u)" "6300"
expect_eq "GPU 0, not the job's, was not" "$(series "$RID" sys/gpu0/util | wc -l)" "0"
check "the script's CPU was sampled (busy: more than 50% of a core)" \
  python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; sys.exit(not (v and max(v) > 50))" \
  $(series "$RID" sys/cpu)
expect_eq "the record's system: GPU 1 at 63% mean" \
  "$(json_get "$(info "$RID")" '[(g["gpu"], round(g["util_mean"])) for g in d["system"]["gpus"]]')" "[(1, 63)]"
check "history info has the GPU's line" grep -q "GPU 1: 63% mean" <<<"$("$MLW" history info -r "$RID" 2>&1)"
check "the sampler ended with the job" wait_for 20 no_samplers "$GUSER"

# --- the same through NVML: the SIMULATED libnvidia-ml.so.1 on the GPU user's library path ------
touch "$SIM/nvml"
: >"$SIM/calls" && chmod 666 "$SIM/calls"
load "0 0 100" "1 41 4100"
run_mlw -o json experiment submit -c hpc --env CUDA_VISIBLE_DEVICES=1 busy.py 4
expect_eq "NVML: the job completes" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
expect_eq "NVML: every sample of GPU 1 its load" "$(series "$RID" sys/gpu1/util | sort -u)" "41"
expect_eq "NVML: … its memory" "$(series "$RID" sys/gpu1/mem_used | sort -u)" "4100"
expect_eq "NVML: no nvidia-smi streamed" "$(grep -c 'timestamp' "$SIM/calls")" "0"
check "NVML: the job's sampler opened NVML" grep -q '^nvml init$' "$SIM/calls"
check "NVML: the sampler ended with the job" wait_for 20 no_samplers "$GUSER"
rm -f "$SIM/nvml"

# --- a GPU the job never used: said once, in its record ----------------------------------------
load "0 0 100" "1 0 100"
run_mlw -o json experiment submit -c hpc --env CUDA_VISIBLE_DEVICES=0 busy.py 7
expect_eq "the job completes" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
check "the unused GPU is in its log" grep -q "GPU 0 has not been used for 0.05 min" ".mlw/runs/$RID/driver_log.txt"
check "… and in its record" grep -q "GPU 0 has not been used for 0.05 min" <<<"$("$MLW" history info -r "$RID" 2>&1)"

# --- a job of two nodes: each node's GPUs sampled there, the second's as sys/node1/… -----------
# (Both test nodes are this machine: each samples the simulated GPUs that --env names.)
sed -i 's/^nodes:.*/nodes: 2/' aml_config/hpc.compute
load "0 0 100" "1 63 6300"
run_mlw -o json experiment submit -c hpc --env CUDA_VISIBLE_DEVICES=0,1 busy.py 7
expect_eq "a two-node job completes" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
check "the second node sampled GPU 1" test "$(series "$RID" sys/node1/gpu1/util | wc -l)" -ge 2
expect_eq "… every sample its load" "$(series "$RID" sys/node1/gpu1/util | sort -u)" "63"
expect_eq "the record has each node's GPUs" \
  "$(json_get "$(info "$RID")" '[(g.get("node", 0), g["gpu"], round(g["util_mean"])) for g in d["system"]["gpus"]]')" \
  "[(0, 0, 0), (0, 1, 63), (1, 0, 0), (1, 1, 63)]"
check "history info names the second node's GPU" \
  grep -q "node 1, GPU 1: 63% mean" <<<"$("$MLW" history info -r "$RID" 2>&1)"
check "the second node's unused GPU is in the log, said as that node's" \
  grep -q "mlw: node 1: GPU 0 has not been used for 0.05 min (GPU 1 was)" ".mlw/runs/$RID/driver_log.txt"
check "… and in the record" \
  grep -q "node 1: GPU 0 has not been used for 0.05 min (GPU 1 was)" <<<"$(json_get "$(info "$RID")" 'd["problems"]')"
check "both nodes' samplers ended with the job" wait_for 20 no_samplers "$GUSER"
sed -i 's/^nodes:.*/nodes: 1/' aml_config/hpc.compute

# --- no GPU given: not sampled, nothing said ---------------------------------------------------
run_mlw -o json experiment submit -c hpc busy.py 2
expect_eq "a job without GPUs completes" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
expect_eq "… and has no samples" "$(sys_lines "$RID")" "0"
expect_eq "… nor a system summary" "$(json_get "$(info "$RID")" 'd.get("system") or {}')" "{}"
# A value that is no GPU list (Slurm's NoDevFiles) is not sampled either.
run_mlw -o json experiment submit -c hpc --env CUDA_VISIBLE_DEVICES=NoDevFiles busy.py 2
RID=$(json_get "$OUT" 'd["run_id"]')
expect_eq "CUDA_VISIBLE_DEVICES=NoDevFiles: no samples" "$(sys_lines "$RID")" "0"

# --- Grid Engine: a job the site gave GPU 2 --------------------------------------------------------
SUSER=$MLW_TEST_SGE_USER
"$MLW" -q computetarget attach sge -n cell -a "127.0.0.1:$MLW_TEST_SSH_PORT" -u "$SUSER" \
  --password-stdin <"$WORK/pw" >/dev/null
expect_eq "attach a Grid Engine target" "$?" 0
echo "gpuUnusedWarnMinutes: 0" >>aml_config/cell.compute
run_mlw computetarget doctor -n cell
check "doctor says where Grid Engine jobs are sampled" \
  grep -Eq '^GPU sampling +- +on the node that runs each job whose CUDA_VISIBLE_DEVICES the site' <<<"$OUT"
load "0 0 100" "1 0 100" "2 41 4100"
run_mlw -o json experiment submit -c cell --env CUDA_VISIBLE_DEVICES=2 \
  --env "PATH=$SIM:/usr/local/bin:/usr/bin:/bin" busy.py 4
expect_eq "the Grid Engine job completes" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
check "GPU 2 was sampled" test "$(series "$RID" sys/gpu2/util | wc -l)" -ge 2
expect_eq "… every sample its load" "$(series "$RID" sys/gpu2/util | sort -u)" "41"
expect_eq "… and no other GPU" "$(grep -o '"sys/gpu[0-9]*' ".mlw/runs/$RID/metrics.jsonl" | sort -u)" '"sys/gpu2'
expect_eq "the record's system: GPU 2 at 41% mean" \
  "$(json_get "$(info "$RID")" '[(g["gpu"], round(g["util_mean"])) for g in d["system"]["gpus"]]')" "[(2, 41)]"
check "the sampler ended with the job" wait_for 20 no_samplers "$SUSER"
run_mlw -o json experiment submit -c cell busy.py 1
RID=$(json_get "$OUT" 'd["run_id"]')
expect_eq "a Grid Engine job without GPUs has no samples" \
  "$(sys_lines "$RID")" "0"

finish
