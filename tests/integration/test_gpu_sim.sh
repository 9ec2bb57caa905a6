#!/usr/bin/env bash
# The 2017 guide "How to use GPU in Azure Machine Learning", followed to the letter, on a
# SIMULATED NVIDIA host: tests/fixtures/nvidia-sim makes a second test Docker engine accept
# --gpus (the nvidia runtime and a fake nvidia-container-runtime-hook) and puts a fake nvidia-smi,
# reporting four "Tesla K80", into GPU containers and on the GPU test user's PATH. It proves what
# mlw asks of Docker and what a run sees, never that a GPU computes: test_gpu.sh does that where
# a real GPU is lent.
source "$(dirname "$0")/lib.sh"
require_env MLW_TEST_GPU_DOCKER_HOST MLW_TEST_NVIDIA_SIM MLW_TEST_GPU_USER MLW_TEST_SSH_PORT \
  MLW_TEST_SSH_PASSWORD MLW_TEST_SSH_HOST_KEY MLW_TEST_IMAGE DOCKER_HOST
echo "SIMULATION: every GPU in this suite is simulated (tests/fixtures/nvidia-sim); no GPU is used"

PORT=$MLW_TEST_SSH_PORT
PW=$MLW_TEST_SSH_PASSWORD
SIM=$MLW_TEST_NVIDIA_SIM
PLAIN_ENGINE=$DOCKER_HOST
GPU_ENGINE=$MLW_TEST_GPU_DOCKER_HOST
GPU_HOME=$(getent passwd "$MLW_TEST_GPU_USER" | cut -d: -f6)
rm -rf "$GPU_HOME/.mlw" "$GPU_HOME/.ssh"
export HOME="$WORK/home"
mkdir -p "$HOME/.ssh"
# The host key is known (as after a first ssh to the machine), so the guide's commands run as
# they are written.
printf '[127.0.0.1]:%s %s\n' "$PORT" "$(cut -d' ' -f1,2 "$MLW_TEST_SSH_HOST_KEY")" >"$HOME/.ssh/known_hosts"
ADDRESS="127.0.0.1:$PORT"
containers_left() { DOCKER_HOST=$GPU_ENGINE docker ps -aq | wc -l; }
no_containers() { [ "$(containers_left)" -eq 0 ]; }
DOCKER_HOST=$GPU_ENGINE docker ps -aq | xargs -r env DOCKER_HOST="$GPU_ENGINE" docker rm -f >/dev/null
# uuids TEXT: the last digit of each GPU UUID in nvidia-smi -L's lines (which physical GPU it is).
uuids() { grep -o 'UUID: GPU-[0-9a-f-]*' <<<"$1" | sed 's/.*\(.\)$/\1/' | tr '\n' ' '; }

new_project guide
make_wheel gpuprobe "NAME = 'gpuprobe from a wheel'"
cat >gpu.py <<'PY'
import os
import subprocess
share_dir = os.environ["AZUREML_NATIVE_SHARE_DIRECTORY"]
with open(share_dir + "model.pkl", "w") as f:  # as 2017 samples build the path
    f.write("weights")
try:
    seen = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip()
except FileNotFoundError:
    seen = ""
print("script sees:", " | ".join(seen.splitlines()) or "no GPUs")
try:
    import gpuprobe
    print("wheel:", gpuprobe.NAME)
except ImportError:
    print("wheel: missing")
from azureml.logging import get_azureml_logger
get_azureml_logger().log("gpus", len(seen.splitlines()))
PY

# --- attach, both forms of the guide, verbatim ----------------------------------------------
run_mlw computetarget attach remotedocker --name "my_dsvm" --address "$ADDRESS" --username "$MLW_TEST_GPU_USER" --password "$PW"
expect_eq "attach as the guide writes it" "$CODE" 0
expect_contains "the warning names the option typed" "$ERR" "given with --password shows"
run_mlw computetarget attach --name "my_dsvm_de" --address "$ADDRESS" --username "$MLW_TEST_GPU_USER" --password "$PW" --type remotedocker
expect_eq "attach in the German edition's (pre-December-2017) form" "$CODE" 0
expect_eq "both forms write the same compute file" \
  "$(sed 's/my_dsvm_de/my_dsvm/g; /^password:/d' aml_config/my_dsvm_de.compute)" \
  "$(sed '/^password:/d' aml_config/my_dsvm.compute)"
