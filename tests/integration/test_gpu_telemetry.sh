#!/usr/bin/env bash
# GPU telemetry (docs/gpus.md, "Is the run using its GPUs?"): each leased run's sampler, its
# record, idleGpu, `computetarget gpus` and the sampler's faults, through every kind that leases
# (local, docker, remotedocker, remote), on the SIMULATED NVIDIA host of tests/fixtures/servers.sh:
# tests/fixtures/nvidia-sim reports what the test writes in its `load` file (utilisation and
# memory per GPU) and streams it with -lms. It proves what mlw records of what nvidia-smi says,
# never that a GPU computes.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_GPU_DOCKER_HOST MLW_TEST_NVIDIA_SIM MLW_TEST_GPU_USER MLW_TEST_SSH_PORT \
  MLW_TEST_SSH_PASSWORD MLW_TEST_SSH_HOST_KEY MLW_TEST_IMAGE
echo "SIMULATION: every GPU in this suite is simulated (tests/fixtures/nvidia-sim); no GPU is used"

export PATH="$MLW_TEST_NVIDIA_SIM:$PATH" DOCKER_HOST=$MLW_TEST_GPU_DOCKER_HOST
export MLW_LEASE_DIR=/tmp/mlw-leases-telemetry.$$
shared_lease_folder "$MLW_LEASE_DIR"
sim_start 'rm -rf "$MLW_LEASE_DIR"'

# The script: busy on the CPU for ARG s (or until the file gate:PATH exists, bounded).
script() {
  cat >busy.py <<'PY'
import os, sys, time
arg = sys.argv[1] if len(sys.argv) > 1 else "3"
start = time.time()
if arg.startswith("gate:"):
    for _ in range(600):
        if os.path.exists(arg[5:]):
            break
        time.sleep(0.1)
else:
    while time.time() - start < float(arg):
        sum(range(20000))
print("BUSY done", flush=True)
PY
}

# project NAME KIND: a project with a target t of KIND, one leased GPU per run.
project() {
  new_project "$1"
  script
  attach_gpu_target "$2"
  echo "gpuUnusedWarnMinutes: 0" >>aml_config/t.compute
}

