#!/usr/bin/env bash
# The docs as a contract: the README's "Use" block and the Python snippet of docs/cli.md are
# taken from the files (not copied here) and run against the built mlw and the real servers of
# tests/fixtures/servers.sh. What a line names that no test machine has is replaced, and only
# that: the run id in the examples by the real one, gpu-vm.example.com / login.example.org by
# the test sshd on loopback, `me` by the test user, pw.txt by a file holding its password, and
# the remotedocker base image by the local test image (the default one is not local, and a test
# engine must never reach for a registry). Host keys are known beforehand, as after a first
# `ssh`. Not run, and said so when the suite runs: the Slurm lines (they ask for 4 GPUs per
# node, which the test cluster has not) and `experiment clean` (it removes every mlw_env image
# of the engine, which suites running beside this one use).
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_SSH_USER \
  MLW_TEST_SSH_HOST_KEY MLW_TEST_IMAGE DOCKER_HOST
export HOME="$WORK/home"
mkdir -p "$HOME/.ssh" "$WORK/bin"
printf '[127.0.0.1]:%s %s\n' "$MLW_TEST_SSH_PORT" "$(cut -d' ' -f1,2 "$MLW_TEST_SSH_HOST_KEY")" \
  >"$HOME/.ssh/known_hosts"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw.txt"
ln -s "$MLW" "$WORK/bin/mlw"
export PATH="$WORK/bin:$PATH"

# block FILE LANG N: the Nth fenced block of LANG in FILE.
block() {
  python3 - "$@" <<'PY'
import re, sys
path, lang, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
blocks = re.findall(r"^```" + lang + r"\n(.*?)^```", open(path).read(), re.S | re.M)
print(blocks[n - 1] if len(blocks) >= n else "", end="")
PY
}

USE=$(block "$MLW_SOURCE_DIR/README.md" sh 2)
expect_contains "the README's Use block starts with project create" "$USE" "mlw project create -n demo"

# --- the README's Use block, line by line ---------------------------------------------------------
cd "$WORK" || exit 1
RUN_ID=""
LINES_RUN=0
while IFS= read -r line; do
  command=${line%%  #*}
  command=${command%"${command##*[![:space:]]}"}
  [ -n "$command" ] || continue
  case "$command" in
    *"-c hpc"* | *"attach slurm"*)
      echo "not run (it asks for 4 GPUs per node, which the test cluster has not): $command"
      continue ;;
    "mlw experiment clean"*)
      # It removes every mlw_env image of the engine, which suites running beside this one use.
      echo "not run (it would remove images other suites use on the shared engine): $command"
      continue ;;
  esac
  command=${command//demo_1795282976808/$RUN_ID}
  command=${command//gpu-vm.example.com/127.0.0.1:$MLW_TEST_SSH_PORT}
  command=${command//-u me /-u $MLW_TEST_SSH_USER }
  command=${command//< pw.txt/--base-image $MLW_TEST_IMAGE < $WORK/pw.txt}
  timeout -k 5 300 bash -c "$command" >"$WORK/line.out" 2>"$WORK/line.err" </dev/null
  code=$?
  expect_eq "README: $line" "$code" 0
  [ "$code" -eq 0 ] || cat "$WORK/line.err" >&2
  LINES_RUN=$((LINES_RUN + 1))
  case "$command" in
    "mlw project create"*) cd demo || exit 1 ;;
    "mlw experiment submit -c local"*)
      RUN_ID=$(sed -n 's/^RunId: //p' "$WORK/line.out")
      expect_contains "README: the local run printed its epochs" "$(cat "$WORK/line.out")" "epoch" ;;
    "mlw history download"*)
      check "README: download wrote the results folder" test -d results ;;
    "mlw experiment submit -c my_dsvm"*)
      expect_contains "README: the remote run says it completed" "$(cat "$WORK/line.out")" "Completed" ;;
  esac
done <<<"$USE"
expect_eq "every README line that can run here ran" "$LINES_RUN" 10

# --- docs/cli.md's Python snippet, as a script on the local target -------------------------------
block "$MLW_SOURCE_DIR/docs/cli.md" python 1 >snippet.py
check "docs/cli.md has its Python snippet" grep -q "log_artifact" snippet.py
run_mlw experiment submit -c local snippet.py
expect_eq "the docs' Python snippet runs as written" "$CODE" 0
RUN_ID=$(sed -n 's/^RunId: //p' <<<"$OUT")
run_mlw history info -r "$RUN_ID" -o json
expect_eq "its metric is recorded" "$(json_get "$OUT" 'd["metrics"].get("loss")')" "0.25"
expect_eq "the 2017 logger's metric too" "$(json_get "$OUT" 'd["metrics"].get("Accuracy")')" "0.93"
check "its artifact is in the run's outputs" test -f ".mlw/runs/$RUN_ID/outputs/model.pkl"

finish
