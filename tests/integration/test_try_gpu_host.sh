#!/usr/bin/env bash
# scripts/try-gpu-host as docs/gpu-guide.md tells a user to run it: it starts a SIMULATED NVIDIA
# host of its own (tests/fixtures/nvidia-sim: a fake nvidia-smi reports four Tesla K80s; no GPU
# computes) and prints the attach line, which is typed as printed; the guide's edits and submit
# then see the simulated GPUs; `stop` ends what it started.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "FAIL: test_try_gpu_host needs root (it starts dockerd and sshd)"; exit 1; }
echo "SIMULATION: the host this suite starts is simulated (tests/fixtures/nvidia-sim); no GPU is used"
export HOME="$WORK/home"
mkdir -p "$HOME"
HOST_DIR=$WORK/host
chmod 755 "$WORK"  # the host's user (mlwtry) goes through it to the engine's socket
stop_host() { "$MLW_SOURCE_DIR/scripts/try-gpu-host" stop "$HOST_DIR" >/dev/null 2>&1; }
trap 'stop_host; cleanup' EXIT

timeout 600 "$MLW_SOURCE_DIR/scripts/try-gpu-host" "$HOST_DIR" >"$WORK/out" 2>"$WORK/err"
expect_eq "try-gpu-host starts the simulated host" "$?" 0
OUT=$(cat "$WORK/out")
expect_contains "… and says it is a simulation" "$OUT" "SIMULATION: a simulated NVIDIA host is running"
attach=$(grep '^  mlw computetarget attach' "$WORK/out" | sed 's/^  //')
image=$(sed -n 's/^  base image  \([^ ]*\) .*/\1/p' "$WORK/out")
expect_contains "it prints the attach line of the guide's step 2" "$attach" \
  "mlw computetarget attach remotedocker --name my_dsvm --address 127.0.0.1:"
check "its password file is the user's only" test "$(stat -c %a "$HOST_DIR/password")" = 600

cd "$WORK" && "$MLW" -q project create -n tried >/dev/null && cd tried || exit 1
printf 'import subprocess\nprint(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout)\n' >see.py
PATH="$(dirname "$MLW"):$PATH" bash -c "${attach/mlw /$MLW }" >"$WORK/attach.out" 2>"$WORK/attach.err" </dev/null
expect_eq "the printed attach line works as typed" "$?" 0
sed -i "s|^baseDockerImage:.*|baseDockerImage: \"$image\"|" aml_config/my_dsvm.compute
echo 'nvidiaDocker: true' >>aml_config/my_dsvm.compute
run_mlw computetarget doctor -n my_dsvm
expect_eq "doctor passes on it" "$CODE" 0
expect_contains "… naming its simulated GPUs" "$OUT" "name: Tesla K80"
run_mlw experiment submit -c my_dsvm see.py
expect_eq "the guide's submit on it" "$CODE" 0
expect_contains "the run sees four GPUs" "$OUT" "GPU 3: Tesla K80"

"$MLW_SOURCE_DIR/scripts/try-gpu-host" stop "$HOST_DIR" >/dev/null 2>&1
expect_eq "try-gpu-host stop" "$?" 0
for pidfile in sshd.pid gpu-dockerd.pid; do
  check "… stopped what it started ($pidfile)" test ! -e "$HOST_DIR/$pidfile"
done
check "… and left no password behind" test ! -e "$HOST_DIR/password" -a ! -e "$HOST_DIR/env"
expect_not_contains "it names no user but its own on stderr" "$(cat "$WORK/err")" "mlwtest"
expect_contains "… its own" "$(cat "$WORK/err")" "(users mlwtry)"
expect_contains "its stop line is typed as the reader ran it (root here: no sudo)" "$(cat "$WORK/out")" \
  "Stop it with: $MLW_SOURCE_DIR/scripts/try-gpu-host stop $HOST_DIR"
finish
