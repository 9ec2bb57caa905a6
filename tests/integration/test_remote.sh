#!/usr/bin/env bash
# Docker and remote machines over SSH, against the real servers of tests/fixtures/servers.sh
# (dockerd without a bridge, the debootstrap image mlw-test/python:3.11, a loopback sshd with
# the user mlwtest in the docker group): host keys, logins, -k, doctor, shipping, environments
# (a wheel installed with pip --no-index), runs, exit codes, OOM, hostile arguments, malicious
# outputs, the NVIDIA error, cancel, a connection killed mid-run and one killed mid-upload.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_IMAGE DOCKER_HOST
via_link
export HOME="$WORK/home"
mkdir -p "$HOME"
PORT=$MLW_TEST_SSH_PORT
ADDR="127.0.0.1:$PORT"
USER_HOME=$(getent passwd mlwtest | cut -d: -f6)
export MLW_RECONNECT_TIMEOUT=60
# A clean slate on the target: no keys or store left by an earlier suite.
rm -rf "$USER_HOME/.mlw" "$USER_HOME/.ssh"
expect_eq "the servers' env file (the test users' password) is root's alone" \
  "$(stat -c %U:%a "$MLW_TEST_SERVERS/env")" "root:600"

new_project rproj
sed -i "s#^baseDockerImage:.*#baseDockerImage: \"$MLW_TEST_IMAGE\"#" aml_config/docker.compute

# --- host keys and logins -------------------------------------------------------------------
FPR=$(ssh-keygen -lf "$MLW_TEST_SSH_HOST_KEY" | awk '{print $2}')
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
run_mlw computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin \
  --base-image "$MLW_TEST_IMAGE" <"$WORK/pw"
"$MLW" computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin \
  --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "unknown host key refused without a terminal" "$?" 1
expect_contains "refusal shows the fingerprint" "$(cat "$WORK/e")" "unknown host key $FPR"
expect_contains "refusal says how to accept" "$(cat "$WORK/e")" "--accept-host-key"
check "nothing written after a refused host key" test ! -e aml_config/rd.compute

"$MLW" computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin \
  --accept-host-key --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach with --accept-host-key and a password" "$?" 0
expect_contains "host key recorded" "$(cat "$HOME/.ssh/known_hosts")" "[127.0.0.1]:$PORT ssh-ed25519"
expect_eq "login by password: the password is kept in the secret store" \
  "$(grep '^password ' "$WORK/o" | tr -s ' ')" "password stored in $XDG_CONFIG_HOME/mlw/secrets.json"
check "no password in the project" bash -c "! grep -rq -- \"$MLW_TEST_SSH_PASSWORD\" ."
check "password in the secret store" grep -q -- "$MLW_TEST_SSH_PASSWORD" "$XDG_CONFIG_HOME/mlw/secrets.json"

# A stored password goes only to the endpoint it was given for (issue 45): not to the same user
# and host on another port, where a second sshd of the same users (and host key) would take it.
Q=$(free_port)
sed "s/^Port .*/Port $Q/; s#^PidFile .*#PidFile $WORK/sshd2.pid#" "$MLW_TEST_SERVERS/sshd_config" >"$WORK/sshd2_config"
/usr/sbin/sshd -f "$WORK/sshd2_config" -E "$WORK/sshd2.log"
check "a second sshd on port $Q" wait_for 5 test -s "$WORK/sshd2.pid"
printf '[127.0.0.1]:%s %s\n' "$Q" "$(cut -d' ' -f1,2 "$MLW_TEST_SSH_HOST_KEY")" >>"$HOME/.ssh/known_hosts"
sed "s/^address: .*/address: \"127.0.0.1:$Q\"/" aml_config/rd.compute >aml_config/rdq.compute
check "… the copied target names the same stored password" grep -q '^password: "MlwSecret=' aml_config/rdq.compute
run_mlw computetarget doctor -n rdq
check "the password is not sent to another port (doctor fails)" test "$CODE" -ne 0
expect_contains "… saying why" "$OUT$ERR" "it is not sent there"
check "… and the second sshd heard no password" bash -c "! grep -q 'password for' '$WORK/sshd2.log'"
kill "$(cat "$WORK/sshd2.pid")"
rm -f aml_config/rdq.compute

"$MLW" computetarget attach remotedocker -n rdk -a "$ADDR" -u mlwtest --password-stdin -k \
  --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach -k" "$?" 0