expect_error "the old form needs --type" 2 "attach needs a target type" computetarget attach --name x --address "$ADDRESS"
expect_error "the old form checks the type" 2 'did you mean "remotedocker"' computetarget attach --name x --address "$ADDRESS" --type remotedoker
expect_error "options of another type are refused in the new form" 2 "--nodes is not an option of attach remotedocker" computetarget attach remotedocker -n x -a "$ADDRESS" --nodes 2

# A failing attach names what was tried, and no command for a target it never wrote.
printf 'wrong password\n' | "$MLW" computetarget attach remotedocker -n nope -a "$ADDRESS" -u "$MLW_TEST_GPU_USER" --password-stdin >/dev/null 2>"$WORK/e"
expect_eq "attach with a wrong password fails" "$?" 1
expect_contains "attach names the password it was given" "$(cat "$WORK/e")" "tried: the password given"
expect_not_contains "attach does not call it stored" "$(cat "$WORK/e")" "stored password"
expect_not_contains "attach suggests no doctor for a target it never wrote" "$(cat "$WORK/e")" "doctor -n nope"
printf 'pw\n' | "$MLW" computetarget attach remotedocker -n nope -a 127.0.0.1:1 -u x --password-stdin >/dev/null 2>"$WORK/e"
expect_not_contains "attach to a closed port: no doctor either" "$(cat "$WORK/e")" "doctor -n nope"
check "failed attaches wrote nothing" test ! -e aml_config/nope.compute

# --- the guide's edits ------------------------------------------------------------------------
sed -i "s|^baseDockerImage:.*|baseDockerImage: \"$MLW_TEST_IMAGE\"|" aml_config/my_dsvm.compute
sed -i '/^baseDockerImage:/a nvidiaDocker: true' aml_config/my_dsvm.compute
sed -i 's|^Framework:.*|"Framework": "Python"|' aml_config/my_dsvm.runconfig
cat >aml_config/conda_dependencies.yml <<'YML'
name: project_environment
dependencies:
  - python=3.11
  - pip:
    - --no-index
    - ./wheels/gpuprobe-1.0-py3-none-any.whl
YML
run_mlw -o json computetarget show -n my_dsvm
expect_eq "the guide's nvidiaDocker line holds" "$(json_get "$OUT" 'd["nvidia_docker"]')" "True"

run_mlw computetarget doctor -n my_dsvm
expect_eq "doctor passes on the simulated GPU host" "$CODE" 0
expect_contains "doctor: NVIDIA runtime" "$OUT" "the daemon has the nvidia runtime"
expect_contains "doctor: each GPU" "$OUT" "GPU 3"
expect_contains "doctor: name, memory, driver" "$OUT" "name: Tesla K80, total memory: 11441 MiB (11.17 GiB), driver: 470.57.02"
expect_contains "doctor: the guide's runs are sampled, with no lease" "$OUT" \
  "each run's GPUs (those its container is given: gpus all, no lease), CPU and memory every 1 s"

run_mlw experiment submit -c my_dsvm gpu.py
expect_eq "the guide's submit" "$CODE" 0
expect_contains "the run header lists the GPUs the run sees" "$OUT" "mlw: GPUs seen by this run:"
expect_contains "header: the fourth GPU" "$OUT" "mlw:   GPU 3, Tesla K80, 11441 MiB"
expect_eq "the script sees all four (gpus: all)" "$(uuids "$OUT")" "0 1 2 3 "
expect_contains "the pip: section was built into the environment" "$OUT" "wheel: gpuprobe from a wheel"
check "the share keeps the 2017 trailing slash, per project and target" \
  test -f "$GPU_HOME/.mlw/share/guide/my_dsvm/model.pkl"