# no_leases: no run holds or waits for a GPU of target t's machine.
no_leases() {
  [ "$("$MLW" -o json experiment queue -c t 2>/dev/null |
    json_get "$(cat)" 'sum(len(q["running"]) + len(q["waiting"]) for q in d)')" = 0 ]
}
submit_async() { "$MLW" -o json experiment submit -a -c t "$@" 2>>"$WORK/submit.err" | json_get "$(cat)" 'd["run_id"]'; }
ended() { case "$(run_state "$1")" in Completed* | Failed* | Canceled* | Lost*) ;; *) return 1 ;; esac; }
info() { "$MLW" -o json history info -r "$1"; }
# series RUN NAME: the values of metric NAME in the run's metrics.jsonl, one per line.
series() { metric_values "$WORK/$PROJECT/.mlw/runs/$1/metrics.jsonl" "$2"; }
for kind in ${TELEMETRY_KINDS-local docker remotedocker remote}; do
  PROJECT=p-$kind
  project "$PROJECT" "$kind"
  # Every kind leases in the one shared folder: the last kind's runs have let go of their GPUs
  # (under load, a moment after their records ended) before this kind's first run takes GPU 0.
  check "$kind: no lease is left from before" wait_for 60 no_leases
  # --- the series: each GPU reports its own load; the run records exactly its GPU's -----------
  load "0 11 1100" "1 22 2200" "2 33 3300" "3 44 4400"
  : >"$SIM/calls" && chmod 666 "$SIM/calls"
  blocker=$(submit_async busy.py "gate:$WORK/open-$kind")
  check "$kind: a first run holds GPU 0" wait_for 60 run_is "$blocker" Running
  id=$(submit_async busy.py 4)
  check "$kind: the run ends (bounded)" wait_for 90 ended "$id"
  # (cancelled: a gate file under $WORK is out of sight of a container or the GPU user)
  "$MLW" -q experiment cancel -r "$blocker" >/dev/null 2>&1
  check "$kind: the first run ends" wait_for 60 ended "$blocker"
  expect_eq "$kind: Completed" "$(run_state "$id")" "Completed 0"
  json=$(info "$id")
  expect_eq "$kind: it leased GPU 1" "$(json_get "$json" 'd["gpus"]')" "[1]"
  expect_eq "$kind: its record sums up GPU 1, as the simulated GPU 1 reported it" \
    "$(json_get "$json" '[(g["gpu"], g["util_mean"], g["util_p95"], g["mem_peak_mib"], g["mem_total_mib"]) for g in d["system"]["gpus"]]')" \
    "[(1, 22.0, 22.0, 2200.0, 11441.0)]"
  expect_eq "$kind: every sample of GPU 1 is GPU 1's" "$(series "$id" sys/gpu1/util | sort -u)" "22"
  expect_eq "$kind: … its memory" "$(series "$id" sys/gpu1/mem_used | sort -u)" "2200"
  expect_eq "$kind: no other GPU's series" "$(grep -c '"sys/gpu[023]/' \
    "$WORK/$PROJECT/.mlw/runs/$id/metrics.jsonl")" "0"
  check "$kind: a sample a second (3 at least in 4 s)" \
    test "$(series "$id" sys/gpu1/util | wc -l)" -ge 3
  check "$kind: power and temperature" test -n "$(series "$id" sys/gpu1/power)$(series "$id" sys/gpu1/temp)"
  expect_eq "$kind: sys/gpu_util for history list" "$(json_get "$json" 'd["metrics"]["sys/gpu_util"]')" "22.0"
  check "$kind: the run's CPU (a busy loop: more than 5% of a core, whatever else runs)" \
    python3 -c "import sys; sys.exit(0 if $(json_get "$json" 'd["system"].get("cpu_mean", 0)') > 5 else 1)"
  check "$kind: its resident memory" \
    python3 -c "import sys; sys.exit(0 if $(json_get "$json" 'd["system"].get("rss_peak_mb", 0)') > 1 else 1)"
  # One nvidia-smi streams a run's samples: never one per sample (the first run's and this one's).
  expect_eq "$kind: one sampling nvidia-smi per run" "$(grep -c 'timestamp' "$SIM/calls")" "2"
  run_mlw history info -r "$id"
  expect_contains "$kind: history info shows the GPU's use" "$OUT" \
    "GPU 1: 22% mean, 22% p95, 2200 of 11441 MiB at most"
  run_mlw history list --where 'sys/gpu_util<20'
  expect_not_contains "$kind: --where sys/gpu_util<20 leaves it out" "$OUT" "$id"
  run_mlw history list --where 'sys/gpu_util>20'
  expect_contains "$kind: --where sys/gpu_util>20 lists it" "$OUT" "$id"

  # --- idle: warned after gpuUnusedWarnMinutes, stopped by idleGpu, its GPU handed on ---------
  load "0 0 0" "1 0 0" "2 0 0" "3 0 0"
  sed -i 's/^gpuUnusedWarnMinutes: .*/gpuUnusedWarnMinutes: 0.05/' aml_config/t.compute
  # 18 s of idleness: time enough, under the sanitizers on a loaded machine, to see the next run
  # queued behind the idle one before the policy stops it.
  printf 'idleGpu: {below: 5, minutes: 0.3, action: stop}\n' >>aml_config/t.compute
  expect_eq "$kind: computetarget show names the policy" \
    "$("$MLW" -o json computetarget show -n t | json_get "$(cat)" 'd["idle_gpu"]')" \
    "{'below': 5.0, 'minutes': 0.3, 'action': 'stop'}"
  idle=$(submit_async --gpus 4 busy.py 120)
  check "$kind: the idle run starts" wait_for 60 run_is "$idle" Running
  next=$(submit_async --gpus 4 busy.py 1)
  check "$kind: the next run waits for its GPUs" wait_for 30 run_is "$next" Queued
  check "$kind: the idle run is stopped (bounded)" wait_for 60 ended "$idle"
  json=$(info "$idle")
  expect_eq "$kind: … Failed" "$(json_get "$json" 'd["status"]')" "Failed"
  check "$kind: … with the exit code of SIGTERM (or SIGKILL 10 s later)" \
    grep -qE '^(143|137)$' <<<"$(json_get "$json" 'd["exit_code"]')"
  expect_contains "$kind: … the reason in its record" "$(json_get "$json" 'd["problems"]')" \
    "stopped by idleGpu: GPUs 0,1,2,3 below 5% for 0.3 min (idleGpu)"
  expect_contains "$kind: … the warning in its record" "$(json_get "$json" 'd["problems"]')" \
    "GPUs 0,1,2,3 have not been used for 0.05 min — is the script running on the CPU?"
  log=$("$MLW" history logs -r "$idle")
  expect_contains "$kind: … and in its log" "$log" \
    "mlw: GPUs 0,1,2,3 have not been used for 0.05 min — is the script running on the CPU?"
  expect_eq "$kind: … said once" "$(grep -c 'have not been used' <<<"$log")" "1"
  check "$kind: the queued run gets the GPUs and ends" wait_for 60 ended "$next"
  expect_eq "$kind: … Completed" "$(run_state "$next")" "Completed 0"
  sed -i '/^idleGpu/d; s/^gpuUnusedWarnMinutes: .*/gpuUnusedWarnMinutes: 0/' aml_config/t.compute