KEY=$(grep '^privateKeyFile' aml_config/rdk.compute | sed 's/.*: "\(.*\)"/\1/')
KEY_PATH=${KEY/#\~/$HOME}
expect_eq "-k key file is 0600" "$(stat -c %a "$KEY_PATH")" "600"
expect_contains "-k installs the public key" "$(cat "$USER_HOME/.ssh/authorized_keys")" "$(cut -d' ' -f2 "$KEY_PATH.pub")"
expect_contains "-k stores no password" "$(grep '^password' aml_config/rdk.compute)" '""'
sed -i "s#^sharedVolumes:.*#sharedVolumes: false#" aml_config/rdk.compute

run_mlw computetarget doctor -n rdk
expect_eq "doctor on a healthy target" "$CODE" 0
for line in "address resolves  ok" "reachable         ok" "host key          ok" "login             ok" "docker            ok" "free disk         ok"; do
  expect_contains "doctor: $line" "$OUT" "$line"
done
expect_contains "doctor names the fingerprint" "$OUT" "$FPR"

# Hashed known_hosts names are understood.
ssh-keygen -H -f "$HOME/.ssh/known_hosts" >/dev/null 2>&1
check "known_hosts hashed" bash -c "grep -q '^|1|' '$HOME/.ssh/known_hosts'"

# --- runs on remotedocker ---------------------------------------------------------------------
cat >args.py <<'PY'
import json, os, sys
os.makedirs("outputs", exist_ok=True)
json.dump(sys.argv[1:], open("outputs/args.json", "w", encoding="utf-8"), ensure_ascii=False)
print("ARGS", json.dumps(sys.argv[1:]))
print("ENV", os.environ["MLW_RUN_ID"], os.environ["MLW_TARGET"], os.environ["MLW_SHARE_DIR"])
PY
cat >exit_with.py <<'PY'
import sys
print("exiting", sys.argv[1], flush=True)
sys.exit(int(sys.argv[1]))
PY
HOSTILE=("" "a'b" 'say "hi"' '$(touch /tmp/mlw-pwned)' '`id`' 'x; rm -rf ~' $'two\nlines' 'héllo wörld ✓' '*' 'back\slash')
shell_would_run "the injection argument" ': $(touch /tmp/mlw-pwned)' /tmp/mlw-pwned
run_mlw -o json experiment submit -c rdk args.py "${HOSTILE[@]}"
expect_eq "remotedocker run (key login, copied volumes)" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
EXPECTED=$(json_of_args "${HOSTILE[@]}")
expect_eq "hostile arguments intact through ssh and docker" \
  "$(json_file ".mlw/runs/$RID/outputs/args.json")" "$EXPECTED"
check "no command injection" test ! -e /tmp/mlw-pwned
expect_contains "run env on the target" "$(cat ".mlw/runs/$RID/driver_log.txt")" "ENV $RID rdk /mlw/share"
expect_eq "image tag recorded" "$(json_get "$OUT" 'd["image_tag"].startswith("mlw_env:")')" "True"

run_mlw experiment submit -c rd exit_with.py 3
expect_eq "script exit code through remotedocker (password login)" "$CODE" 3
expect_contains "exit code summary" "$OUT" "exit code 3"

# Unchanged project: nothing is shipped again.
run_mlw -vv experiment submit -c rdk exit_with.py 0
expect_eq "resubmit" "$CODE" 0
expect_not_contains "an unchanged project sends no content" "$ERR" "shipping"
# A run that wrote no outputs: the target sends no tar for the empty folder; the run's history
# still has its (empty) outputs folder, as a run with outputs has.
RID=$(ls -t .mlw/runs | head -1)
check "a run without outputs has an empty outputs folder" test -d ".mlw/runs/$RID/outputs"

# SIGKILL and the memory limit: 137.
cat >kill_self.py <<'PY'
import os, signal
print("killing myself", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
PY
run_mlw experiment submit -c rd kill_self.py
expect_eq "container killed by SIGKILL" "$CODE" 137
cat >hog.py <<'PY'
blocks = []
while True:
    blocks.append(bytearray(8 * 1024 * 1024))
PY
cp aml_config/rd.compute aml_config/rdmem.compute
sed -i 's#^dockerRunArgs:.*#dockerRunArgs: ["--memory=64m", "--memory-swap=64m"]#' aml_config/rdmem.compute
cp aml_config/rd.runconfig aml_config/rdmem.runconfig
sed -i 's/^Target:.*/Target: rdmem/' aml_config/rdmem.runconfig
run_mlw -o json experiment submit -c rdmem hog.py
expect_eq "out of memory: 137" "$CODE" 137
expect_contains "out of memory reported" "$OUT" "out of memory"

# Malicious outputs: a symlink leaving the folder is refused and reported.
cat >evil.py <<'PY'
import os
os.makedirs("outputs/sub", exist_ok=True)
os.symlink("/etc/passwd", "outputs/passwd")
os.symlink("../../../../../../etc", "outputs/sub/up")
open("outputs/fine.txt", "w").write("fine\n")
PY
PASSWD_BEFORE=$(sha256sum /etc/passwd)
run_mlw -o json experiment submit -c rd evil.py
expect_eq "malicious outputs run" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
expect_contains "symlink refused and reported" "$OUT" "outputs/passwd: a symlink to /etc/passwd"
check "symlink not made" test ! -L ".mlw/runs/$RID/outputs/passwd"
check "regular output brought back" test -f ".mlw/runs/$RID/outputs/fine.txt"
expect_eq "/etc/passwd untouched" "$(sha256sum /etc/passwd)" "$PASSWD_BEFORE"

# --- environments: a wheel from the project, installed with pip --no-index ---------------------
make_wheel mlwdemo "GREETING = 'hello from a wheel'"
cat >aml_config/conda_dependencies.yml <<'YML'
name: project_environment
dependencies:
  - python=3.11
  - pip:
    - --no-index
    - --find-links=wheels
    - mlwdemo
YML
cat >use_wheel.py <<'PY'
import mlwdemo
print(mlwdemo.GREETING)
PY
run_mlw -o json experiment submit -c rd use_wheel.py
expect_eq "run in a built environment" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
expect_contains "wheel importable in the run" "$(cat ".mlw/runs/$RID/driver_log.txt")" "hello from a wheel"
check "build log kept with the run" grep -q "Successfully installed mlwdemo" ".mlw/runs/$RID/build.log"
run_mlw -vv experiment prepare -c rd
expect_eq "prepare with the image present" "$CODE" 0
expect_contains "prepare names the image" "$OUT" "mlw_env:"
# prepare ships in the probe's step: the store (the submit filled it) lacks nothing, so there
# is no ship step; after a change, its object goes with the probe, and still no ship step.
expect_not_contains "nothing changed: prepare ships nothing" "$ERR" "for the server: # mlw ship"
echo "# one line more" >>use_wheel.py
run_mlw -vv experiment prepare -c rd
expect_eq "one change: its object goes with the probe" \
  "$(grep -c 'shipping 1 objects .* with the probe' <<<"$ERR")" 1
expect_not_contains "no ship step of its own" "$ERR" "for the server: # mlw ship"
rm -rf .mlw/cache/shipped
echo "# one line more" >>use_wheel.py
run_mlw -vv experiment prepare -c rd
expect_eq "no record: the store names what it lacks, one ship step sends it" \
  "$(grep -c 'for the server: # mlw ship' <<<"$ERR")" 1
# A broken requirement fails the build: 125, the log shown.
cat >aml_config/conda_dependencies.yml <<'YML'
dependencies:
  - pip:
    - --no-index
    - no-such-package-mlw
YML
run_mlw experiment submit -c rd use_wheel.py
expect_eq "failed environment build: 125" "$CODE" 125
# Issue 33: the reason (pip's own) said once, on stderr; stdout holds only the run id.
expect_eq "failed build: stdout holds only the run id" "$(grep -cv '^RunId: ' <<<"$OUT")" 0
expect_contains "build failure names the log" "$ERR" "build.log"
expect_contains "the failing step's last lines shown (stderr)" "$ERR" "no-such-package-mlw"
expect_contains "the reason is the one mlw: error: line on stderr, with pip's own error" "$ERR" \
  "mlw: error: building the environment"
expect_contains "… pip's own error in it" "$(grep '^mlw: error:' <<<"$ERR")" \
  "ERROR: No matching distribution found for no-such-package-mlw"
expect_eq "… said once, not three times" "$(grep -c 'building the environment' <<<"$OUT$ERR")" 1
check "no terminal colour codes where stdout is not a terminal" bash -c "! grep -q $'\e' <<<\"\$1\"" _ "$OUT$ERR"
check "no Docker deprecation notice" bash -c "! grep -q 'DEPRECATED' <<<\"\$1\"" _ "$OUT$ERR"
# Issue 33: the conda file checked whole before pip starts, every problem in one go (the image
# has no conda, and python 3.11): a conda package, another python, a wheel for Windows/cp35.
mkdir -p wheels
: >wheels/old-1.0-cp35-cp35m-win_amd64.whl
cat >aml_config/conda_dependencies.yml <<'YML'
dependencies:
  - python=3.5.2
  - scikit-learn
  - pip:
    - wheels/old-1.0-cp35-cp35m-win_amd64.whl
YML
run_mlw experiment submit -c rd use_wheel.py
expect_eq "a conda file with three problems: 125" "$CODE" 125
ERRLINE=$(grep '^mlw: error:' <<<"$ERR")
expect_contains "… the conda package" "$ERRLINE" "cannot be installed: scikit-learn"
expect_contains "… the python" "$ERRLINE" "; also: aml_config/conda_dependencies.yml asks for python=3.5.2"
expect_contains "… the wheel, all in the one error line" "$ERRLINE" \
  "; also: wheels for another platform or Python than the image has (python3 3.11 on x86_64): old-1.0-cp35-cp35m-win_amd64.whl"
rm -rf wheels/old-1.0-cp35-cp35m-win_amd64.whl
# With PrepareEnvironment: false and the image missing, the same: 125, the reason on stderr.
sed -i 's/^PrepareEnvironment:.*/PrepareEnvironment: false/' aml_config/rd.runconfig
grep -q '^PrepareEnvironment: false' aml_config/rd.runconfig ||
  echo 'PrepareEnvironment: false' >>aml_config/rd.runconfig
run_mlw experiment submit -c rd use_wheel.py
expect_eq "PrepareEnvironment false, image missing: 125" "$CODE" 125
expect_contains "it says to prepare, on stderr" "$ERR" "mlw: error: the environment mlw_env:"
expect_contains "naming the command" "$ERR" "mlw experiment prepare -c rd"
sed -i 's/^PrepareEnvironment:.*/PrepareEnvironment: true/' aml_config/rd.runconfig
printf 'dependencies:\n  - python=3.11\n' >aml_config/conda_dependencies.yml

# Sixteen concurrent submits needing a new environment build it once (a lock on the target).
# The comment names this run's scratch folder: the image is new even where an earlier, aborted
# run of the suite left its own on the shared engine.
printf '# sixteen at once (%s)\ndependencies:\n  - python=3.11\n' "$WORK" >aml_config/conda_dependencies.yml
echo 'print("concurrent run")' >noop16.py
CONCURRENT_PIDS=()
# The suite-wide 2 s history-lock timeout (lib.sh) is for the lock test; sixteen at once under
# ASan can wait longer than that for the lock, so they get the default 10 s.
for i in $(seq 1 16); do
  MLW_HISTORY_LOCK_TIMEOUT_MS=10000 "$MLW" -q -o json experiment submit -c rd noop16.py >"$WORK/c16.$i" 2>"$WORK/c16.$i.err" </dev/null &
  CONCURRENT_PIDS+=($!)
done
C16_OK=0
for i in $(seq 1 16); do
  if wait "${CONCURRENT_PIDS[$((i - 1))]}"; then
    C16_OK=$((C16_OK + 1))
  else
    echo "concurrent submit $i failed: $(cat "$WORK/c16.$i.err") $(cat "$WORK/c16.$i")" >&2
  fi
done
expect_eq "sixteen concurrent submits complete" "$C16_OK" 16
BUILDS=0
for i in $(seq 1 16); do
  rid=$(json_get "$(cat "$WORK/c16.$i")" 'd["run_id"]' 2>/dev/null)
  [ -n "$rid" ] && grep -qs "Building environment" ".mlw/runs/$rid/build.log" && BUILDS=$((BUILDS + 1))
done
expect_eq "the environment was built by one of the sixteen" "$BUILDS" 1
printf 'dependencies:\n  - python=3.11\n' >aml_config/conda_dependencies.yml

# --- NVIDIA: the daemon has no NVIDIA runtime ---------------------------------------------------
cp aml_config/rd.compute aml_config/rdgpu.compute
sed -i 's#^\# nvidiaDocker:.*#nvidiaDocker: true#' aml_config/rdgpu.compute  # the commented line mlw writes
cp aml_config/rd.runconfig aml_config/rdgpu.runconfig
sed -i 's/^Target:.*/Target: rdgpu/' aml_config/rdgpu.runconfig
BEFORE=$("$MLW" -o json history list --top 0 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
expect_error "nvidiaDocker without the NVIDIA runtime" 125 "nvidia-container-toolkit" experiment submit -c rdgpu args.py
expect_contains "the NVIDIA error names the host" "$ERR" "$ADDR"
AFTER=$("$MLW" -o json history list --top 0 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
expect_eq "nothing recorded for the NVIDIA error" "$AFTER" "$BEFORE"
run_mlw computetarget doctor -n rdgpu
expect_eq "doctor fails without the NVIDIA runtime" "$CODE" 1
expect_contains "doctor's NVIDIA line" "$OUT" "NVIDIA runtime    fail"

# --- the local docker target, nativeSharedDirectory and dockerRunArgs -------------------------
sed -i "s#^nativeSharedDirectory:.*#nativeSharedDirectory: \"$WORK/share\"#" aml_config/docker.compute
sed -i 's#^dockerRunArgs:.*#dockerRunArgs: ["--hostname=mlwbox"]#' aml_config/docker.compute
cat >share.py <<'PY'
import os, socket
p = os.path.join(os.environ["MLW_SHARE_DIR"], "count")
n = int(open(p).read()) + 1 if os.path.exists(p) else 1
open(p, "w").write(str(n))
print("count", n, "host", socket.gethostname())
os.makedirs("outputs", exist_ok=True)
open("outputs/n.txt", "w").write(str(n))
PY
run_mlw experiment submit -c docker share.py
expect_eq "docker target run" "$CODE" 0
expect_contains "dockerRunArgs applied" "$OUT" "host mlwbox"
run_mlw -o json experiment submit -c docker share.py
expect_contains "nativeSharedDirectory persists across runs" "$(cat ".mlw/runs/$(json_get "$OUT" 'd["run_id"]')/driver_log.txt")" "count 2"
expect_eq "shared folder on the host (per project and target)" "$(cat "$WORK/share/rproj/docker/count")" "2"
expect_eq "docker outputs collected" "$(json_get "$OUT" 'd["outputs"]')" "['n.txt']"
run_mlw experiment submit -c docker exit_with.py 7
expect_eq "docker target exit code" "$CODE" 7

# --- the remote target (no docker) ------------------------------------------------------------
"$MLW" computetarget attach remote -n box -a "$ADDR" -u mlwtest --private-key-file "$KEY" >/dev/null 2>"$WORK/e"
expect_eq "attach remote with the -k key" "$?" 0
run_mlw -o json experiment submit -c box args.py "${HOSTILE[@]}"
expect_eq "remote target run" "$CODE" 0
[ "$CODE" = 0 ] || echo "remote target run said: $OUT $ERR" >&2
RID=$(json_get "$OUT" 'd["run_id"]')
expect_eq "hostile arguments intact through ssh" \
  "$(json_file ".mlw/runs/$RID/outputs/args.json")" "$EXPECTED"
run_mlw experiment submit -c box exit_with.py 4
expect_eq "remote target exit code" "$CODE" 4

# Nothing secret readable by another user of the target (issue 45): the run folder that holds the
# run's monitor.sh (its -e values) is the target user's alone, on both kinds over SSH, and here.
for t in box rdk; do
  run_mlw -o json experiment submit -c "$t" -e API_TOKEN=tok-perm-s3cret exit_with.py 0
  RID=$(json_get "$OUT" 'd["run_id"]')
  TDIR="$USER_HOME/.mlw/runs/$RID"
  check "the $t run's monitor.sh holds the token (what is protected)" grep -q tok-perm-s3cret "$TDIR/monitor.sh"
  expect_eq "the $t run folder on the target is the user's alone" "$(stat -c %a "$TDIR")" 700
  expect_eq "… its monitor.sh is 0600" "$(stat -c %a "$TDIR/monitor.sh")" 600
  check "… another user of the machine cannot read it" \
    bash -c "! runuser -u nobody -- cat '$TDIR/monitor.sh' >/dev/null 2>&1"
  expect_eq "… the local run folder too" "$(stat -c %a ".mlw/runs/$RID")" 700
done

# --- cancel, -a and logs -f -------------------------------------------------------------------
cat >slow.py <<'PY'
import sys, time
n = int(sys.argv[1])
for i in range(n):
    print("line", i, flush=True)
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.2)
print("done", flush=True)
PY
# cancel_running TARGET WHAT: an async slow run on TARGET, canceled once it prints; its container
# must be gone.
cancel_running() {
  run_mlw -o json experiment submit -c "$1" -a slow.py 600 0.2
  expect_eq "async submit to $2" "$CODE" 0
  RID=$(json_get "$OUT" 'd["run_id"]')
  check "$2: the run printed before the cancel" wait_for 30 grep -q "line 1" ".mlw/runs/$RID/driver_log.txt"
  run_mlw experiment cancel -r "$RID"
  expect_eq "cancel a $2 run" "$CODE" 0
  expect_eq "$2 run canceled" "$("$MLW" -o json history info -r "$RID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" "Canceled"
  check "$2 container gone after cancel" bash -c "[ -z \"\$(docker ps -a --filter label=mlw.run=$RID -q)\" ]"
}
cancel_running rdk remotedocker

# --- the local docker target through the Engine API (no dockerRunArgs) ------------------------
# Without extra docker run arguments the run goes through the Engine API on the daemon's socket:
# it must work with no docker command on PATH once the environment image exists.
sed -i 's#^dockerRunArgs:.*#dockerRunArgs: []#' aml_config/docker.compute
run_mlw experiment prepare -c docker
expect_eq "prepare the docker target" "$CODE" 0
NODOCKER="$WORK/nodocker-bin"
mkdir -p "$NODOCKER"
ln -sf "$(command -v python3)" "$NODOCKER/python3"
run_env() { env PATH="$NODOCKER" "$@"; }
OUT=$(run_env "$MLW" -o json experiment submit -c docker args.py "${HOSTILE[@]}" 2>"$WORK/e"); CODE=$?; ERR=$(cat "$WORK/e")
expect_eq "docker run through the Engine API, no docker command" "$CODE" 0
[ "$CODE" = 0 ] || echo "engine run said: $OUT $ERR" >&2
RID=$(json_get "$OUT" 'd["run_id"]')
expect_eq "hostile arguments intact through the Engine API" \
  "$(json_file ".mlw/runs/$RID/outputs/args.json")" "$EXPECTED"
expect_contains "engine run's log" "$(cat ".mlw/runs/$RID/driver_log.txt")" "ENV $RID docker /mlw/share"
check "engine run's container removed" bash -c "[ -z \"\$(docker ps -a --filter label=mlw.run=$RID -q)\" ]"
OUT=$(run_env "$MLW" experiment submit -c docker exit_with.py 9 2>"$WORK/e"); CODE=$?
expect_eq "engine run's exit code" "$CODE" 9
run_mlw -o json experiment submit -c docker -a slow.py 600 0.2
RID=$(json_get "$OUT" 'd["run_id"]')
check "the engine run printed before its container is killed" wait_for 30 grep -q "line 1" ".mlw/runs/$RID/driver_log.txt"
docker kill --signal KILL "$(docker ps --filter label=mlw.run=$RID -q)" >/dev/null
run_ended() { [[ "$(run_state "$1")" != Running* ]]; }
check "the killed engine run ended" wait_for 30 run_ended "$RID"
expect_eq "engine run killed by SIGKILL: 137" "$(run_state "$RID")" "Failed 137"
cancel_running docker "Engine API"

# --- the SSH connection killed mid-run ----------------------------------------------------------
run_mlw -o json experiment submit -c rdk -a slow.py 30 0.1
RID=$(json_get "$OUT" 'd["run_id"]')
check "the run printed before its SSH sessions are killed" wait_for 30 grep -q "line 3" ".mlw/runs/$RID/driver_log.txt"
KILLED=0
for child in $(ssh_sessions_of mlwtest); do kill "$child" && KILLED=$((KILLED + 1)); done
check "an SSH session of the run was killed" test "$KILLED" -gt 0
timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow.txt" 2>"$WORK/follow.err"
expect_eq "logs -f after a dropped connection" "$?" 0
expect_lines "logs -f after a dropped connection" "$WORK/follow.txt" 30 ".mlw/runs/$RID/driver_log.txt"
[ "$(grep -c '^line ' "$WORK/follow.txt")" = 30 ] || { cat "$WORK/follow.txt" "$WORK/follow.err" ".mlw/runs/$RID/supervisor.log"; } >&2
expect_eq "run completed" "$("$MLW" -o json history info -r "$RID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" "Completed"

# --- the supervisor killed mid-run: history logs -f takes the run over ---------------------------
for target in rdk docker; do
  run_mlw -o json experiment submit -c "$target" -a slow.py 40 0.1
  RID=$(json_get "$OUT" 'd["run_id"]')
  check "$target: the run printed before its supervisor is killed" wait_for 30 grep -q "line 3" ".mlw/runs/$RID/driver_log.txt"
  # A pid of 0 or 1 (a run that never started) must not become kill -9 0: that would kill this
  # script's whole process group, and whatever ran it.
  SUPERVISOR=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid", 0))' ".mlw/runs/$RID/run.json")
  case "$SUPERVISOR" in '' | *[!0-9]* | 0 | 1) SUPERVISOR= ;; esac
  check "$target: the run's supervisor has a pid" test -n "$SUPERVISOR"
  [ -z "$SUPERVISOR" ] || kill -9 "$SUPERVISOR"
  # kill returns once the signal is sent; the supervisor is gone a moment later (longer under load).
  wait_for 10 run_is "$RID" Lost
  expect_eq "$target: Lost once its supervisor is killed" "$(run_state "$RID")" "Lost None"
  # Three followers at once: one takes the run over, the other two follow the resumed run (none
  # may stop at Lost).
  timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow2.txt" 2>"$WORK/follow2.err" &
  F2=$!
  timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow3.txt" 2>"$WORK/follow3.err" &
  F3=$!
  timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow.txt" 2>"$WORK/follow.err"
  expect_eq "$target: logs -f takes the run over" "$?" 0
  wait "$F2"
  expect_eq "$target: a second follower ends well" "$?" 0
  wait "$F3"
  expect_eq "$target: a third follower ends well" "$?" 0
  for f in follow2 follow3; do
    expect_contains "$target: $f followed the resumed run to its end" "$(cat "$WORK/$f.err")" "is Completed"
    expect_lines "$target: $f" "$WORK/$f.txt" 40
  done
  expect_contains "$target: the takeover is said" "$(cat "$WORK"/follow*.err)" "following it on $target again"
  expect_lines "$target: logs -f after the takeover" "$WORK/follow.txt" 40 ".mlw/runs/$RID/driver_log.txt"
  expect_eq "$target: completed after the takeover" "$(run_state "$RID")" "Completed 0"
  [ "$(run_state "$RID")" = "Completed 0" ] || cat "$WORK/follow.err" ".mlw/runs/$RID/supervisor.log" >&2
done

# --- a metric line longer than a follow step carries, then a takeover ----------------------------
# The live copy of metrics.jsonl holds the lines the follow steps carried (up to 4000 bytes); a
# step that takes over after the supervisor is killed starts where the last one ended on the
# target, past the long line, not at the copy's size (which named a byte inside the long line and
# brought back the lines after it a second time).
cat >long_metric.py <<'PY'
import os, sys, time
from mlw import log_metric
def wait(gate):
    for _ in range(1200):  # bounded: 120 s
        if os.path.exists(gate):
            return
        time.sleep(0.1)
log_metric("loss", 1.0, step=1)
log_metric("histogram", [0.123456789] * 600, step=1)  # 7,800 bytes: it comes with the results
log_metric("loss", 0.5, step=2)
log_metric("loss", 0.25, step=3)
wait(sys.argv[1])
log_metric("loss", 0.125, step=4)
wait(sys.argv[2])
PY
GATE_L1=/tmp/mlw-remote-gate-l1-$$
GATE_L2=/tmp/mlw-remote-gate-l2-$$
rm -f "$GATE_L1" "$GATE_L2"
run_mlw -o json experiment submit -c box -a long_metric.py "$GATE_L1" "$GATE_L2"
RID=$(json_get "$OUT" 'd["run_id"]')
# (the steps of the loss lines in the copy here, in order; the histogram's name when it is there)
live_metrics() {
  python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(" ".join(str(d["step"]) if d["name"] == "loss" else d["name"] for d in lines))' \
    ".mlw/runs/$RID/metrics.jsonl" 2>/dev/null
}
has_metrics() { [ "$(live_metrics)" = "$1" ]; }
check "box: the live copy has the short lines, not the long one" wait_for 60 has_metrics "1 2 3"
SUPERVISOR=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid", 0))' ".mlw/runs/$RID/run.json")
case "$SUPERVISOR" in '' | *[!0-9]* | 0 | 1) SUPERVISOR= ;; esac
check "box: the run's supervisor has a pid" test -n "$SUPERVISOR"
[ -z "$SUPERVISOR" ] || kill -9 "$SUPERVISOR"
wait_for 10 run_is "$RID" Lost
timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow4.txt" 2>"$WORK/follow4.err" &
F4=$!
touch "$GATE_L1"
check "box: after the takeover, the next line once, where it belongs" wait_for 60 has_metrics "1 2 3 4"
[ "$(live_metrics)" = "1 2 3 4" ] || { live_metrics; cat "$WORK/follow4.err"; } >&2
touch "$GATE_L2"
wait "$F4"
expect_eq "box: the followed run ends" "$?" 0
expect_eq "box: the results bring the long line" "$(live_metrics)" "1 histogram 2 3 4"
rm -f "$GATE_L1" "$GATE_L2"

# --- sshd gone mid-upload: a clear error; the resubmit reuses what arrived ----------------------
mkdir -p data
for i in $(seq 1 40); do head -c 2000000 /dev/urandom >"data/part$i.bin"; done
"$MLW" experiment submit -c rdk exit_with.py 0 >"$WORK/drop.out" 2>"$WORK/drop.err" </dev/null &
SUBMIT=$!
# Watch until the upload begins or the submit ends, whichever comes first (bounded at 120 s).
KILLED=0
for _ in $(seq 1 12000); do
  if ls "$USER_HOME/.mlw/incoming/" 2>/dev/null | grep -q '^rproj'; then
    # The whole connection: each sshd session process and the child serving its channels.
    # A session whose channel child was killed may be gone before its own kill: either counts.
    for child in $(ssh_sessions_of mlwtest); do
      for grandchild in $(pgrep -P "$child"); do kill -9 "$grandchild" && KILLED=$((KILLED + 1)); done
      kill -9 "$child" 2>/dev/null && KILLED=$((KILLED + 1))
    done
    break
  fi
  kill -0 "$SUBMIT" 2>/dev/null || break
  sleep 0.01
done
wait "$SUBMIT"
CODE=$?
ERR=$(cat "$WORK/drop.err")
check "the watcher killed an SSH session mid-upload" test "$KILLED" -gt 0
expect_eq "a dropped upload fails the submit with 125" "$CODE" 125
expect_contains "the upload error names the host" "$ERR" "$ADDR"
# The 40 new files that reached the target whole: in its store, or left in incoming/ intact.
ARRIVED=0
for part in data/part*.bin; do
  sum=$(sha256sum "$part" | cut -d' ' -f1)
  if [ -e "$USER_HOME/.mlw/objects/$sum" ] ||
    sha256sum "$USER_HOME"/.mlw/incoming/*/"$sum" 2>/dev/null | grep -q "^$sum "; then
    ARRIVED=$((ARRIVED + 1))
  fi
done
run_mlw -vv experiment submit -c rdk exit_with.py 0
expect_eq "resubmit after a dropped upload" "$CODE" 0
SENT=$(grep -o 'shipping [0-9]* objects' <<<"$ERR" | awk '{print $2}')
expect_eq "the resubmit sends exactly the new files that had not arrived ($ARRIVED had)" \
  "${SENT:-0}" "$((40 - ARRIVED))"
expect_eq "nothing is left in the target's incoming/" "$(ls -A "$USER_HOME/.mlw/incoming" | wc -l)" 0

# --- a changed host key is refused, naming the line ----------------------------------------------
ssh-keygen -q -t ed25519 -N '' -f "$WORK/other_key"
printf '[127.0.0.1]:%s %s\n' "$PORT" "$(cut -d' ' -f1,2 "$WORK/other_key.pub")" >"$HOME/.ssh/known_hosts"
expect_error "changed host key refused" 125 "CHANGED" experiment submit -c rd args.py
expect_contains "changed key names the known_hosts line" "$ERR" "remove line 1 of $HOME/.ssh/known_hosts"

# --- an RSA-only user key is explained ----------------------------------------------------------
rm -f "$HOME/.ssh/known_hosts"
ssh-keygen -q -t rsa -b 2048 -N '' -f "$WORK/id_rsa"
cat "$WORK/id_rsa.pub" >>"$USER_HOME/.ssh/authorized_keys"
expect_error "RSA key explained" 1 "ssh-rsa (SHA-1)" computetarget attach remote -n rsa -a "$ADDR" -u mlwtest --private-key-file "$WORK/id_rsa" --accept-host-key
expect_contains "RSA error points to -k" "$ERR" "-k"

finish
