#!/usr/bin/env bash
# Runs you can reproduce (docs/reproduce.md): `experiment rerun` from a run's stored snapshot
# after the project's files changed or were deleted, on its own and on another kind of target;
# a store that lost a run's content; `history diff`; `experiment diagnostics` checked for
# secrets, against the real Docker engine and sshd of tests/fixtures/servers.sh.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_IMAGE DOCKER_HOST
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
TOKEN=tok-s3cr3t-value-41
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"

new_project repro
sed -i "s#^baseDockerImage:.*#baseDockerImage: \"$MLW_TEST_IMAGE\"#" aml_config/docker.compute
cat >train.py <<'PY'
import os, sys
data = open("data.txt").read().strip() if os.path.exists("data.txt") else "none"
print("DATA", data, "ARGS", " ".join(sys.argv[1:]), "SEED", os.environ.get("SEED"), "STAMP", os.environ.get("STAMP"), "VERSION 1")
if "--lr" in sys.argv:
    from mlw import log_metric
    log_metric("loss", float(sys.argv[sys.argv.index("--lr") + 1]) * 10)
PY
echo alpha >data.txt
# An environment spec of this suite's own (a conda file's bytes name its image): not built yet.
echo "# test_reproduce $$ $(date +%s%N)" >>aml_config/conda_dependencies.yml
runs_count() { "$MLW" -o json history list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

# --- rerun: the stored snapshot, not today's files ---------------------------------------------
A=$("$MLW" -o json experiment submit -c local -e SEED=7 -e "API_TOKEN=$TOKEN" train.py --lr 0.1 |
  json_get "$(cat)" 'd["run_id"]')
expect_eq "the first run completes" "$(run_state "$A")" "Completed 0"
sed -i 's/VERSION 1/VERSION 2/' train.py
rm data.txt
# …and its run configuration: the rerun's is the run's own.
sed -i 's/^EnvironmentVariables: {}$/EnvironmentVariables: {STAMP: "new"}/' aml_config/local.runconfig
run_mlw experiment rerun -r "$A"
expect_eq "rerun after editing and deleting files (exit code)" "$CODE" 0
expect_contains "the rerun sees the old content, arguments and -e" "$OUT" "DATA alpha ARGS --lr 0.1 SEED 7 STAMP None VERSION 1"
R1=$(json_get "$("$MLW" -o json history last)" 'd["run_id"]')
expect_eq "the rerun's record names its source and snapshot" \
  "$(json_get "$("$MLW" -o json history info -r "$R1")" '(d["rerun_of"], d["arguments"], d["params"])')" \
  "('$A', ['--lr', '0.1'], {'lr': 0.1})"
expect_eq "… the same snapshot as its source" \
  "$(json_get "$("$MLW" -o json history info -r "$R1")" 'd["snapshot_hash"]')" \
  "$(json_get "$("$MLW" -o json history info -r "$A")" 'd["snapshot_hash"]')"
check "the project's files are as the user left them" bash -c "[ ! -e data.txt ] && grep -q 'VERSION 2' train.py"
run_mlw experiment rerun -r "$A" -e SEED=9 -- --lr 0.5
expect_contains "rerun -- new arguments, -e over the run's" "$OUT" "DATA alpha ARGS --lr 0.5 SEED 9 STAMP None VERSION 1"
expect_eq "… its parameters are the new arguments'" \
  "$(json_get "$("$MLW" -o json history last)" 'd["params"]')" "{'lr': 0.5}"
run_mlw -o json experiment rerun -a -r "$A"
expect_eq "rerun -a returns the new run" "$(json_get "$OUT" 'd["rerun_of"]')" "$A"
check "… which completes" wait_for 30 run_is "$(json_get "$OUT" 'd["run_id"]')" Completed

# On another kind of target: the local run's snapshot in a container of the Docker engine.
run_mlw experiment rerun -r "$A" -c docker
expect_eq "rerun on another kind (docker) (exit code)" "$CODE" 0
expect_contains "… with the old content" "$OUT" "DATA alpha ARGS --lr 0.1 SEED 7 STAMP None VERSION 1"
expect_eq "… recorded on docker" "$(json_get "$("$MLW" -o json history last)" '(d["target"], d["rerun_of"])')" \
  "('docker', '$A')"
expect_contains "… its environment built from the same spec, and said so" "$ERR" \
  "of run $A is not on"
D=$(json_get "$("$MLW" -o json history last)" 'd["run_id"]')
image=$(json_get "$("$MLW" -o json history info -r "$D")" 'd["image_tag"]')
run_mlw experiment rerun -r "$D"
expect_eq "a rerun of that run uses its image, still there (no build)" \
  "$CODE $(json_get "$("$MLW" -o json history last)" 'd["image_tag"]') $(grep -c 'Building environment' <<<"$ERR")" \
  "0 $image 0"

# --- a store that lost the content -------------------------------------------------------------
B=$("$MLW" -o json experiment submit -c local train.py | json_get "$(cat)" 'd["run_id"]')
rm -rf .mlw/objects .mlw/reruns
run_mlw experiment rerun -r "$B"
expect_eq "store cleaned, the run folder's copy kept: the rerun restores from it" "$CODE" 0
expect_contains "… and runs the old content" "$OUT" "DATA none ARGS  SEED None STAMP new VERSION 2"
rm -rf .mlw/objects .mlw/reruns ".mlw/runs/$B/snapshot"
before=$(runs_count)
expect_error "rerun of a run whose content is gone" 125 "the stored content of 9 of its 9 files is gone" \
  experiment rerun -r "$B"
expect_contains "… names the missing files, its script first" "$ERR" "files is gone from .mlw/objects and its run folder: train.py, .amlignore"
expect_eq "… nothing recorded" "$(runs_count)" "$before"
expect_error "rerun of no such run" 125 "no run \"nope_1\"" experiment rerun -r nope_1
expect_error "rerun on no such target" 125 "no target or run configuration zz" \
  experiment rerun -r "$A" -c zz

# --- history diff --------------------------------------------------------------------------------
echo beta >data.txt
printf 'weights\0\1\2' >model.bin
cat >>aml_config/conda_dependencies.yml <<'YML'
  - scipy=1.11
YML
C=$("$MLW" -o json experiment submit -c local -e SEED=8 train.py --lr 0.2 | json_get "$(cat)" 'd["run_id"]')
run_mlw history diff -r "$A" -r "$C"
expect_eq "diff (exit code)" "$CODE" 0
check "diff: a unified diff of the changed script" grep -qE '^-print\(.*VERSION 1"\)$' <<<"$OUT"
check "… its new line" grep -qE '^\+print\(.*VERSION 2"\)$' <<<"$OUT"
check "… under its a/ and b/ names" grep -qx -- '--- a/train.py' <<<"$OUT"
expect_contains "… a changed data file" "$OUT" $'-alpha\n+beta'
expect_contains "… a binary file named, not shown" "$OUT" "Binary file model.bin added"
expect_contains "… the package added" "$OUT" "package added: scipy=1.11"
expect_contains "… the arguments" "$OUT" "arguments: [\"--lr\",\"0.1\"] → [\"--lr\",\"0.2\"]"
expect_contains "… the parameter" "$OUT" "param lr: 0.1 → 0.2"
expect_contains "… the metric's last value" "$OUT" "metric loss: 1.0 → 2.0"
expect_contains "… an -e variable changed, not its value" "$OUT" "env SEED: changed"
expect_not_contains "… never an -e value" "$OUT" "$TOKEN"
json=$("$MLW" -o json history diff -r "$A" -r "$C")
expect_eq "diff -o json: the metrics" "$(json_get "$json" 'd["fields"]["metrics"]')" "[{'loss': 1.0}, {'loss': 2.0}]"
expect_eq "diff -o json" "$(json_get "$json" '(d["fields"]["arguments"], sorted((f["path"], f["change"]) for f in d["files"]), d["packages"]["added"])')" \
  "([['--lr', '0.1'], ['--lr', '0.2']], [('aml_config/conda_dependencies.yml', 'changed'), ('aml_config/local.runconfig', 'changed'), ('data.txt', 'changed'), ('model.bin', 'added'), ('train.py', 'changed')], ['scipy=1.11'])"
run_mlw history diff -r "$A" -r "$A"
expect_eq "diff of a run with itself: nothing, exit 0" "$CODE:$OUT" "0:"
expect_error "diff needs two runs" 2 "give two runs" history diff -r "$A"
# A name and lines with terminal escapes, and a file too big to compare line by line (issue 45).
ESC_NAME=$'esc\e[31mname.txt'
printf 'one\e]0;pwned\a\n' >"$ESC_NAME"
head -c 9000000 /dev/zero | tr '\0' a >big.txt
D1=$("$MLW" -o json experiment submit -c local train.py | json_get "$(cat)" 'd["run_id"]')
printf 'two\e[2J\n' >"$ESC_NAME"
echo b >>big.txt
D2=$("$MLW" -o json experiment submit -c local train.py | json_get "$(cat)" 'd["run_id"]')
rm -f "$ESC_NAME" big.txt
run_mlw history diff -r "$D1" -r "$D2"
expect_eq "diff with escapes and a big file (exit code)" "$CODE" 0
check "… no escape byte reaches the terminal" bash -c "! grep -q $'\e' <<<\"\$1\"" _ "$OUT"
expect_contains "… the escapes shown" "$OUT" '+two\x1b[2J'
expect_contains "… the name's too" "$OUT" 'esc\x1b[31mname.txt'
expect_contains "… the big file named, not compared" "$OUT" "(file big.txt: 9.0 MB, more than history diff compares line by line)"

# --- diagnostics: a zip a maintainer can read, without a secret -------------------------------
"$MLW" -q computetarget attach remote -n rem -a "$ADDR" -u mlwtest --password-stdin \
  --accept-host-key <"$WORK/pw" >/dev/null 2>&1
"$MLW" -q computetarget attach remote -n remk -a "$ADDR" -u mlwtest --password-stdin -k \
  <"$WORK/pw" >/dev/null 2>&1
KEY=$(sed -n 's/^privateKeyFile: "\(.*\)"/\1/p' aml_config/remk.compute)
KEY=${KEY/#\~/$HOME}
check "the key target has its key" test -s "$KEY"
for t in rem remk; do
  sed -i 's/^EnvironmentVariables: {}$/EnvironmentVariables:\n  WANDB_API_KEY: "k-9f8e7d6c5b4a"\n  EPOCHS: "3"/' \
    "aml_config/$t.runconfig"
done
# zip_read ZIP NAME: one entry's bytes (Python's zipfile: no unzip needed).
zip_read() { python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' "$1" "$2"; }
zip_has() { # ZIP: prints the names, then any secret found in the entries
  python3 - "$1" "$MLW_TEST_SSH_PASSWORD" "$TOKEN" "k-9f8e7d6c5b4a" "$KEY" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(" ".join(sorted(n.split("/", 1)[1] for n in z.namelist())))
key_lines = [l for l in open(sys.argv[5]).read().splitlines() if l and not l.startswith("-----")]
blob = b"".join(z.read(n) for n in z.namelist())
for secret in sys.argv[2:5] + key_lines:
    if secret.encode() in blob:
        print("SECRET FOUND:", secret[:6])
PY
}
# A careless script that prints its environment's secrets into the log.
printf 'import os\nprint("token", os.environ["API_TOKEN"], "wandb", os.environ["WANDB_API_KEY"])\n' >leak.py
for t in rem remk; do
  R=$("$MLW" -o json experiment submit -c "$t" -e "API_TOKEN=$TOKEN" leak.py |
    json_get "$(cat)" 'd["run_id"]')
  expect_eq "a run on $t" "$(run_state "$R")" "Completed 0"
  run_mlw experiment diagnostics -r "$R" --file "$WORK/$t.zip"
  expect_eq "diagnostics of a run on $t (exit code)" "$CODE" 0
  expect_eq "… prints where the zip is" "$OUT" "$WORK/$t.zip"
  names=$(zip_has "$WORK/$t.zip")
  expect_eq "… holds the record, logs, files used, doctor, version" "$(head -1 <<<"$names")" \
    "aml_config/$t.compute aml_config/$t.runconfig doctor.json driver_log.txt env.txt manifest.json run.json supervisor.log version.txt"
  expect_not_contains "… and no password, token, key or environment secret" "$names" "SECRET FOUND"
  expect_contains "… the log kept, its secrets as ***" "$(zip_read "$WORK/$t.zip" "$R/driver_log.txt")" \
    "token *** wandb ***"
  doctor=$(zip_read "$WORK/$t.zip" "$R/doctor.json")
  expect_eq "… doctor's rows for the target now" \
    "$(json_get "$doctor" '[r["result"] for r in d if r["check"] == "login"]')" "['ok']"
  expect_contains "… the run configuration used, its environment's values masked" \
    "$(zip_read "$WORK/$t.zip" "$R/aml_config/$t.runconfig")" $'WANDB_API_KEY: "***"\n  EPOCHS: "***"'
  [ "$t" = rem ] && expect_contains "… the target's file, its password reference masked" \
    "$(zip_read "$WORK/$t.zip" "$R/aml_config/$t.compute")" 'password: "***"'
done
# Without --file: in the project's outputs/, which no run ships (issue 45).
run_mlw experiment diagnostics -r "$R"
expect_eq "diagnostics without --file: in outputs/" "$OUT" "$PWD/outputs/$R-diagnostics.zip"
check "… a zip" python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1])' "$OUT"
rm ".mlw/runs/$R/driver_log.txt"
run_mlw experiment diagnostics -r "$R" --file "$WORK/partial.zip"
expect_eq "diagnostics of a run whose folder is partly gone (exit code)" "$CODE" 0
expect_contains "… says what was missing, on stderr" "$ERR" "driver_log.txt"
expect_contains "… and in the zip" "$(zip_read "$WORK/partial.zip" "$R/MISSING.txt")" "driver_log.txt: not in"

# What the third round of outside tries found (issue 45): secrets in script arguments and in any
# YAML style of EnvironmentVariables, a damaged record naming a file outside the project, a FIFO.
cp aml_config/local.runconfig "$WORK/local.runconfig.kept"
python3 - aml_config/local.runconfig aml_config/flow.runconfig <<'PY'
import re, sys
text = open(sys.argv[1]).read()
env = ('EnvironmentVariables:\n  ? COMPLEX\n  : complex-v4lue-2\n'
       '  BLOCK: |\n    block-v4lue-3\n    block-v4lue-4\n  FOLDED: >-\n    folded-v4lue-5')
open(sys.argv[1], "w").write(re.sub(r"^EnvironmentVariables:.*$", env, text, flags=re.M))
open(sys.argv[2], "w").write(re.sub(r"^EnvironmentVariables:.*$",
                                    'EnvironmentVariables: {FLOW: "flow-v4lue-1", N: "1"}', text, flags=re.M))
PY
F=$("$MLW" -o json experiment submit -c flow train.py | json_get "$(cat)" 'd["run_id"]')
run_mlw experiment diagnostics -r "$F" --file "$WORK/flow.zip"
expect_not_contains "diagnostics: a flow-style EnvironmentVariables masked" \
  "$(zip_read "$WORK/flow.zip" "$F/aml_config/flow.runconfig")" "flow-v4lue-1"
R=$("$MLW" -o json experiment submit -c local train.py --password hunter2-v4lue-6 \
  --api_key=ak-v4lue-7 --hf-token tk-v4lue-8 --SECRET_KEY sk-v4lue-9 --token 'Q~z' --lr 0.5 |
  json_get "$(cat)" 'd["run_id"]')
cp "$WORK/local.runconfig.kept" aml_config/local.runconfig
expect_eq "a run with secrets in its arguments and environment" "$(run_state "$R")" "Completed 0"
run_mlw experiment diagnostics -r "$R" --file "$WORK/styles.zip"
expect_eq "diagnostics of it (exit code)" "$CODE" 0
all=$(python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); sys.stdout.write("".join(z.read(n).decode() for n in z.namelist()))' "$WORK/styles.zip")
for n in 2 3 4 5 6 7 8 9; do
  expect_not_contains "… no secret value $n in the zip" "$all" "v4lue-$n"
done
expect_contains "… the arguments masked by option name" \
  "$(json_get "$(zip_read "$WORK/styles.zip" "$R/run.json")" 'd["arguments"]')" \
  "['--password', '***', '--api_key=***', '--hf-token', '***', '--SECRET_KEY', '***', '--token', '***', '--lr', '0.5']"
# The parameters read from those options are masked by name, even a value too short to be
# scrubbed from the logs (--token 'Q~z'); lr is kept.
expect_eq "… the parameters named like secrets masked in run.json" \
  "$(json_get "$(zip_read "$WORK/styles.zip" "$R/run.json")" \
    '(d["params"]["password"], d["params"]["token"], d["params"]["lr"])')" "('***', '***', 0.5)"
expect_contains "… the environment's names kept" "$(zip_read "$WORK/styles.zip" "$R/aml_config/local.runconfig")" "FOLDED"
# A damaged record: its target climbs out of the project; metrics.jsonl is a FIFO.
echo "OUTSIDE-THE-PROJECT" >"$WORK/outside.compute"
python3 - ".mlw/runs/$R/run.json" "$(realpath --relative-to=".mlw/runs/$R/snapshot/aml_config" "$WORK")/outside" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["target"] = sys.argv[2]
json.dump(d, open(sys.argv[1], "w"))
PY
rm -f ".mlw/runs/$R/metrics.jsonl"
mkfifo ".mlw/runs/$R/metrics.jsonl"
RUN_TIMEOUT=60 run_mlw experiment diagnostics -r "$R" --file "$WORK/damaged.zip"
expect_eq "diagnostics of a damaged record with a FIFO (exit code: not hung)" "$CODE" 0
all=$(python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print(" ".join(z.namelist())); sys.stdout.write("".join(z.read(n).decode() for n in z.namelist()))' "$WORK/damaged.zip")
expect_not_contains "… no file from outside the project" "$all" "OUTSIDE-THE-PROJECT"
expect_not_contains "… no entry name that climbs" "$(head -1 <<<"$all")" ".."
expect_contains "… says why the FIFO was left out" "$all" "metrics.jsonl: left out, not a regular file"

# --- restart policy on SSH targets: the run's own process there runs the script again -------------
cat >flaky.py <<'PY'
import os, sys
n = int(os.environ["MLW_RESTART_COUNT"])
box = os.path.join(os.environ["MLW_CHECKPOINT_DIR"], "attempts")
with open(box, "a") as f:
    f.write(f"{n}\n")
print("ATTEMPT", n, "SAW", " ".join(open(box).read().split()), flush=True)
sys.exit(int(sys.argv[1]) if n < int(sys.argv[2]) else 0)
PY
cat >slow.py <<'PY'
import os, time
print("ATTEMPT", os.environ["MLW_RESTART_COUNT"], flush=True)
time.sleep(60)
PY
sed -i '/scipy=1.11/d' aml_config/conda_dependencies.yml  # (the test image has no conda)
"$MLW" -q computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin \
  --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null 2>&1
printf 'restart:\n  onExitCodes: [75]\n  maxRestarts: 2\n  backoffSeconds: 1\n' >>aml_config/rd.compute
echo 'restart: {onFailure: true, maxRestarts: 1, backoffSeconds: 0}' >>aml_config/rem.compute
# restarted_twice NAME KIND: flaky.py exits 75 twice on NAME (onExitCodes [75], maxRestarts 2,
# backoffSeconds 1), is restarted, and completes: each attempt and marker, one record.
restarted_twice() {
  run_mlw experiment submit -c "$1" flaky.py 75 2
  expect_eq "$2: a script that exits 75 twice, restarted, then completes" "$CODE" 0
  expect_eq "$2: each attempt in the log, a marker before each restart, one checkpoint folder" \
    "$(grep -E '^(ATTEMPT|mlw: restart)' <<<"$OUT")" \
    "$(printf '%s\n' 'ATTEMPT 0 SAW 0' 'mlw: restart 1 of 2 after exit code 75 (in 1 s)' 'ATTEMPT 1 SAW 0 1' \
      'mlw: restart 2 of 2 after exit code 75 (in 1 s)' 'ATTEMPT 2 SAW 0 1 2')"
  expect_eq "$2: one record: Completed, restarts 2" \
    "$(json_get "$("$MLW" -o json history last)" '(d["status"], d["exit_code"], d["restarts"])')" "('Completed', 0, 2)"
}
restarted_twice rd remotedocker
run_mlw experiment submit -c rd flaky.py 76 9
expect_eq "an exit code the policy does not name is not restarted" \
  "$CODE $(json_get "$("$MLW" -o json history last)" 'd.get("restarts", 0)')" "76 0"
run_mlw experiment submit -c rem flaky.py 3 9
expect_eq "remote, onFailure, maxRestarts 1: the loop is bounded, the last attempt's code kept" \
  "$CODE $(json_get "$("$MLW" -o json history last)" '(d["status"], d["restarts"])')" "3 ('Failed', 1)"
# (on rem, whose policy restarts on any failure: a stopped script's 143 too, were it not stopped)
S=$("$MLW" -o json experiment submit -a -c rem slow.py | json_get "$(cat)" 'd["run_id"]')
check "a long run with a restart policy starts" wait_for 30 bash -c "'$MLW' history logs -r $S | grep -q 'ATTEMPT 0'"
run_mlw experiment cancel -r "$S"
expect_eq "cancel stops it and it is not restarted" "$(run_state "$S")" "Canceled 143"
expect_not_contains "… no restart in its log" "$("$MLW" history logs -r "$S")" "mlw: restart"
# A cancel in the pause between two attempts ends the run there: the script never starts again.
sed -i 's/^restart:.*/restart: {onFailure: true, maxRestarts: 1, backoffSeconds: 30}/' aml_config/rem.compute
S=$("$MLW" -o json experiment submit -a -c rem flaky.py 3 9 | json_get "$(cat)" 'd["run_id"]')
check "a run in the pause between its attempts" \
  wait_for 30 bash -c "'$MLW' history logs -r $S | grep -q 'mlw: restart 1 of 1'"
run_mlw experiment cancel -r "$S"
expect_eq "cancel in the pause between attempts: Canceled" "$(run_state "$S" | cut -d' ' -f1)" "Canceled"
expect_eq "… the script did not start again" "$("$MLW" history logs -r "$S" | grep -c '^ATTEMPT')" 1
sed -i 's/^restart:.*/restart: {onFailure: true, maxRestarts: 1, backoffSeconds: 0}/' aml_config/rem.compute
# On a docker target (through the Engine API) the container's own process runs the script again.
cp aml_config/docker.compute "$WORK/docker.compute"
printf 'restart:\n  onExitCodes: [75]\n  maxRestarts: 2\n  backoffSeconds: 1\n' >>aml_config/docker.compute
restarted_twice docker docker
echo 'restart: {onFailure: true}' >>"$WORK/docker.compute"
cp "$WORK/docker.compute" aml_config/docker.compute
S=$("$MLW" -o json experiment submit -a -c docker slow.py | json_get "$(cat)" 'd["run_id"]')
check "a long docker run with a restart policy starts" wait_for 60 bash -c "'$MLW' history logs -r $S | grep -q 'ATTEMPT 0'"
run_mlw experiment cancel -r "$S"
expect_eq "cancel stops it and it is not restarted (docker)" "$(run_state "$S")" "Canceled 143"
expect_not_contains "… no restart in its log (docker)" "$("$MLW" history logs -r "$S")" "mlw: restart"
sed -i '/^restart:/d' aml_config/docker.compute
echo 'restart: {onFailure: true}' >>aml_config/local.compute
expect_error "restart on a target mlw does not restart on" 125 "restart applies to remote, remotedocker and docker" \
  experiment submit -c local flaky.py 1 0
sed -i '/^restart:/d' aml_config/local.compute

docker rmi -f "$image" >/dev/null 2>&1
finish
