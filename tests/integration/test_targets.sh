#!/usr/bin/env bash
# Compute targets: attach/list/show/detach, the secret store, Workbench 2017 files, bad config.
source "$(dirname "$0")/lib.sh"

new_project proj
SECRET='S3cr3t pass "with" $(quotes)'

run_mlw computetarget attach local -n mylocal
expect_eq "attach local" "$CODE" 0
expect_contains "attach prints what it wrote" "$OUT" "aml_config/mylocal.compute"
check "attach local wrote the runconfig" grep -q 'Target: "mylocal"' aml_config/mylocal.runconfig

run_mlw computetarget attach docker -n gpu --base-image mlw-test/python:3.11 --nvidia-docker
expect_eq "attach docker" "$CODE" 0
check "docker compute has the base image" grep -q 'baseDockerImage: "mlw-test/python:3.11"' aml_config/gpu.compute
check "docker compute has nvidiaDocker true" grep -q 'nvidiaDocker: true' aml_config/gpu.compute

printf '%s\n' "$SECRET" | "$MLW" computetarget attach remotedocker -n my_dsvm -a 'gpu-vm.example.com:2222' -u me --password-stdin --no-connect >"$WORK/o" 2>"$WORK/e"
expect_eq "attach remotedocker --password-stdin" "$?" 0
expect_not_contains "no warning for --password-stdin" "$(cat "$WORK/e")" "process list"
check "compute holds a reference" grep -q 'password: "MlwSecret=my_dsvm#me#' aml_config/my_dsvm.compute
check "the password is nowhere in the project" bash -c "! grep -rqF 'S3cr3t' ."
STORE="$XDG_CONFIG_HOME/mlw/secrets.json"
check "the secret store holds it" grep -qF 'S3cr3t pass' "$STORE"
expect_eq "secret store mode" "$(stat -c %a "$STORE")" "600"
expect_eq "config folder mode" "$(stat -c %a "$XDG_CONFIG_HOME/mlw")" "700"

run_mlw computetarget attach remote -n box -a '[::1]:2200' -u me --no-connect -w 'pw-on-command-line'
expect_eq "attach remote -w" "$CODE" 0
expect_contains "-w warns about the process list" "$ERR" "process list"

run_mlw -o json computetarget list
expect_eq "list json parses" "$(json_get "$OUT" '",".join(r["name"] for r in d)')" "box,docker,gpu,local,my_dsvm,mylocal"
run_mlw computetarget list
expect_contains "list table has a header" "$OUT" "NAME"
run_mlw -o tsv computetarget list
expect_contains "list tsv" "$OUT" $'my_dsvm\tremotedocker\tgpu-vm.example.com:2222'
run_mlw -o yaml computetarget show -n my_dsvm
expect_contains "show yaml" "$OUT" 'address: "gpu-vm.example.com:2222"'
expect_not_contains "show never prints the password" "$OUT" "S3cr3t"

expect_error "existing name refused" 1 "add --force" computetarget attach local -n mylocal
printf 'Target: orphan\n' >aml_config/orphan.runconfig
expect_error "a name whose run configuration alone exists is refused, naming that file" 1 \
  "(aml_config/orphan.runconfig); add --force" computetarget attach local -n orphan
rm aml_config/orphan.runconfig
run_mlw computetarget attach local -n mylocal --force --python python3
expect_eq "--force replaces" "$CODE" 0
printf 'new\n' | "$MLW" -q computetarget attach remotedocker -n my_dsvm -a h -u me --password-stdin --force --no-connect >/dev/null 2>&1
check "--force replaced the old secret" bash -c "! grep -qF 'S3cr3t' '$STORE' && grep -q '\"new\"' '$STORE'"