done

# --- a container given GPUs without a lease (nvidiaDocker, gpusPerRun all: the 2017 guide's flow) --
# The GPUs it samples are those Docker gives it: all, `device=` ones, or the first N of a count.
for kind in ${TELEMETRY_KINDS-local docker remotedocker remote}; do
  case $kind in docker | remotedocker) ;; *) continue ;; esac
  PROJECT=p-unleased-$kind
  new_project "$PROJECT"
  script
  attach_gpu_target "$kind"
  sed -i '/^gpusPerRun/d' aml_config/t.compute
  echo "gpuUnusedWarnMinutes: 0.05" >>aml_config/t.compute
  load "0 0 0" "1 0 0" "2 37 3700" "3 0 0"
  : >"$WORK/submit.err"
  id=$(submit_async --idle-gpu below=5,minutes=60 busy.py 1)
  expect_not_contains "unleased $kind: idleGpu watches its container's GPUs (no warning)" \
    "$(cat "$WORK/submit.err")" "it is not watched"
  check "unleased $kind: … the run ends" wait_for 90 ended "$id"
  for gpus in all device=1,3 2; do
    sed -i '/^gpus:/d' aml_config/t.compute
    echo "gpus: \"$gpus\"" >>aml_config/t.compute
    case $gpus in all) want="0 1 2 3" ;; device=*) want="1 3" ;; 2) want="0 1" ;; esac
    id=$(submit_async busy.py 8)
    check "unleased $kind, gpus $gpus: the run ends (bounded)" wait_for 90 ended "$id"
    expect_eq "unleased $kind, gpus $gpus: Completed" "$(run_state "$id")" "Completed 0"
    json=$(info "$id")
    expect_eq "unleased $kind, gpus $gpus: it sampled exactly the GPUs Docker gave it" \
      "$(json_get "$json" '" ".join(str(g["gpu"]) for g in d["system"]["gpus"])')" "$want"
    if [ "$gpus" = all ]; then
      expect_eq "unleased $kind: each GPU's own load (GPU 2 at 37%)" \
        "$(json_get "$json" '[(g["gpu"], g["util_mean"], g["mem_peak_mib"]) for g in d["system"]["gpus"]]')" \
        "[(0, 0.0, 0.0), (1, 0.0, 0.0), (2, 37.0, 3700.0), (3, 0.0, 0.0)]"
      expect_contains "unleased $kind: the GPUs it left unused are named beside the one it used" \
        "$(json_get "$json" 'd["problems"]')" \
        "GPUs 0,1,3 have not been used for 0.05 min (GPU 2 was) — does the script use every GPU it was given?"
      expect_contains "unleased $kind: … in its log too" "$("$MLW" history logs -r "$id")" \
        "mlw: GPUs 0,1,3 have not been used for 0.05 min (GPU 2 was)"
    fi
  done
done

# A process run without a lease is not sampled: idleGpu says it does not watch it.
new_project p-unwatched
script
"$MLW" -q computetarget attach local -n t >/dev/null
run_mlw experiment submit -c t --idle-gpu below=5 busy.py 0
expect_contains "idleGpu on a run that takes no GPU: not watched, said" "$ERR" \
  "this run is neither (set gpusPerRun in aml_config/t.compute, or submit --gpus N); it is not watched"