check "no file lands beside the share" test ! -e "$GPU_HOME/.mlw/sharemodel.pkl"

check "mlw wrote gpus: all" grep -q '^gpus: "all"$' aml_config/my_dsvm.compute
sed -i 's|^gpus:.*|gpus: "device=1,3"|' aml_config/my_dsvm.compute
run_mlw experiment submit -c my_dsvm gpu.py
expect_eq "remotedocker device=1,3: the script sees GPUs 1 and 3" "$(uuids "$OUT")" "1 3 "
sed -i 's|^gpus:.*|gpus: "2"|' aml_config/my_dsvm.compute
run_mlw experiment submit -c my_dsvm gpu.py
expect_eq "remotedocker gpus 2: the script sees two" "$(uuids "$OUT")" "0 1 "

# --- the local engine: the Engine API path and the docker CLI path (dockerRunArgs) -------------
export DOCKER_HOST=$GPU_ENGINE
"$MLW" -q computetarget attach docker -n gpu --base-image "$MLW_TEST_IMAGE" --nvidia-docker >/dev/null
for gpus in all 2 device=1,3; do
  case $gpus in all) want="0 1 2 3 " ;; 2) want="0 1 " ;; *) want="1 3 " ;; esac
  for path in engine-api docker-cli; do
    args='[]'
    [ $path = docker-cli ] && args='["--shm-size=64m"]'
    sed -i "s|^gpus:.*|gpus: \"$gpus\"|; s|^dockerRunArgs:.*|dockerRunArgs: $args|" aml_config/gpu.compute
    run_mlw experiment submit -c gpu gpu.py
    expect_eq "docker target, $path, gpus $gpus: exit code" "$CODE" 0
    expect_eq "docker target, $path, gpus $gpus: the GPUs the script sees" "$(uuids "$OUT")" "$want"
  done
done
# (the monitor removes a CLI run's container in the background: give it a few seconds)
check "no container is left on the engine" wait_for 15 no_containers

# The engines run in network namespaces of their own: an image that is not local fails at once.
START=$(date +%s)
for engine in "$GPU_ENGINE" "$PLAIN_ENGINE"; do
  check "no registry is reached from $engine" bash -c "! DOCKER_HOST=$engine timeout 60 docker pull python:3.11-slim >/dev/null 2>&1"
done
check "the pulls failed at once" test $(($(date +%s) - START)) -lt 30

# --- the engine without the NVIDIA runtime: a clear error, or the nvidia-docker wrapper ---------
export DOCKER_HOST=$PLAIN_ENGINE
sed -i 's|^gpus:.*|gpus: "all"|; s|^dockerRunArgs:.*|dockerRunArgs: []|' aml_config/gpu.compute
run_mlw experiment submit -c gpu gpu.py
expect_eq "no NVIDIA runtime: exit 125" "$CODE" 125
expect_contains "no NVIDIA runtime: says what to install" "$ERR" "has no NVIDIA runtime and there is no nvidia-docker; install nvidia-container-toolkit"
run_mlw experiment prepare -c gpu
expect_eq "prepare without the NVIDIA runtime exits 1 (submit's 125 is submit's alone)" "$CODE" 1
expect_contains "prepare without the NVIDIA runtime says the same" "$ERR" "has no NVIDIA runtime"
PATH="$SIM:$PATH" run_mlw experiment submit -c gpu gpu.py
expect_eq "the nvidia-docker wrapper: exit 0" "$CODE" 0
expect_eq "the nvidia-docker wrapper: the script sees the GPUs" "$(uuids "$OUT")" "0 1 2 3 "
expect_contains "the nvidia-docker wrapper: the header too" "$OUT" "mlw:   GPU 0, Tesla K80"
export DOCKER_HOST=$GPU_ENGINE