expect_error "bad name" 2 "may only contain" computetarget attach local -n ../x
expect_error "65-char name" 2 "at most 64" computetarget attach local -n "$(printf 'b%.0s' {1..65})"
expect_error "bad port" 2 "port" computetarget attach remote -n r1 -a host:99999 -u me -w x
expect_error "unclosed bracket" 2 "missing ']'" computetarget attach remote -n r1 -a '[::1:22' -u me -w x
expect_error "remote needs an address" 2 "needs an address" computetarget attach remote -n r1 -u me
expect_error "password for local refused" 2 "mlw computetarget attach local --help" computetarget attach local -n l2 -w x
check "failed attaches wrote nothing" bash -c "! ls aml_config | grep -qE '^(r1|l2|x)\\.'"

chmod 644 "$STORE"
expect_error "loose secret store refused" 1 "chmod 600" computetarget attach remote -n r2 -a h -u me --no-connect -w x
check "refused attach wrote nothing" test ! -e aml_config/r2.compute
chmod 600 "$STORE"

run_mlw computetarget detach -n my_dsvm
expect_eq "detach" "$CODE" 0
check "detach removed both files" test ! -e aml_config/my_dsvm.compute -a ! -e aml_config/my_dsvm.runconfig
check "detach removed the secret" bash -c "! grep -q my_dsvm '$STORE'"
expect_error "detach unknown" 1 'did you mean "box"' computetarget detach -n bux
# Every secret goes with its target: the key's passphrase as well as a password.
ssh-keygen -q -t ed25519 -N 'KeyPass99' -f "$WORK/pp_key"
run_mlw computetarget attach remote -n withkey -a h -u me --private-key-file "$WORK/pp_key" \
  --private-key-passphrase 'KeyPass99' --no-connect
expect_eq "attach with a key passphrase" "$CODE" 0
check "the passphrase is in the secret store" grep -qF 'KeyPass99' "$STORE"
run_mlw computetarget detach -n withkey
expect_eq "detach of a target with a key passphrase" "$CODE" 0
check "detach removed the key's passphrase too" bash -c "! grep -qF 'KeyPass99' '$STORE'"

# Files written by Azure ML Workbench (2017) load unchanged.
mkdir -p "$WORK/wb" && cp -r "$MLW_SOURCE_DIR/tests/data/workbench2017" "$WORK/wb/aml_config"
cd "$WORK/wb"
printf 'import os\nprint("EXAMPLE", os.environ["EXAMPLE_ENV_VAR"])\n' >train.py
run_mlw -o json computetarget list
expect_eq "Workbench targets listed" "$(json_get "$OUT" '[(r["name"], r["type"]) for r in d]')" "[('docker', 'docker'), ('local', 'local'), ('my_dsvm', 'remotedocker')]"
expect_eq "no warnings for Workbench files" "$ERR" ""
run_mlw experiment submit -c local train.py
expect_eq "legacy JSON local.runconfig runs" "$CODE" 0
expect_contains "EnvironmentVariables reach the script" "$OUT" "EXAMPLE Example Value"
expect_contains "ignored Workbench keys are noted once" "$ERR" "UseSampling"
run_mlw experiment submit -c local train.py
expect_not_contains "the note is shown only on first use" "$ERR" "UseSampling"

# A 2017 secret reference: mlw advises attach --force, which keeps every key the user set and
# changes only what the command names (the .runconfig not at all).
cp aml_config/my_dsvm.runconfig "$WORK/dsvm.runconfig.before"
printf 'pw\n' | "$MLW" computetarget attach remotedocker -n my_dsvm --force --password-stdin --no-connect >/dev/null 2>"$WORK/e"
expect_eq "re-attach --force (2017 file)" "$?" 0
for line in 'baseDockerImage: "microsoft/mmlspark:plus-gpu-0.7.91"' 'nvidiaDocker: true' \
  'nativeSharedDirectory: "~/.azureml/share/"' 'sharedVolumes: true' 'username: "azureuser"' \
  'address: "my-dsvm.eastus2.cloudapp.azure.com"' '# Compute target for a remote Linux machine (DSVM)'; do
  check "re-attach --force kept: $line" grep -qxF "$line" aml_config/my_dsvm.compute
