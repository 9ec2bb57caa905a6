#!/usr/bin/env bash
# A target that lies or talks, against the real sshd, Docker engine and Slurm cluster of
# tests/fixtures/servers.sh, as the user mlwhostile: a ~/.bashrc that prints on stdout and stderr
# (remote, remotedocker, slurm), fake `tar` and `cat` first on that user's PATH (a malformed
# outputs stream, exit codes that are not ones, "running" where an exit code is read),
# environment variable names that would inject commands, project folders whose names docker
# refuses, and metrics that would crash a recursive parser.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_HOSTILE_USER \
  MLW_TEST_IMAGE DOCKER_HOST SLURM_CONF
via_link
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
HUSER=$MLW_TEST_HOSTILE_USER
USER_HOME=$(getent passwd "$HUSER" | cut -d: -f6)
export MLW_RECONNECT_TIMEOUT=20
rm -rf "$USER_HOME/.mlw" "$USER_HOME/.ssh" "$USER_HOME/evil"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
# run_bounded SECONDS ARGS...: run_mlw that cannot hang the suite (a lying target once made
# runs loop for ever); 124 when it had to be stopped.
run_bounded() {
  local limit=$1
  shift
  timeout -k 5 "$limit" "$MLW" "$@" >"$WORK/.out" 2>"$WORK/.err" </dev/null
  CODE=$?
  OUT=$(cat "$WORK/.out")
  ERR=$(cat "$WORK/.err")
}

# The login node's greeting, as HPC sites and conda hooks print it, on both streams; and, when
# evil/ exists, fake tools first on PATH.
cat >"$WORK/bashrc" <<'RC'
echo "Welcome to the login node. Module gcc/12 loaded."
echo "conda: base environment activated" >&2
printf 'no newline at the end'
[ -d "$HOME/evil" ] && export PATH="$HOME/evil:$PATH"
RC
install -o "$HUSER" -m 0644 "$WORK/bashrc" "$USER_HOME/.bashrc"
trap 'rm -rf "$USER_HOME/evil"; rm -f "$USER_HOME/.bashrc"; cleanup' EXIT

new_project hostile
cat >hello.py <<'PY'
import os, sys
os.makedirs("outputs", exist_ok=True)
open("outputs/result.txt", "w").write("result\n")
print("HELLO", sys.argv[1:], flush=True)
PY

attach() { # TYPE NAME [OPTIONS...]
  local type=$1 name=$2
  shift 2
  "$MLW" computetarget attach "$type" -n "$name" -a "$ADDR" -u "$HUSER" --password-stdin \
    --accept-host-key "$@" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
}

# --- a ~/.bashrc that prints ------------------------------------------------------------------
attach remote rem
expect_eq "attach remote through a printing .bashrc" "$?" 0
attach remotedocker rd --base-image "$MLW_TEST_IMAGE"
expect_eq "attach remotedocker through a printing .bashrc" "$?" 0
# Held for the rest of the suite: test_slurm stops the controller only when no job of this suite
# can meet it away.
check "the Slurm cluster is not being stopped" slurm_lock shared
attach slurm sl
expect_eq "attach slurm through a printing .bashrc" "$?" 0
run_mlw computetarget doctor -n rem
expect_eq "doctor through a printing .bashrc" "$CODE" 0
for target in rem rd sl; do
  run_bounded 300 experiment submit -c "$target" hello.py a1
  expect_eq "$target: a run through a printing .bashrc succeeds" "$CODE" 0
  expect_contains "$target: its output" "$OUT" "HELLO ['a1']"
  expect_not_contains "$target: the greeting is not in the run's output" "$OUT" "Welcome"
  expect_not_contains "$target: nor in its messages" "$ERR" "cannot start the run"
  ID=$(ls -t .mlw/runs | head -1)
  expect_eq "$target: Completed" "$(json_get "$(cat ".mlw/runs/$ID/run.json")" 'd["status"]')" Completed
  expect_eq "$target: the output came back" "$(cat ".mlw/runs/$ID/outputs/result.txt" 2>/dev/null)" result
done