# --- computetarget gpus: two users' runs on one machine, a foreign process ------------------------
# (TELEMETRY_KINDS may have left out the kinds this part uses.)
for kind in local remote; do [ -d "$WORK/p-$kind" ] || project "p-$kind" "$kind"; done
load "0 50 5000" "1 0 1000" "2 0 0" "3 0 0"
echo 3 >"$SIM/compute-apps"
cd "$WORK/p-local" || exit 1
mine=$(submit_async busy.py "gate:$WORK/open-gpus")
check "gpus: root's local run starts" wait_for 60 run_is "$mine" Running
cd "$WORK/p-remote" || exit 1
theirs=$(submit_async busy.py "gate:/tmp/mlw-telemetry-open.$$")
check "gpus: the GPU user's remote run starts" wait_for 60 run_is "$theirs" Running
sleep 7 # the samplers write their last busy time every 5 samples
for where in local remote; do
  cd "$WORK/p-$where" || exit 1
  run_mlw -o json computetarget gpus -c t
  expect_eq "gpus from $where: exit 0" "$CODE" 0
  expect_eq "gpus from $where: the leases and users" \
    "$(json_get "$OUT" '[(g["index"], g["run_id"], g["target_user"], g["util"], g["mem_used_mib"]) for g in d["gpus"]]')" \
    "[(0, '$mine', 'root', 50, 5000), (1, '$theirs', '$MLW_TEST_GPU_USER', 0, 1000), (2, None, None, 0, 0), (3, None, None, 0, 0)]"
  expect_eq "gpus from $where: busy and idle" \
    "$(json_get "$OUT" '[d["gpus"][0]["idle_s"] == 0, d["gpus"][1]["idle_s"] >= 5, d["gpus"][2]["idle_s"]]')" \
    "[True, True, None]"
  expect_eq "gpus from $where: the foreign process" \
    "$(json_get "$OUT" '[(p["pid"], p["foreign"]) for p in d["gpus"][3]["processes"]]')" "[(4245, True)]"