# --- local and remote targets see the machine's GPUs ----------------------------------------
PATH="$SIM:$PATH" run_mlw computetarget doctor -n local
expect_contains "doctor -n local names the GPUs" "$OUT" "name: Tesla K80"
PATH="$SIM:$PATH" run_mlw experiment submit -c local gpu.py
expect_eq "a local run sees the machine's GPUs" "$(uuids "$OUT")" "0 1 2 3 "
"$MLW" -q computetarget attach remote -n box -a "$ADDRESS" -u "$MLW_TEST_GPU_USER" --password-stdin <<<"$PW" >/dev/null
run_mlw computetarget doctor -n box
expect_contains "doctor on a remote target names the GPUs" "$OUT" "GPU 0"
run_mlw experiment submit -c box gpu.py
expect_eq "a remote run sees the machine's GPUs" "$(uuids "$OUT")" "0 1 2 3 "

# --- the guide's conda file on an image without conda ---------------------------------------
cp aml_config/conda_dependencies.yml "$WORK/good.yml"
cat >aml_config/conda_dependencies.yml <<'YML'
name: project_environment
dependencies:
  - python=3.5.2
  - tensorflow-gpu
YML
run_mlw experiment submit -c my_dsvm gpu.py
expect_eq "conda packages without conda: exit 125" "$CODE" 125
expect_contains "the error names the packages and the fix" "$ERR" "cannot be installed: tensorflow-gpu; use a base image with conda"
expect_not_contains "no Completed run on the wrong python" "$OUT$ERR" "Completed"
expect_contains "the summary says the script never started (stderr)" "$ERR" "before the script started"
expect_eq "stdout holds only the run id" "$(grep -cv '^RunId: ' <<<"$OUT")" 0
RID=$("$MLW" -o json history last | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
run_mlw -o json history info -r "$RID"
expect_contains "the run's problems say it" "$(json_get "$OUT" 'd["problems"]')" "tensorflow-gpu"
run_mlw history logs -r "$RID"
expect_contains "history logs shows the build log" "$OUT" "mlw-error[125]"
expect_eq "the failed build left no container" "$(containers_left)" 0
sed -i '/tensorflow-gpu/d' aml_config/conda_dependencies.yml
run_mlw experiment submit -c my_dsvm gpu.py
expect_eq "a python pin the image does not have: exit 125" "$CODE" 125
expect_contains "the python pin is not dropped in silence" "$ERR" "asks for python=3.5.2"
run_mlw experiment prepare -c my_dsvm
expect_eq "prepare fails with 1 (cli.md)" "$CODE" 1
expect_contains "prepare says why" "$ERR" "asks for python=3.5.2"
cp "$WORK/good.yml" aml_config/conda_dependencies.yml

# --- no Framework line: Workbench's default PySpark, explained before the run starts ---------
sed -i '/^"Framework"/d' aml_config/my_dsvm.runconfig
run_mlw experiment submit -c my_dsvm gpu.py
expect_eq "PySpark without spark-submit: exit 127" "$CODE" 127
expect_contains "PySpark: explained as on the local target" "$ERR" "Framework is PySpark (Workbench's default when a .runconfig has no Framework line) but the image $MLW_TEST_IMAGE has no spark-submit; set Framework: Python in aml_config/my_dsvm.runconfig"
expect_not_contains "PySpark: not tini's message" "$OUT$ERR" "exec spark-submit failed"
"$MLW" -q computetarget attach local -n lp >/dev/null
sed -i '/^Framework:/d' aml_config/lp.runconfig aml_config/box.runconfig
expect_error "PySpark on the local target: the same words" 127 "Framework is PySpark (Workbench's default" \
  experiment submit -c lp gpu.py
run_mlw experiment submit -c box gpu.py
expect_eq "PySpark on a remote target: exit 127" "$CODE" 127
expect_contains "PySpark on a remote target: the same words" "$OUT" "mlw: error: Framework is PySpark (Workbench's default"
finish