# --- a lying tar: malformed output streams ----------------------------------------------------
mkdir -p "$USER_HOME/evil"
# NAME CONTENT: a fake tool in evil/ (the real one for every other use).
fake() { install -o "$HUSER" -m 0755 /dev/stdin "$USER_HOME/evil/$1"; }
fake tar <<'SH'
#!/bin/sh
[ "$1 $2 $3" = "-cf - outputs" ] || exec /bin/tar "$@"
# One good file, then a pax header whose only record has length 0 (looped forever once).
python3 - <<'PY'
import sys, tarfile, io
out = sys.stdout.buffer
def header(name, typ, size):
    info = tarfile.TarInfo(name); info.size = size; info.type = typ
    return info.tobuf(format=tarfile.GNU_FORMAT)
out.write(header("outputs/good.txt", tarfile.REGTYPE, 5) + b"good\n".ljust(512, b"\0"))
out.write(header("pax", b"x", 9) + b"0 path=x\n".ljust(512, b"\0"))
out.write(header("outputs/after.txt", tarfile.REGTYPE, 5) + b"late\n".ljust(512, b"\0"))
out.write(b"\0" * 1024)
PY
SH
START=$(date +%s)
# evil/ is new in the home folder: the kept connection's shell started ahead is stale, and the
# probe goes to a shell started now with all its input, the part sent ahead first.
run_bounded 120 -vv experiment submit -c rem hello.py
expect_eq "a malformed outputs stream: the run still ends (the script's exit code)" "$CODE" 0
expect_contains "the shell started ahead of evil/ was stale" "$ERR" "asking for one started now"
check "the probe in the shell started now had its whole input (its ship did not fail)" \
  test -z "$(printf '%s\n' "$ERR" | grep 'the ship in the probe ended')"
check "it ends at once (under 60 s), no loop" test $(($(date +%s) - START)) -lt 60
ID=$(ls -t .mlw/runs | head -1)
RECORD=$(cat ".mlw/runs/$ID/run.json")
expect_contains "the problem names the target and the fault" "$(json_get "$RECORD" 'd["problems"]')" \
  "outputs could not all be brought back from"