done
# The dashboard: the same on its GPUs page (api/gpus), and the System section of a run's page.
cd "$WORK/p-local" || exit 1
"$MLW" history ui --port 0 >"$WORK/ui.out" 2>"$WORK/ui.err" &
STARTED_PIDS+=("$!")
for _ in $(seq 100); do [ -s "$WORK/ui.out" ] && break; sleep 0.1; done
URL=$(head -1 "$WORK/ui.out")
BASE=${URL%%/?token=*}
PORT=${BASE#http://*:}
PORT=${PORT%%/*}
json=$(curl -s --max-time 30 -H "Cookie: mlw_token_$PORT=${URL##*token=}" "$BASE/api/gpus")
expect_eq "dashboard: api/gpus has the same leases" \
  "$(json_get "$json" '[(t["target"], [(g["index"], g["run_id"]) for g in t["gpus"]][:2]) for t in d]')" \
  "[('t', [(0, '$mine'), (1, '$theirs')])]"
sampled=$(cd "$WORK/p-local" && "$MLW" -o json history list --where 'sys/gpu_util>20' |
  json_get "$(cat)" '[r["run_id"] for r in d if r.get("gpus") == [1]][0]')
BROWSER=$(cd "$MLW_SOURCE_DIR/tests/integration" &&
  timeout 180 node ui_gpus_browser.cjs "$URL" "$sampled" 1 "$mine" 2>&1)
echo "$BROWSER"
while IFS= read -r line; do
  case "$line" in
    "ok "*) pass ;;
    "not ok "*) fail "dashboard: ${line#not ok }" ;;
  esac
done <<<"$BROWSER"
check "dashboard: the browser checks ran" grep -q '^ok ' <<<"$BROWSER"
watched=$(timeout 5 "$MLW" computetarget gpus -c t --watch 2>&1)
check "gpus --watch: shown again every 2 s until stopped" test "$(grep -c '^GPU  NAME' <<<"$watched")" -ge 2
run_mlw computetarget gpus -c t
expect_contains "gpus: a table naming the GPU user's run as another laptop's" "$OUT" "$theirs (root@"
expect_contains "gpus: … with its user on the machine" "$(grep "$theirs" <<<"$OUT")" " $MLW_TEST_GPU_USER "
expect_contains "gpus: … the foreign process" "$OUT" "foreign: python3 (pid 4245"
touch "$WORK/open-gpus" "/tmp/mlw-telemetry-open.$$"
check "gpus: both runs end" wait_for 60 ended "$mine"
cd "$WORK/p-remote" || exit 1
check "gpus: … both" wait_for 60 ended "$theirs"
rm -f "/tmp/mlw-telemetry-open.$$" "$SIM/compute-apps"

# --- faults: a hung, a lying, a dying nvidia-smi, a lost GPU, a killed sampler --------------------
cd "$WORK/p-local" || exit 1
PROJECT=p-local
load "0 30 300" "1 30 300" "2 30 300" "3 30 300"
fault_run() { # FAULT SECONDS -> the run's id, ended
  echo "$1" >"$SIM/fault"
  local id
  id=$(submit_async busy.py "$2")
  wait_for 90 ended "$id"
  rm -f "$SIM/fault"
  echo "$id"
}
id=$(fault_run hang 24)
expect_eq "hang: the run goes on" "$(run_state "$id")" "Completed 0"
expect_contains "hang: the gap is recorded" "$(json_get "$(info "$id")" 'd["problems"]')" \
  "GPU sampling: nvidia-smi gave no sample for 10 s at"
id=$(fault_run garbage 13)
expect_eq "garbage: the run goes on" "$(run_state "$id")" "Completed 0"
expect_contains "garbage: said" "$(json_get "$(info "$id")" 'd["problems"]')" \
  'GPU sampling: nvidia-smi printed "Unable to determine the device handle'
id=$(fault_run die 6)
expect_eq "die: the run goes on" "$(run_state "$id")" "Completed 0"
expect_contains "die: said" "$(json_get "$(info "$id")" 'd["problems"]')" \
  "GPU sampling: nvidia-smi ended (exit 15)"
id=$(fault_run lost:0 4)
expect_eq "a lost GPU: the run goes on" "$(run_state "$id")" "Completed 0"
expect_contains "a lost GPU: said in the log" "$("$MLW" history logs -r "$id")" \
  "mlw: warning: GPU 0 stopped answering at"
expect_contains "a lost GPU: … with nvidia-smi's words" "$("$MLW" history logs -r "$id")" "[GPU is lost]"
id=$(submit_async busy.py 6)
check "killed sampler: the run starts" wait_for 60 test -s "$WORK/p-local/.mlw/runs/$id/gpu.pid"
sleep 1
kill -9 -- "-$(head -n 1 "$WORK/p-local/.mlw/runs/$id/gpu.pid")"
check "killed sampler: the run ends" wait_for 60 ended "$id"
expect_eq "killed sampler: the run goes on" "$(run_state "$id")" "Completed 0"
expect_contains "killed sampler: the record says sampling stopped" \
  "$(json_get "$(info "$id")" 'd["problems"]')" "GPU sampling stopped: its sampler was killed"
# A remote run's monitor and script killed with -9 (its process group): its sampler, left alone
# in a session of its own, ends by itself once the run's processes are gone.
if [[ " ${TELEMETRY_KINDS-remote} " == *" remote "* ]]; then
  cd "$WORK/p-remote" || exit 1
  PROJECT=p-remote
  id=$(submit_async busy.py 60)
  check "orphaned sampler: the run runs" wait_for 60 run_is "$id" Running
  # samplers_of RUN: the GPU user's samplers whose folder is the run's.
  samplers_of() {
    local p n=0
    for p in $(pgrep -u "$MLW_TEST_GPU_USER" -f mlw-sample); do
      [[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" == */"$1" ]] && n=$((n + 1))
    done
    echo "$n"
  }
  has_samplers() { [ "$(samplers_of "$1")" -gt 0 ]; }
  no_samplers() { [ "$(samplers_of "$1")" = 0 ]; }
  check "orphaned sampler: a sampler runs for it" wait_for 30 has_samplers "$id"
  group=$(json_get "$(cat ".mlw/runs/$id/run.json")" 'd["process_group"]')
  kill -9 -- "-$(ps -o pgid= -p "$group" | tr -d ' ')"
  check "orphaned sampler: it ends once the run's processes are gone" \
    wait_for 20 no_samplers "$id"
  check "orphaned sampler: the run ends" wait_for 120 ended "$id"
  cd "$WORK/p-local" || exit 1
  PROJECT=p-local
fi