done
check "re-attach --force: the 2017 reference replaced by mlw's" grep -q '^password: "MlwSecret=my_dsvm#azureuser#' aml_config/my_dsvm.compute
check "re-attach --force left the .runconfig as it was" cmp -s aml_config/my_dsvm.runconfig "$WORK/dsvm.runconfig.before"
"$MLW" -q computetarget attach remotedocker -n my_dsvm -a 'gpu2.example.com:2222' --force --no-connect >/dev/null 2>&1
check "re-attach -a changes the address" grep -qxF 'address: "gpu2.example.com:2222"' aml_config/my_dsvm.compute
check "... and nothing else" grep -qxF 'nvidiaDocker: true' aml_config/my_dsvm.compute
check "... keeping the stored password" grep -q '^password: "MlwSecret=my_dsvm#azureuser#' aml_config/my_dsvm.compute
run_mlw computetarget list
expect_eq "the re-attached files load without a warning" "$ERR" ""

# Bad configuration: one line with file:line:column, exit 125 from submit, nothing recorded.
cd "$WORK/proj"
printf 'type: "local"\npythonLocation: "python3"\nnvidiaDocker: maybe\n' >aml_config/bad.compute
printf 'Target: "bad"\nFramework: "Python"\n' >aml_config/bad.runconfig
BEFORE=$("$MLW" -o tsv history list --top 0 | wc -l)
expect_error "wrong value type" 125 "aml_config/bad.compute:3:15: nvidiaDocker must be true or false" experiment submit -c bad train.py
printf 'type: "local"\npythonLocaton: "python3"\n' >aml_config/bad.compute
run_mlw experiment submit -c bad train.py
expect_contains "unknown key warns with a suggestion" "$ERR" 'aml_config/bad.compute:2: unknown key "pythonLocaton" (did you mean "pythonLocation"?)'
printf 'type: "local"\nx: [\n' >aml_config/bad.compute
expect_error "malformed YAML" 125 "aml_config/bad.compute:3:1: malformed YAML" experiment submit -c bad train.py
# A 1 KB alias bomb in a committed file (issue 45): refused in one line, not walked for ever.
yaml_alias_bomb 'type: "local"' >aml_config/bad.compute
RUN_TIMEOUT=60 expect_error "a YAML alias bomb" 125 "aml_config/bad.compute: too large to read" experiment submit -c bad train.py
RUN_TIMEOUT=60 run_mlw computetarget list
expect_contains "a YAML alias bomb in computetarget list" "$ERR" "aml_config/bad.compute: too large to read"
expect_eq "computetarget list ends (not killed)" "$([ "$CODE" -ne 124 ] && echo ended)" "ended"
expect_error "unknown run configuration" 125 'did you mean "local"' experiment submit -c locl train.py
printf 'Target: "nowhere"\n' >aml_config/bad.runconfig
expect_error "runconfig naming a missing target" 125 'no compute target named "nowhere"' experiment submit -c bad train.py
expect_error "bad target via -t" 125 'did you mean "local"' experiment submit -c local -t lcal train.py
AFTER=$("$MLW" -o tsv history list --top 0 | wc -l)
expect_eq "bad config recorded no run" "$AFTER" "$((BEFORE + 1))"

run_mlw computetarget list
expect_contains "list survives a broken file" "$OUT" "(invalid)"

# A port that accepts but never speaks SSH: the handshake step is named, with a reason.
python3 - "$WORK/silent.port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held = []
end = time.time() + 60
s.settimeout(1)
while time.time() < end:
    try:
        held.append(s.accept()[0])
    except OSError:
        pass
PY
STARTED_PIDS+=($!)
check "the silent server listens" wait_for 10 test -s "$WORK/silent.port"
MLW_SSH_CONNECT_TIMEOUT=1 expect_error "a server that sends no SSH banner" 1 \
  "handshake: no SSH answer within 1 s" computetarget attach remote -n silent \
  -a "127.0.0.1:$(cat "$WORK/silent.port")" -u me -w x --accept-host-key

finish