expect_contains "and says what was wrong" "$(json_get "$RECORD" 'd["problems"]')" "a pax record whose length is wrong"
expect_eq "what arrived before the fault is kept" "$(cat ".mlw/runs/$ID/outputs/good.txt" 2>/dev/null)" good
check "what came after it is not" test ! -e ".mlw/runs/$ID/outputs/after.txt"
rm -f "$USER_HOME/evil/tar"
# A tar whose names climb out of the run folder (../, an absolute path, a/../../..) and a link to
# /etc/passwd: each refused and named in the record, the good file kept (issue 45: a second layer
# under the unit test of SafeTarReader).
fake tar <<'SH'
#!/bin/sh
[ "$1 $2 $3" = "-cf - outputs" ] || exec /bin/tar "$@"
python3 - <<'PY'
import sys, tarfile
out = sys.stdout.buffer
def member(name, data=b"", typ=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name); info.size = len(data); info.type = typ; info.linkname = link
    out.write(info.tobuf(format=tarfile.GNU_FORMAT) + data.ljust((len(data) + 511) // 512 * 512, b"\0"))
member("outputs/ok.txt", b"ok\n")
member("../../../../../../../../tmp/mlw-escaped-1.txt", b"bad\n")
member("/tmp/mlw-escaped-2.txt", b"bad\n")
member("outputs/a/../../../../../../../../../tmp/mlw-escaped-3.txt", b"bad\n")
member("outputs/passwd", typ=tarfile.SYMTYPE, link="/etc/passwd")
out.write(b"\0" * 1024)
PY
SH
rm -f /tmp/mlw-escaped-[123].txt
run_bounded 120 experiment submit -c rem hello.py
expect_eq "a tar with names that climb: the run ends with the script's code" "$CODE" 0
ID=$(ls -t .mlw/runs | head -1)
check "no file written outside the run folder" bash -c '! ls /tmp/mlw-escaped-[123].txt 2>/dev/null | grep -q .'
check "… none under the project's .mlw" bash -c "! find .mlw -name 'mlw-escaped-*' | grep -q ."
check "the link is not made" test ! -L ".mlw/runs/$ID/outputs/passwd"
expect_eq "the good file is kept" "$(cat ".mlw/runs/$ID/outputs/ok.txt" 2>/dev/null)" ok
expect_eq "each refused entry is named in the record" \
  "$(json_get "$(cat ".mlw/runs/$ID/run.json")" 'sum(p.startswith("output refused: ") for p in d["problems"])')" 4
rm -f "$USER_HOME/evil/tar"

# --- exit codes that are not ones -------------------------------------------------------------
# The monitor's own tools lie: a fake mv puts something else where the exit code goes (the end
# is read by the shell itself, no cat to fake).
fake mv <<'SH'
#!/bin/sh
[ "$1" = exit_code.tmp ] && { echo 4096 > exit_code; rm -f exit_code.tmp; exit 0; }
exec /bin/mv "$@"
SH
run_bounded 120 experiment submit -c rem hello.py
check "exit code 4096 from the target: submit fails" test "$CODE" -ne 0
ID=$(ls -t .mlw/runs | head -1)
RECORD=$(cat ".mlw/runs/$ID/run.json")
expect_eq "the run is Failed" "$(json_get "$RECORD" 'd["status"]')" Failed
expect_contains "the reason names the answer" "$(json_get "$RECORD" 'd["problems"]')" \
  'answered "4096" where the run'
fake mv <<'SH'
#!/bin/sh
[ "$1" = exit_code.tmp ] && { echo running > exit_code; rm -f exit_code.tmp; exit 0; }
exec /bin/mv "$@"
SH
run_bounded 120 experiment submit -c rem hello.py
check "'running' where an exit code is read: submit ends, and fails" test "$CODE" -ne 0 -a "$CODE" -ne 124
ID=$(ls -t .mlw/runs | head -1)
expect_eq "the run is Failed" "$(json_get "$(cat ".mlw/runs/$ID/run.json")" 'd["status"]')" Failed
rm -f "$USER_HOME/evil/mv"

# --- an endless answer to the ship, in the submitting mlw ------------------------------------
# A fake awk answers the ship's question (which objects the store lacks) with names for ever.
# mlw must stop reading at a bound, say so in one line and exit 125, its SSH channel and session
# freed on the way out of the throwing output callback: the sanitizer pass of scripts/test runs
# this under LeakSanitizer, where a leak changes the exit code and prints its report (shown by
# breaking the session owner's free: this case and every other SSH command then fail).
REAL_AWK=$(command -v awk)
fake awk <<SH
#!/bin/sh
case "\$1" in *'in have'*) exec yes "$(printf '%064d' 0)" ;; esac
exec $REAL_AWK "\$@"
SH
echo "# changed" >>hello.py
# Over 16 KiB of names (a short list is checked by the target's shell itself, without awk).
mkdir many
for i in $(seq 300); do echo "$i" >"many/$i.txt"; done
START=$(date +%s)
run_bounded 120 experiment submit -c rem hello.py
expect_eq "an endless ship answer: submit cannot start the run (125)" "$CODE" 125
check "it stops at once (under 60 s), no memory growing for ever" test $(($(date +%s) - START)) -lt 60
# The submit asks the store in the probe's round trip: the probe's bound stops it.
expect_contains "one line names the target and the fault" "$ERR" \
  "answered the probe with more than"
expect_not_contains "no sanitizer report" "$ERR" "Sanitizer"
rm -f "$USER_HOME/evil/awk"
run_bounded 300 experiment submit -c rem hello.py
expect_eq "the real awk back: the same run ships and completes" "$CODE" 0
rm -rf many

# --- metrics that would crash a recursive parser ---------------------------------------------
cat >deep.py <<'PY'
import json, os
with open(os.environ["MLW_METRICS_FILE"], "a") as f:
    f.write(json.dumps({"name": "loss", "value": 0.5}) + "\n")
    f.write('{"name": "deep", "value": ' + "[" * 60000 + "]" * 60000 + "}\n")
    f.write("not json at all\n")
    # A well-formed metric on a line past the 1 MiB line limit (issue 45): skipped, not read.
    f.write('{"name": "big", "value": 1' + " " * (2 << 20) + "}\n")
    f.write(json.dumps({"name": "acc", "value": 0.9}) + "\n")
print("DEEP written", flush=True)
PY
for target in local rem; do
  run_bounded 300 experiment submit -c "$target" deep.py
  expect_eq "$target: metrics nested 60,000 deep: the run completes" "$CODE" 0
  ID=$(ls -t .mlw/runs | head -1)
  run_mlw history info -r "$ID" -o json
  expect_eq "$target: history info does not crash" "$CODE" 0
  expect_eq "$target: the good metrics are kept" "$(json_get "$OUT" 'd["metrics"]')" "{'loss': 0.5, 'acc': 0.9}"
  expect_contains "$target: the bad lines (and the one over 1 MiB) are counted in problems" \
    "$(json_get "$OUT" 'd["problems"]')" "metrics.jsonl: 3 lines skipped"
  run_mlw history info -r "$ID"
  expect_eq "$target: history info as a table too" "$CODE" 0
done

# --- a lying perl, a lying curl, a lying wc ---------------------------------------------------
# The probe asks the Docker engine for the image, and the monitor has it create the container
# and attach, start and wait for it, with Perl's builtins on its socket, else with curl: through
# the real engine neither asks curl, the container is made through the socket (its answer,
# create.out, in the run folder) and its end read there (engine_code). A perl or curl that
# answers nonsense sends both to the docker CLI. The metrics' size comes from wc: a wrong answer
# is a problem of the run, which still ends, its outputs and metrics not trusted.
fake curl <<'SH'
#!/bin/sh
echo "curl $*" >> "$HOME/curl.calls"
echo '<html>not an engine</html>'
SH
rm -f "$USER_HOME/curl.calls"
run_bounded 300 experiment submit -c rd hello.py p0
expect_eq "rd: through the real engine: the run completes" "$CODE" 0
ID=$(ls -t .mlw/runs | head -1)
check "rd: the engine was asked with perl, curl was not started" test ! -e "$USER_HOME/curl.calls"
expect_contains "rd: the container was created through the engine's socket" \
  "$(cat "$USER_HOME/.mlw/runs/$ID/create.out" 2>/dev/null)" '"Id"'
expect_eq "rd: and attached, started and waited for there (its code written by the monitor's perl)" \
  "$(cat "$USER_HOME/.mlw/runs/$ID/engine_code" 2>/dev/null)" 0
fake perl <<'SH'
#!/bin/sh
echo '<html>not an engine</html>'
SH
run_bounded 300 experiment submit -c rd hello.py l1
expect_eq "rd: a perl that answers nonsense: the docker CLI is asked, the run completes" "$CODE" 0
expect_contains "rd: its output" "$OUT" "HELLO ['l1']"
fake perl <<'SH'
#!/bin/sh
exit 3
SH
run_bounded 300 experiment submit -c rd hello.py c1
expect_eq "rd: a perl that cannot connect and a curl that answers nonsense: the run completes" \
  "$CODE" 0
expect_contains "rd: its output" "$OUT" "HELLO ['c1']"
expect_contains "rd: curl was asked where perl could not connect" \
  "$(cat "$USER_HOME/curl.calls" 2>/dev/null)" "--unix-socket"
# A perl that never returns (issue 33: submit and prepare hung for ever while doctor said all was
# well): the probe, doctor's too, is bounded on mlw's side, and the line names the tools.
fake perl <<'SH'
#!/bin/sh
exec sleep 60
SH
for command in "experiment submit -c rd hello.py h1" "experiment prepare -c rd" "computetarget doctor -n rd"; do
  started=$SECONDS
  # shellcheck disable=SC2086
  MLW_PROBE_TIMEOUT=4 run_bounded 60 $command
  check "rd: a perl that never returns: $command ends (in $((SECONDS - started)) s)" \
    test "$CODE" -ne 0 -a "$CODE" -ne 124 -a $((SECONDS - started)) -lt 30
  expect_contains "rd: … $command says which step and which tools" "$OUT$ERR" \
    "the probe (docker, perl and curl there) did not answer in 4 s (MLW_PROBE_TIMEOUT)"
done
rm -f "$USER_HOME/evil/curl" "$USER_HOME/evil/perl" "$USER_HOME/curl.calls"
fake wc <<'SH'
#!/bin/sh
[ "$1" = -c ] && { echo 'many bytes'; exit 0; }
exec /usr/bin/wc "$@"
SH
run_bounded 120 experiment submit -c rem deep.py
expect_eq "rem: a wc that lies about metrics.jsonl: the run still ends as it did" "$CODE" 0
ID=$(ls -t .mlw/runs | head -1)
expect_contains "rem: the problem says what was wrong" \
  "$(json_get "$(cat ".mlw/runs/$ID/run.json")" 'd["problems"]')" \
  "where the size of metrics.jsonl was expected"
# The metrics a run streams as it logs them (lines up to 4000 bytes) are its own and stay; the
# block that a lying size announces adds nothing: the copy here holds only lines deep.py wrote.
printf '%s\n' '{"name": "loss", "value": 0.5}' 'not json at all' '{"name": "acc", "value": 0.9}' \
  >streamed.lines
check "rem: nothing from a wrong size in metrics.jsonl (only the lines the run streamed)" \
  test -z "$(grep -v -x -F -f streamed.lines ".mlw/runs/$ID/metrics.jsonl" 2>/dev/null | head -c 200)"
rm -f streamed.lines
rm -f "$USER_HOME/evil/wc"

# --- bytes that are not UTF-8 ----------------------------------------------------------------
cat >bytes.py <<'PY'
import os, sys
args = [a.encode("utf-8", "surrogateescape") for a in sys.argv[1:]]
value = os.environ.get("ODD", "").encode("utf-8", "surrogateescape")
print("BYTES", args, value, os.path.exists(b"d\xff.bin"), flush=True)
os.makedirs("outputs", exist_ok=True)
open(b"outputs/caf\xe9.txt", "w").write("x")
PY
touch $'d\xff.bin'
sed -i "s#^baseDockerImage:.*#baseDockerImage: \"$MLW_TEST_IMAGE\"#" aml_config/docker.compute
# Slurm with docker on the nodes: the docker CLI's JSON cannot carry these bytes either.
attach slurm slc --container "$MLW_TEST_IMAGE"
expect_eq "attach slurm with a container" "$?" 0
for target in local docker rem rd sl slc; do
  run_bounded 300 experiment submit -c "$target" -e $'ODD=v\xe9' bytes.py $'caf\xe9' $'\xff\xfe' 'ok'
  expect_eq "$target: a run with arguments, a value and a file name that are not UTF-8" "$CODE" 0
  expect_contains "$target: the script got them byte for byte" "$OUT" \
    "BYTES [b'caf\\xe9', b'\\xff\\xfe', b'ok'] b'v\\xe9' True"
  ID=$(ls -t .mlw/runs | head -1)
  check "$target: the output named in Latin-1 came back" test -e ".mlw/runs/$ID/outputs/"$'caf\xe9.txt'
  run_mlw history info -r "$ID"
  expect_contains "$target: history info shows the arguments escaped" "$OUT" 'caf\xe9, \xff\xfe, ok'
  run_mlw history info -r "$ID" -o json
  expect_eq "$target: the record keeps the bytes" \
    "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["arguments"])' <<<"$OUT")" \
    "['\\x00caf\\\\xe9', '\\x00\\\\xff\\\\xfe', 'ok']"
done
rm -f $'d\xff.bin'

# --- environment variable names ---------------------------------------------------------------
shell_would_run "the injecting variable name" 'export X=$(id -un > /tmp/mlw-hostile-injected)=x' \
  /tmp/mlw-hostile-injected
for name in 'MY-VAR' 'X=$(id -un > /tmp/mlw-hostile-injected)'; do
  cp aml_config/rem.runconfig "$WORK/saved.runconfig"
  python3 - "$name" aml_config/rem.runconfig <<'PY'
import sys
name, path = sys.argv[1], sys.argv[2]
text = open(path).read()
import re
text = re.sub(r"^EnvironmentVariables:.*$", "EnvironmentVariables:\n  '%s': x" % name, text, flags=re.M)
open(path, "w").write(text)
PY
  expect_error "EnvironmentVariables key $name is refused (125, as other errors of submit)" 125 \
    "cannot name an environment variable" experiment submit -c rem hello.py
  expect_contains "with its place" "$ERR" "aml_config/rem.runconfig:"
  cp "$WORK/saved.runconfig" aml_config/rem.runconfig
done
check "nothing was injected on the target" test ! -e /tmp/mlw-hostile-injected
expect_error "-e with such a name is refused the same way" 125 "KEY made of letters" \
  experiment submit -c local -e 'MY-VAR=1' hello.py

# --- project folders docker would refuse ------------------------------------------------------
for folder in "my project" "résumé"; do
  mkdir -p "$WORK/$folder"
  cp -r aml_config hello.py "$WORK/$folder/"
  (
    cd "$WORK/$folder" || exit 1
    sed -i "s#^baseDockerImage:.*#baseDockerImage: \"$MLW_TEST_IMAGE\"#" aml_config/docker.compute
    "$MLW" experiment submit -c docker hello.py >"$WORK/o1" 2>"$WORK/e1"
    echo $? >"$WORK/c1"
    "$MLW" experiment submit -c rd hello.py >"$WORK/o2" 2>"$WORK/e2"
    echo $? >"$WORK/c2"
  )
  expect_eq "docker run of a project in \"$folder\"" "$(cat "$WORK/c1")" 0
  expect_contains "its output" "$(cat "$WORK/o1")" "HELLO"
  expect_eq "remotedocker run of a project in \"$folder\"" "$(cat "$WORK/c2")" 0
  expect_contains "its output" "$(cat "$WORK/o2")" "HELLO"
done

# --- known_hosts as users' machines have it ---------------------------------------------------
# Each case: a fresh ~/.ssh/known_hosts, then attach (no terminal).
HOSTNAME_FIELD="[127.0.0.1]:$MLW_TEST_SSH_PORT"
ED_KEY=$(cut -d' ' -f1,2 "$MLW_TEST_SSH_HOST_KEY")
EC_KEY=$(cut -d' ' -f1,2 "$MLW_TEST_SSH_ECDSA_KEY")
OTHER_ED=$(ssh-keygen -q -t ed25519 -N '' -f "$WORK/other" <<<y >/dev/null 2>&1; cut -d' ' -f1,2 "$WORK/other.pub")
kh_attach() { # NAME [--accept-host-key]: attach remote NAME with the current known_hosts
  "$MLW" computetarget attach remote -n "$1" -a "$ADDR" -u "$HUSER" --password-stdin "${@:2}" \
    <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
  CODE=$?
  ERR=$(cat "$WORK/e")
}
KH="$HOME/.ssh/known_hosts"
mkdir -p "$HOME/.ssh"
{
  printf '\r\n'
  head -c 5000 /dev/zero | tr '\0' 'x'
  printf '\n%s %s\n' "$HOSTNAME_FIELD" "${ED_KEY:0:40}"
  echo "$HOSTNAME_FIELD $OTHER_ED"
} >"$KH"
cp "$KH" "$WORK/kh.before"
kh_attach kh1 --accept-host-key
expect_eq "a changed key after unreadable lines is refused" "$CODE" 1
expect_contains "as CHANGED, naming its line" "$ERR" "CHANGED"
expect_contains "the line is the fourth" "$ERR" "remove line 4 of $KH"
check "--accept-host-key did not record the changed key" cmp -s "$KH" "$WORK/kh.before"

# ssh-keyscan's key of the test sshd into $KH (ssh-keyscan's options first). Asked up to three
# times: under a loaded CI run the sshd (MaxStartups) or the link emulator may drop an
# unauthenticated connection, and ssh-keyscan then records nothing.
keyscan() {
  for _ in 1 2 3; do
    ssh-keyscan "$@" -p "$MLW_TEST_SSH_PORT" 127.0.0.1 2>/dev/null >"$KH"
    [ -s "$KH" ] && return 0
    sleep 1
  done
}

# The server offers ED25519 and ECDSA; what ssh recorded is the type to use.
for type in ed25519 ecdsa; do
  keyscan -t "$type"
  expect_eq "ssh-keyscan recorded one $type key" "$(wc -l <"$KH")" 1
  kh_attach "kh2$type"
  expect_eq "a host first met by ssh with its $type key is known to mlw" "$CODE" 0
  check "nothing added" test "$(wc -l <"$KH")" -eq 1
done

keyscan -H -t ed25519
expect_contains "the name is hashed" "$(cat "$KH")" "|1|"
kh_attach kh3
expect_eq "a hashed known_hosts line is read" "$CODE" 0

printf '@revoked * %s\n%s %s\n' "$ED_KEY" "$HOSTNAME_FIELD" "$ED_KEY" >"$KH"
kh_attach kh4 --accept-host-key
expect_eq "a @revoked key is refused" "$CODE" 1
expect_contains "saying so" "$ERR" "@revoked"

printf '@cert-authority %s %s\n' "$HOSTNAME_FIELD" "$ED_KEY" >"$KH"
kh_attach kh5
expect_eq "a @cert-authority line is not a host key" "$CODE" 1
expect_contains "the key is unknown" "$ERR" "unknown host key"

mkdir -p "$HOME/dotfiles"
printf '# mine\n' >"$HOME/dotfiles/known_hosts"
chmod 600 "$HOME/dotfiles/known_hosts"
ln -sf "$HOME/dotfiles/known_hosts" "$KH"
kh_attach kh6 --accept-host-key
expect_eq "attach --accept-host-key through a symlinked known_hosts" "$CODE" 0
check "known_hosts is still a symlink" test -L "$KH"
expect_eq "its file keeps mode 600" "$(stat -c %a "$HOME/dotfiles/known_hosts")" 600
expect_contains "the key is in the real file" "$(cat "$HOME/dotfiles/known_hosts")" "$HOSTNAME_FIELD ssh-ed25519"
check "ssh itself accepts the line mlw wrote" ssh-keygen -F "$HOSTNAME_FIELD" -f "$HOME/dotfiles/known_hosts"

# --- ~/.ssh/config: ProxyJump through a second sshd, ProxyCommand ------------------------------
JPORT=$(free_port)
sed -e "s/^Port .*/Port $JPORT/" -e "s#^PidFile .*#PidFile $WORK/jump.pid#" \
  "$MLW_TEST_SERVERS/sshd_config" >"$WORK/jump_sshd_config"
/usr/sbin/sshd -f "$WORK/jump_sshd_config" -E "$WORK/jump.log"
check "the jump sshd started" wait_for 5 test -s "$WORK/jump.pid"
STARTED_PIDS+=("$(cat "$WORK/jump.pid")")
ssh-keygen -q -t ed25519 -N '' -f "$HOME/.ssh/id_jump" <<<y >/dev/null 2>&1
mkdir -p "$USER_HOME/.ssh"
cat "$HOME/.ssh/id_jump.pub" >>"$USER_HOME/.ssh/authorized_keys"
chown -R "$HUSER" "$USER_HOME/.ssh"
chmod 700 "$USER_HOME/.ssh"
chmod 600 "$USER_HOME/.ssh/authorized_keys"
rm -f "$KH"
cat >"$HOME/.ssh/config" <<CFG
Host jump
  HostName 127.0.0.1
  Port $JPORT
  User $HUSER
  IdentityFile $HOME/.ssh/id_jump
  IdentitiesOnly yes
  UserKnownHostsFile $HOME/.ssh/known_hosts_jump
  StrictHostKeyChecking accept-new
  BatchMode yes
Host viajump
  HostName 127.0.0.1
  Port $MLW_TEST_SSH_PORT
  ProxyJump jump
  ForwardAgent no
  UserKnownHostsFile $HOME/.ssh/known_hosts_targets
  StrictHostKeyChecking accept-new
Host viacmd
  HostName 127.0.0.1
  Port $MLW_TEST_SSH_PORT
  ProxyCommand bash -c 'echo used >$WORK/proxy-used; exec 3<>/dev/tcp/%h/%p; cat <&3 & exec cat >&3'
  StrictHostKeyChecking accept-new
  UserKnownHostsFile $HOME/.ssh/known_hosts_targets
Host firstuser
  HostName 127.0.0.1
  Port $MLW_TEST_SSH_PORT
  User $HUSER
  IdentityFile $HOME/.ssh/id_jump
  IdentitiesOnly yes
  UserKnownHostsFile $HOME/.ssh/known_hosts_targets
  StrictHostKeyChecking accept-new
Host *
  User nobody
CFG
# (A host's user is its first User: the User of the later Host * is ignored, as OpenSSH ignores
# it; ssh -G says the same. mlw reads it for an address given without -u.)
expect_eq "ssh -G takes the first User" "$(ssh -G -F "$HOME/.ssh/config" firstuser | sed -n 's/^user //p')" "$HUSER"
"$MLW" computetarget attach remote -n firstuser -a firstuser >"$WORK/o" 2>"$WORK/e"
expect_eq "attach an alias without -u: its first User logs in (not Host *'s)" "$?" 0
run_bounded 120 experiment submit -c firstuser hello.py as-first-user
expect_contains "a run as that user" "$OUT" "HELLO ['as-first-user']"
"$MLW" computetarget attach remote -n jumped -a viajump -u "$HUSER" --password-stdin \
  <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach through ProxyJump (a second sshd)" "$?" 0
check "the jump host carried it, as its first User" grep -q "Accepted publickey for $HUSER" "$WORK/jump.log"
expect_contains "StrictHostKeyChecking accept-new recorded the target in its UserKnownHostsFile" \
  "$(cat "$HOME/.ssh/known_hosts_targets" 2>/dev/null)" "[127.0.0.1]:$MLW_TEST_SSH_PORT ssh-ed25519"
check "and not in ~/.ssh/known_hosts" test ! -e "$KH"
run_bounded 120 experiment submit -c jumped hello.py via-jump
expect_eq "a run through the jump host" "$CODE" 0
expect_contains "its output" "$OUT" "HELLO ['via-jump']"
"$MLW" computetarget attach remote -n proxied -a viacmd -u "$HUSER" --password-stdin \
  <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach through a ProxyCommand" "$?" 0
check "the proxy command ran" test -s "$WORK/proxy-used"
run_bounded 120 experiment submit -c proxied hello.py via-cmd
expect_eq "a run through the ProxyCommand" "$CODE" 0
expect_contains "its output" "$OUT" "HELLO ['via-cmd']"
"$MLW" -v computetarget doctor -n jumped >"$WORK/o" 2>"$WORK/e"
expect_contains "a key mlw does not use is named at -v, with its place" "$(cat "$WORK/e")" \
  "config:14: forwardagent: not used by mlw"
rm -f "$HOME/.ssh/config"

# --- the password prompt and Ctrl-C ------------------------------------------------------------
# On a real terminal (a pty), Ctrl-C at the no-echo password prompt must give the terminal back
# with echo on.
TTY_RESULT=$(python3 - "$MLW" "$ADDR" "$HUSER" <<'PY'
import os, pty, select, signal, sys, termios, time
mlw, addr, user = sys.argv[1:]
master, slave = pty.openpty()
pid = os.fork()
if pid == 0:
    os.setsid()
    os.close(master)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    import fcntl
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    os.execv(mlw, [mlw, "computetarget", "attach", "remote", "-n", "tty", "-a", addr, "-u", user,
                   "--accept-host-key"])
seen = b""
deadline = time.time() + 20
while b"Password for" not in seen and time.time() < deadline:
    if select.select([master], [], [], 0.5)[0]:
        seen += os.read(master, 4096)
prompted = b"Password for" in seen
deadline = time.time() + 5  # the prompt is printed just before echo goes off
while termios.tcgetattr(slave)[3] & termios.ECHO and time.time() < deadline:
    time.sleep(0.02)
echo_off = not (termios.tcgetattr(slave)[3] & termios.ECHO)
os.write(master, b"\x03")  # Ctrl-C, as the terminal sends it
_, status = os.waitpid(pid, 0)
echo_back = bool(termios.tcgetattr(slave)[3] & termios.ECHO)
print(prompted, echo_off, echo_back, os.waitstatus_to_exitcode(status))
PY
)
expect_eq "Ctrl-C at the password prompt: prompted, echo off, echo back on, killed by SIGINT" \
  "$TTY_RESULT" "True True True -2"
check "nothing attached" test ! -e aml_config/tty.compute

# --- the secrets folder -------------------------------------------------------------------------
mkdir -p "$XDG_CONFIG_HOME/mlw"
chmod 755 "$XDG_CONFIG_HOME/mlw"
"$MLW" computetarget attach remote -n secretdir -a "$ADDR" -u "$HUSER" --password-stdin \
  --accept-host-key <"$WORK/pw" >/dev/null 2>&1
expect_eq "attach makes an existing secrets folder 0700" "$(stat -c %a "$XDG_CONFIG_HOME/mlw")" 700

finish