# --- NVML: the samples read through libnvidia-ml.so.1 where mlw's NVML reader runs ------------------
# SIMULATED: tests/fixtures/nvidia-sim/libnvidia-ml.c answers from the same `load` file as the
# simulated nvidia-smi once $SIM/nvml exists (the GPU user's logins have it on LD_LIBRARY_PATH).
export LD_LIBRARY_PATH=$SIM/lib
touch "$SIM/nvml"
gpu_home=$(getent passwd "$MLW_TEST_GPU_USER" | cut -d: -f6)
for kind in ${TELEMETRY_KINDS-local docker remotedocker remote}; do
  cd "$WORK/p-$kind" || exit 1
  PROJECT=p-$kind
  load "0 11 1100" "1 22 2200" "2 33 3300" "3 44 4400"
  : >"$SIM/calls" && chmod 666 "$SIM/calls"
  id=$(submit_async busy.py 4)
  check "nvml $kind: the run ends (bounded)" wait_for 90 ended "$id"
  expect_eq "nvml $kind: Completed" "$(run_state "$id")" "Completed 0"
  json=$(info "$id")
  g=$(json_get "$json" 'd["gpus"][0]')
  expect_eq "nvml $kind: its record sums up its GPU as NVML reported it" \
    "$(json_get "$json" '[(g["gpu"], g["util_mean"], g["mem_peak_mib"], g["mem_total_mib"]) for g in d["system"]["gpus"]]')" \
    "[($g, $(((g + 1) * 11)).0, $(((g + 1) * 1100)).0, 11441.0)]"
  expect_eq "nvml $kind: every sample is its GPU's" "$(series "$id" "sys/gpu$g/util" | sort -u)" "$(((g + 1) * 11))"
  expect_eq "nvml $kind: … its power, as NVML's milliwatts in W" \
    "$(series "$id" "sys/gpu$g/power" | sort -u)" "$(python3 -c "print(f'{26 + $(((g + 1) * 11)) * 1.2:.4g}')")"
  check "nvml $kind: a sample a second (3 at least in 4 s)" test "$(series "$id" "sys/gpu$g/util" | wc -l)" -ge 3
  expect_eq "nvml $kind: no nvidia-smi streamed" "$(grep -c 'timestamp' "$SIM/calls")" "0"
  check "nvml $kind: NVML was opened (the probe, then the stream)" \
    test "$(grep -c '^nvml init$' "$SIM/calls")" -ge 2
done
home_of() { case $1 in local | docker) echo "$HOME" ;; *) echo "$gpu_home" ;; esac; }
for kind in ${TELEMETRY_KINDS-local remote}; do
  case $kind in local | remote) ;; *) continue ;; esac
  cd "$WORK/p-$kind" || exit 1
  PROJECT=p-$kind
  readers=$(ls "$(home_of "$kind")"/.mlw/bin/mlw-nvml-reader-* 2>/dev/null)
  expect_eq "nvml $kind: one NVML reader kept on the machine" "$(wc -l <<<"$readers")" "1"
  load "0 30 300" "1 30 300" "2 30 300" "3 30 300"
  id=$(fault_run lost:0 4)
  expect_eq "nvml $kind, a lost GPU: the run goes on" "$(run_state "$id")" "Completed 0"
  expect_contains "nvml $kind, a lost GPU: said with NVML's words" "$("$MLW" history logs -r "$id")" \
    "(NVML: [GPU is lost]; an Xid error?)"
  id=$(fault_run hang 24)
  expect_eq "nvml $kind, NVML hangs: the run goes on" "$(run_state "$id")" "Completed 0"
  expect_contains "nvml $kind, NVML hangs: the gap is recorded" \
    "$(json_get "$(info "$id")" 'd["problems"]')" "GPU sampling: NVML gave no sample for 10 s at"
  # A reader that cannot run here (another architecture: here, a file that is no program): the
  # sampler reads nvidia-smi instead.
  cp "$readers" "$WORK/reader.good"
  printf 'not a program\n' >"$readers"
  : >"$SIM/calls"
  id=$(submit_async busy.py 4)
  check "nvml $kind, a reader that cannot run: the run ends" wait_for 90 ended "$id"
  g=$(json_get "$(info "$id")" 'd["gpus"][0]')
  expect_eq "nvml $kind, a reader that cannot run: sampled through nvidia-smi" \
    "$(series "$id" "sys/gpu$g/util" | sort -u) $(grep -c 'timestamp' "$SIM/calls")" "30 1"
  cat "$WORK/reader.good" >"$readers"
done
rm -f "$SIM/nvml"
: >"$SIM/calls"
id=$(submit_async busy.py 4)
check "no NVML (the driver's library does not initialise): the run ends" wait_for 90 ended "$id"
expect_eq "no NVML: sampled through one nvidia-smi stream" \
  "$(series "$id" "sys/gpu$(json_get "$(info "$id")" 'd["gpus"][0]')/util" | sort -u) $(grep -c 'timestamp' "$SIM/calls")" "30 1"
unset LD_LIBRARY_PATH
cd "$WORK/p-local" || exit 1
PROJECT=p-local

# --- a GPU the run's own process uses (nvidia-smi lists it there) is not said to be unused -------
cat >own.py <<'PY'
import os, time
# The simulated nvidia-smi lists this process on the run's GPU, as a real one lists a CUDA process.
with open(os.environ["MLW_SIM"] + "/compute-apps", "a") as f:
    f.write(f"{os.environ['CUDA_VISIBLE_DEVICES']} {os.getpid()} python3\n")
time.sleep(14)
PY
load "0 0 0" "1 0 0" "2 0 0" "3 0 0"
: >"$SIM/compute-apps"
# 9 s: a loaded machine may take seconds to start Python, before own.py lists its process.
sed -i 's/^gpuUnusedWarnMinutes: .*/gpuUnusedWarnMinutes: 0.15/' aml_config/t.compute
id=$(submit_async -e "MLW_SIM=$SIM" own.py)
check "own process: the run ends" wait_for 60 ended "$id"
expect_not_contains "own process: its GPU is not said to be unused" "$("$MLW" history logs -r "$id")" \
  "has not been used"
id=$(submit_async busy.py 12)
check "no process: the run ends" wait_for 60 ended "$id"
check "no process: … where it has none, it is" grep -Eq \
  '^mlw: GPU [0-3] has not been used for 0.15 min — is the script running on the CPU\?$' \
  <<<"$("$MLW" history logs -r "$id")"
sed -i 's/^gpuUnusedWarnMinutes: .*/gpuUnusedWarnMinutes: 0/' aml_config/t.compute
rm -f "$SIM/compute-apps"

# --- doctor: sampling said, never an error ----------------------------------------------------------
run_mlw computetarget doctor -n t
check "doctor: GPU sampling every second" grep -Eq '^GPU sampling +ok +each run.s GPUs, CPU and memory every 1 s' <<<"$OUT"
PATH=${PATH#"$SIM:"} run_mlw computetarget doctor -n t
check "doctor without nvidia-smi: sampling off, not a failure" \
  grep -Eq '^GPU sampling +- +off: nvidia-smi lists no GPU' <<<"$OUT"

# --- bad input: one line each, at its place ------------------------------------------------------
cp aml_config/t.compute "$WORK/t.compute.good"
for bad in 0 61 abc; do
  echo "gpuSampleSeconds: $bad" >>aml_config/t.compute
  expect_error "gpuSampleSeconds: $bad" 125 "gpuSampleSeconds must be" experiment submit -c t busy.py 1
  cp "$WORK/t.compute.good" aml_config/t.compute
done
sed -i 's/^gpuUnusedWarnMinutes: .*/gpuUnusedWarnMinutes: -1/' aml_config/t.compute
expect_error "gpuUnusedWarnMinutes: -1" 125 "gpuUnusedWarnMinutes must be minutes" \
  experiment submit -c t busy.py 1
cp "$WORK/t.compute.good" aml_config/t.compute
for bad in "{below: -1}" "{below: 500}" "{minutes: 99999}" "{minutes: 0}" "{action: kill}" \
  "{bellow: 5}" "5"; do
  echo "idleGpu: $bad" >>aml_config/t.compute
  expect_error "idleGpu: $bad" 125 "t.compute:" experiment submit -c t busy.py 1
  cp "$WORK/t.compute.good" aml_config/t.compute
done
expect_error "--idle-gpu below=abc" 125 "--idle-gpu: below must be" \
  experiment submit -c t --idle-gpu below=abc busy.py 1
expect_error "--idle-gpu 5" 125 "expected KEY=VALUE items" experiment submit -c t --idle-gpu 5 busy.py 1
run_mlw -o json history list
expect_eq "bad input recorded nothing" "$(json_get "$OUT" 'len([r for r in d if r["status"] == "Failed" and not r.get("gpus")])')" "0"

finish
