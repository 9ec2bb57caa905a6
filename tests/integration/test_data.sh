#!/usr/bin/env bash
# `mlw data` (issue 46, docs/data.md) against the real sshd and Docker engines of
# tests/fixtures/servers.sh: versions of a folder, pushed once per machine (only what a store
# lacks), mounted read-only into runs on remote, remotedocker and docker targets (the script
# lists and hashes what it sees), recorded with the run; a kill -9 mid-push, two pushes at once, a
# full disk, a changed object, rerun on another target, rm and gc while a queued run needs it.
# Slurm and Grid Engine: test_data_batch.sh.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_IMAGE DOCKER_HOST
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
USER_HOME=$(getent passwd mlwtest | cut -d: -f6)
rm -rf "$USER_HOME/.mlw" "$USER_HOME/.ssh"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
STORE="$USER_HOME/.mlw/data"

# The data set: files in folders, an executable, a name with a space, one that is not UTF-8, a
# link inside and one that leaves the folder.
DS="$WORK/ds"
mkdir -p "$DS/images/cats" "$DS/shards"
for i in 1 2 3 4 5; do printf 'cat %s\n' "$i" >"$DS/images/cats/c$i.jpg"; done
head -c 300000 /dev/urandom >"$DS/shards/s0.bin"
printf '#!/bin/sh\necho hi\n' >"$DS/tool.sh" && chmod 755 "$DS/tool.sh"
printf 'spaced\n' >"$DS/with space.txt"
printf 'odd\n' >"$DS/$(printf 'caf\xe9.txt')"
ln -s images/cats/c1.jpg "$DS/first.jpg"
ln -s /etc/passwd "$DS/passwd"
# The files' own hashes, as the run must see them.
expected_listing() {
  python3 - "$1" <<'PY'
import hashlib, os, sys
root = sys.argv[1].encode()
names = []
for folder, dirs, files in os.walk(root):
    for f in files:
        path = os.path.join(folder, f)
        if os.path.islink(path) and not os.path.realpath(path).startswith(os.path.realpath(root)):
            continue
        names.append(os.path.relpath(path, root))
for name in sorted(names):
    with open(os.path.join(root, name), "rb") as f:
        print(name.decode("ascii", "backslashreplace"), hashlib.sha256(f.read()).hexdigest()[:16])
PY
}

new_project dproj
cat >see.py <<'PY'
import hashlib, os, sys
root = os.environ["MLW_DATA_DS"]
print("ROOT", root)
names = []
for folder, dirs, files in os.walk(root):
    for f in files:
        names.append(os.path.relpath(os.path.join(folder, f), root).encode("utf-8", "surrogateescape"))
for name in sorted(names):
    with open(os.path.join(root.encode(), name), "rb") as f:
        print("SEES", name.decode("ascii", "backslashreplace"), hashlib.sha256(f.read()).hexdigest()[:16])
try:
    open(os.path.join(root, "images", "new.txt"), "w").write("x")
    print("WRITE: allowed")
except OSError as e:
    print("WRITE: refused", e.strerror)
    sys.exit(3)
PY
sees() { printf '%s\n' "$1" | sed -n 's/^SEES //p'; }
# The list a version's objects must have in the store, from its manifest in the project: each
# object once ("HASH SIZE", ".x" after the hash of an executable file), in byte order.
object_list() {
  awk 'NR > 1 && $1 == "F" { n = $2; if ($4 ~ /[1357]/) n = n ".x"; print n " " $3 }' \
    ".mlw/data/$1/manifests/$2" | LC_ALL=C sort -u
}
# hold.py FILE: runs until FILE exists (at most 30 s).
cat >hold.py <<'PY'
import os, sys, time
for _ in range(300):
    if os.path.exists(sys.argv[1]):
        break
    time.sleep(0.1)
print("held")
PY

# Bad input: one line each, nothing written.
run_mlw data add ds "$WORK/nowhere"
expect_eq "a folder that does not exist" "$CODE" 1
expect_contains "… said with its name" "$ERR" "nowhere: no such folder"
run_mlw data add ds "$DS/tool.sh"
expect_contains "a file is not a folder" "$ERR" "not a folder"
mkdir "$WORK/empty"
run_mlw data add ds "$WORK/empty"
expect_contains "an empty folder" "$ERR" "holds no files"
for bad in "a/b" "a@b" "a b" "$(printf 'caf\xc3\xa9')" ".hidden"; do
  run_mlw data add "$bad" "$DS"
  expect_eq "the name [$bad] is refused as usage" "$CODE" 2
done
check "nothing recorded by the refusals" test ! -e .mlw/data/ds/versions.json

# A version: the files' hashes, nothing copied here; again unchanged, only stats.
sleep 2.2 # the racy window: files younger than 2 s are read again by the next add
run_mlw -o json data add ds "$DS" -m "first cut"
expect_eq "data add" "$CODE" 0
expect_eq "… read every file" "$(json_get "$OUT" 'd["files_read"]')" 9
expect_contains "… the link that leaves the folder is skipped, said" "$ERR" "skipped link passwd"
ID1=$(json_get "$OUT" 'd["id"]')
check "nothing copied into the project" bash -c "[ \$(du -sk .mlw | cut -f1) -lt 200 ]"
run_mlw -o json data add ds "$DS"
expect_eq "again, unchanged: no file read" "$(json_get "$OUT" 'd["files_read"]')" 0
expect_eq "… and no new version" "$(json_get "$OUT" 'd["added"]')" False
run_mlw data list
expect_contains "list shows the version" "$OUT" "ds@1"
run_mlw -o json data show "ds@${ID1:0:7}"
expect_eq "show by the id's digits" "$(json_get "$OUT" 'd["label"]')" "ds@1"
expect_contains "… the name that is not UTF-8, escaped" "$OUT" 'caf\\xe9.txt'
run_mlw data show ds@7
expect_contains "a version that does not exist" "$ERR" 'no version "7"'

"$MLW" computetarget attach remote -n rm -a "$ADDR" -u mlwtest --password-stdin -k \
  --accept-host-key <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach remote" "$?" 0
sed -i 's/^Framework:.*/Framework: Python/' aml_config/rm.runconfig

# Pushed once: all of it, then nothing.
run_mlw -o json data push ds -c rm
expect_eq "push" "$CODE" 0
expect_eq "… sends each content once (c1..c5, s0, tool, space, café)" "$(json_get "$OUT" 'd["files_sent"]')" 9
run_mlw -o json data push ds -c rm
expect_eq "again: nothing sent" "$(json_get "$OUT" 'd["files_sent"]'),$(json_get "$OUT" 'd["bytes_sent"]')" "0,0"
TREE=$(json_get "$OUT" 'd["path"]')
check "the version's folder is on the target, read-only" bash -c "[ \$(stat -c %a '$TREE') = 555 ] && [ \$(stat -c %a '$TREE/images/cats/c1.jpg') = 444 ]"
check "… its files are hard links into the store" bash -c "[ \$(stat -c %h '$TREE/images/cats/c1.jpg') -ge 2 ]"

# Mounted into a run on a machine without containers (mlwtest: the files are 0444 in 0555).
run_mlw experiment submit -c rm --data ds see.py
expect_eq "a run on the remote target that tries to write exits as its script says" "$CODE" 3
expect_eq "… it sees every file with its content" "$(sees "$OUT")" "$(expected_listing "$DS")"
expect_contains "… its write was refused" "$OUT" "WRITE: refused Permission denied"
RID1=$("$MLW" history list -o tsv | head -1 | cut -f1)
objects_before=$(find "$STORE/objects" -type f | wc -l)
run_mlw -v experiment submit -c rm --data ds see.py
expect_not_contains "a second run pushes nothing" "$ERR" "pushing"
expect_eq "… and the store is as it was" "$(find "$STORE/objects" -type f | wc -l)" "$objects_before"
run_mlw -o json history info -r "$RID1"
expect_eq "the record names the version" "$(json_get "$OUT" 'd["data"][0]["name"] + "@" + str(d["data"][0]["version"])')" "ds@1"
expect_eq "… by its id" "$(json_get "$OUT" 'd["data"][0]["id"]')" "$ID1"

# One changed file: one object sent.
sleep 0.1
printf 'cat 3, retouched\n' >"$DS/images/cats/c3.jpg"
run_mlw data add ds "$DS" -m "c3 retouched"
expect_contains "a new version" "$OUT" "ds@2"
run_mlw -o json data push ds@2 -c rm
expect_eq "one changed file: one object sent" "$(json_get "$OUT" 'd["files_sent"]')" 1
run_mlw experiment submit -c rm --data ds@2 see.py
RID2=$("$MLW" history list -o tsv | head -1 | cut -f1)
run_mlw history list --data ds@1 -o tsv
expect_eq "history list --data ds@1: the two runs of @1" "$(printf '%s\n' "$OUT" | wc -l)" 2
run_mlw history diff -r "$RID1" -r "$RID2"
expect_contains "history diff says which data changed" "$OUT" "data ds: ds@1 → ds@2: 1 changed (images/cats/c3.jpg)"
run_mlw history info -r "$RID2"
expect_contains "history info names the version" "$OUT" "ds@2"

# A store object changed by hand: verify says so and removes it; the next push sends it again.
obj=$(find "$STORE/objects" -name "$(sha256sum <"$DS/images/cats/c3.jpg" | cut -c1-64)")
chmod u+w "$obj" && printf 'tampered\n' >"$obj"
run_mlw data verify -c rm
expect_eq "verify finds the changed object" "$CODE" 1
expect_contains "… names its file" "$OUT" "images/cats/c3.jpg"
run_mlw -o json data push ds@2 -c rm
expect_eq "… and the next push sends it again" "$(json_get "$OUT" 'd["files_sent"]')" 1
run_mlw data verify -c rm
expect_eq "the store verifies again" "$CODE" 0

# A run in a container: the version is a read-only bind mount at /mlw/data/ds.
"$MLW" computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin -k \
  --accept-host-key --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach remotedocker" "$?" 0
run_mlw experiment submit -c rd --data ds@2 see.py
expect_eq "a container run that writes to the mount fails" "$CODE" 3
expect_contains "… at /mlw/data/ds" "$OUT" "ROOT /mlw/data/ds"
expect_contains "… read-only" "$OUT" "WRITE: refused Read-only file system"
expect_eq "… and sees every file" "$(sees "$OUT")" "$(expected_listing "$DS")"
run_mlw data verify -c rd
expect_eq "the store still verifies" "$CODE" 0
run_mlw experiment submit -c rd --data ds@2:/data see.py
expect_contains "a mount point of one's own" "$OUT" "ROOT /data"
run_mlw experiment submit -c rm --data ds@2:/data see.py
expect_contains "… which a run without a container cannot have: said" "$ERR" "the mount point /data applies in containers"
expect_contains "… and where it reads it instead" "$OUT" "ROOT $STORE/trees/"

# The local Docker engine: this machine's store, mounted read-only.
"$MLW" computetarget attach docker -n dk --base-image "$MLW_TEST_IMAGE" >"$WORK/o" 2>"$WORK/e"
run_mlw experiment submit -c dk --data ds see.py
expect_eq "docker: the write fails" "$CODE" 3
expect_contains "… read-only" "$OUT" "Read-only file system"
expect_eq "… and the run sees every file" "$(sees "$OUT")" "$(expected_listing "$DS")"

# The local kind: this machine's store, the version's folder read in place (MLW_DATA_DS). The
# suite runs as root, whom 0444 does not stop: this script only reads.
sed '/^try:/,$d' see.py >look.py
"$MLW" computetarget attach local -n lc >"$WORK/o" 2>"$WORK/e"
sed -i 's/^Framework:.*/Framework: Python/' aml_config/lc.runconfig
run_mlw experiment submit -c lc --data ds look.py
expect_eq "local: a run that mounts ds" "$CODE" 0
expect_eq "… sees every file with its content" "$(sees "$OUT")" "$(expected_listing "$DS")"
expect_contains "… in this machine's store" "$OUT" "ROOT $HOME/.mlw/data/trees/"
# Its supervisor holds the version, and the script it started: both killed (kill -9, no end
# recorded), rm may remove it.
"$MLW" experiment submit -a -c lc --data ds hold.py "$WORK/never" >"$WORK/o" 2>&1
LRID=$("$MLW" history list -o tsv | head -1 | cut -f1)
check "local: a run that holds ds runs" wait_for 30 run_is "$LRID" Running
check "… its supervisor holds its data sets" wait_for 10 test -n "$(find .mlw -path "*$LRID*" -name data.held)"
run_mlw data rm ds@2 -c lc
expect_eq "… rm of its version is refused" "$CODE" 1
expect_contains "… naming the run" "$ERR" "$LRID"
run_json=$(find .mlw -path "*$LRID*" -name run.json | head -1)
lpid=$(json_get "$(cat "$run_json")" 'd["pid"]')
lgroup=$(json_get "$(cat "$run_json")" 'd["process_group"]')
kill -9 "$lpid"
kill -9 -- "-$lgroup"
check "… its supervisor and script are gone" wait_for 10 sh -c "! kill -0 $lpid 2>/dev/null && ! kill -0 -- -$lgroup 2>/dev/null"
run_mlw data rm ds@2 -c lc
expect_eq "… then rm removes the version from this machine's store" "$CODE" 0

# rerun on another target pushes the recorded version there first.
chmod -R u+w "$HOME/.mlw/data" && rm -rf "$HOME/.mlw/data"
run_mlw experiment rerun -r "$RID2" -c dk
expect_contains "rerun on docker sees @2 (c3 retouched)" "$OUT" "images/cats/c3.jpg $(printf 'cat 3, retouched\n' | sha256sum | cut -c1-16)"
ID2=$("$MLW" -o json data show ds@2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
check "… pushed to this machine's store first" test -d "$HOME/.mlw/data/trees/$ID2"
# @1's folder here has changed since (c3 retouched): its files come from a target that holds it.
run_mlw -v experiment rerun -r "$RID1" -c dk
expect_eq "a rerun of @1, whose folder changed since, on a machine that lacks it" "$CODE" 3
expect_contains "… takes its files from the target that holds @1" "$ERR" "c3.jpg changed since \`mlw data add\`"
expect_contains "… saying so" "$ERR" "its files come from rm instead"
expect_contains "… and the run sees @1's c3" "$OUT" "images/cats/c3.jpg $(printf 'cat 3\n' | sha256sum | cut -c1-16)"
run_mlw data verify -c dk ds@1
expect_eq "… which verifies there" "$CODE" 0

# Adds data set $1, 24 files of 2 MB, and pushes it to rm in the background (its pid in
# $pushing); returns once 6 of its objects arrived whole in the store's incoming/ (not yet checked).
start_big_push() {
  mkdir -p "$WORK/$1"
  for i in $(seq 1 24); do head -c 2000000 /dev/urandom >"$WORK/$1/part$i"; done
  run_mlw data add "$1" "$WORK/$1"
  "$MLW" data push "$1" -c rm >"$WORK/o" 2>"$WORK/e" &
  pushing=$!
  wait_arriving
}

# Waits (at most 8 s) until six whole files of an upload have arrived in the store's incoming/.
wait_arriving() {
  for _ in $(seq 1 400); do
    [ "$(find "$STORE/incoming" -type f -size +1950k 2>/dev/null | wc -l)" -ge 6 ] && break
    sleep 0.02
  done
}

# Pushes data set $1 again after an interrupted push: it succeeds, sends fewer than all 24 files,
# and the store verifies.
expect_resumed() {
  run_mlw -o json data push "$1" -c rm
  expect_eq "the push of $1 after the interrupted one succeeds" "$CODE" 0
  sent=$(json_get "$OUT" 'd["files_sent"]')
  check "… sending fewer than all 24 files ($sent)" test "$sent" -lt 24
  run_mlw data verify -c rm "$1"
  expect_eq "… and every object checks by its hash" "$CODE" 0
}

# kill -9 mid-push, then a push that resumes at once: what arrived is not sent again.
start_big_push big
kill -9 "$pushing"
wait "$pushing" 2>/dev/null
expect_resumed big

# The target's sshd drops the connection mid-push (its session processes for this login killed,
# as a restart or a dropped link does): one line, then a push that resumes.
start_big_push big3
for pid in $(pgrep -u mlwtest -x sshd); do kill -9 "$pid" 2>/dev/null; done
wait "$pushing"
dropped=$?
expect_eq "a push whose connection drops fails" "$dropped" 1
expect_eq "… saying so in one line" "$(grep -c '^mlw: error:' "$WORK/e")" 1
expect_contains "… that the connection went" "$(cat "$WORK/e")" "connection"
expect_resumed big3

# The folder a new version is made from goes away during its push (after the push chose it,
# before the new folder is made from it): the push sends the whole folder instead.
run_mlw -o json data show big@1
BASE=$(json_get "$OUT" 'd["id"]')
for i in $(seq 13 36); do head -c 2000000 /dev/urandom >"$WORK/big/part$i"; done
run_mlw data add big "$WORK/big"
"$MLW" -v data push big -c rm >"$WORK/o" 2>"$WORK/e" &
pushing=$!
wait_arriving
check "… the folder of big@1 is there while the push uploads" test -d "$STORE/trees/$BASE"
chmod -R u+w "$STORE/trees/$BASE" && rm -rf "$STORE/trees/$BASE"
wait "$pushing"
expect_eq "a push whose base folder went away on the way succeeds" "$?" 0
expect_contains "… saying it sent the whole folder" "$(cat "$WORK/e")" "the whole folder of big@2"
run_mlw -o json data show big@2
check "… whose folder holds all 36 files" test \
  "$(find "$STORE/trees/$(json_get "$OUT" 'd["id"]')" -type f | wc -l)" -eq 36
run_mlw data verify -c rm big
expect_eq "… and verifies" "$CODE" 0
run_mlw data verify -c rm
expect_eq "verify finds the folder of big@1 removed by hand" "$CODE" 1
expect_contains "… naming the version" "$OUT" "big@1"
expect_contains "… as gone" "$OUT" "gone"
expect_eq "… in one error line" "$(printf '%s\n' "$ERR" | grep -c 'mlw: error')" 1
run_mlw data verify -c rm
expect_eq "… and drops it: the store verifies after" "$CODE" 0

# Two projects push one version to one machine at once.
cp -r "$WORK/dproj" "$WORK/dproj2"
mkdir -p "$WORK/big2"
for i in $(seq 1 12); do head -c 1000000 /dev/urandom >"$WORK/big2/part$i"; done
run_mlw data add big2 "$WORK/big2"
(cd "$WORK/dproj2" && "$MLW" data add big2 "$WORK/big2" >/dev/null 2>&1)
"$MLW" data push big2 -c rm >"$WORK/p1" 2>&1 &
p1=$!
(cd "$WORK/dproj2" && "$MLW" data push big2 -c rm >"$WORK/p2" 2>&1) &
p2=$!
wait "$p1"
r1=$?
wait "$p2"
r2=$?
expect_eq "two pushes at once both succeed" "$r1,$r2" "0,0"
run_mlw data verify -c rm
expect_eq "… and the store verifies" "$CODE" 0

# A full disk: a 1 MB store. One line with the room it needs; the next push resumes.
mkdir -p "$WORK/tmpfs"
mount -t tmpfs -o size=1m tmpfs "$WORK/tmpfs"
chown mlwtest "$WORK/tmpfs"
chmod 755 "$WORK"
"$MLW" computetarget attach remote -n tiny -a "$ADDR" -u mlwtest --password-stdin -k \
  --accept-host-key <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
printf 'dataStore: %s\n' "$WORK/tmpfs/store" >>aml_config/tiny.compute
mkdir -p "$WORK/two"
head -c 1500000 /dev/urandom >"$WORK/two/a.bin"
run_mlw data add two "$WORK/two"
run_mlw data push two -c tiny
expect_eq "a store without room" "$CODE" 1
expect_contains "… says so with the room needed" "$ERR" "ran out of room"
expect_contains "… in bytes" "$ERR" "1500000 bytes"
expect_eq "… in one line" "$(printf '%s\n' "$ERR" | grep -c 'mlw: error')" 1
mount -o remount,size=8m "$WORK/tmpfs"
run_mlw -o json data push two -c tiny
expect_eq "with room, the next push succeeds" "$CODE" 0

# rm and gc never take what a queued run needs; both do once it has ended.
"$MLW" computetarget attach remote -n q -a "$ADDR" -u mlwtest --password-stdin -k \
  --accept-host-key <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
sed -i 's/^Framework:.*/Framework: Python/' aml_config/q.runconfig
printf 'maxConcurrentRuns: 1\n' >>aml_config/q.compute
"$MLW" experiment submit -a -c q hold.py "$WORK/release" >"$WORK/o" 2>&1
printf 'import os\nprint(sorted(os.listdir(os.environ["MLW_DATA_DS"])))\n' >list.py
"$MLW" experiment submit -a -c q --data ds@1 list.py >"$WORK/o" 2>&1
QRID=$("$MLW" history list -o tsv | head -1 | cut -f1)
check "a run waits in the queue with ds@1" wait_for 30 run_is "$QRID" Queued
run_mlw data rm ds@1 -c q
expect_eq "rm of a version a queued run needs is refused" "$CODE" 1
expect_contains "… naming the run" "$ERR" "$QRID"
run_mlw -o json data gc -c q
expect_eq "gc while it waits" "$CODE" 0
check "… keeps its version's folder" test -d "$STORE/trees/$ID1"
touch "$WORK/release"
check "… and completes once it is its turn" wait_for 60 run_is "$QRID" Completed
# A run holds its version through its monitor, as a GPU lease is held: killed with its script
# (kill -9, no end written), it no longer keeps rm from removing the version.
"$MLW" experiment submit -a -c q --data ds@1 hold.py "$WORK/never" >"$WORK/o" 2>&1
KRID=$("$MLW" history list -o tsv | head -1 | cut -f1)
check "a run that uses ds@1 runs" wait_for 30 run_is "$KRID" Running
check "… its monitor holds its data sets" wait_for 10 test -e "$USER_HOME/.mlw/runs/$KRID/data.held"
run_mlw data rm ds@1 -c q
expect_eq "rm of a version a running run uses is refused" "$CODE" 1
expect_contains "… naming the run" "$ERR" "$KRID"
monitor=$(cut -d' ' -f2 "$USER_HOME/.mlw/runs/$KRID/monitor.pid")
kill -9 -- "-$(ps -o pgid= -p "$monitor" | tr -d ' ')"
check "… its monitor and script are gone" wait_for 10 sh -c "! kill -0 $monitor 2>/dev/null"
check "… with no end written" test ! -e "$USER_HOME/.mlw/runs/$KRID/exit_code"
run_mlw data rm ds@1 -c q
expect_eq "once it has ended, rm removes the version" "$CODE" 0
run_mlw -o json data gc -c q
check "… and gc its objects that no other version uses" test "$(json_get "$OUT" 'd["removed_objects"]')" -ge 1
run_mlw -o json data du -c q
expect_contains "du lists what stays" "$OUT" "ds@2"
# Now no target holds @1 and its folder here changed: a rerun of it is refused in one line.
chmod -R u+w "$HOME/.mlw/data" && rm -rf "$HOME/.mlw/data"
run_mlw experiment rerun -r "$RID1" -c dk
expect_eq "a rerun of @1 that neither this folder nor any target can give is refused" "$CODE" 125
expect_contains "… saying which file changed and which targets were asked" "$ERR" "c3.jpg changed since"
expect_contains "… one line" "$ERR" "no other target holds ds@1 (asked: rm)"

# A file that changes while it is hashed is refused with its name.
mkdir -p "$WORK/moving"
# 64 MB, so that its hashing lasts long enough for appends to land in it even where the appender
# gets little CPU (two suites at once under a sanitizer: a 2-byte file was hashed between two).
head -c 64M /dev/zero >"$WORK/moving/log.txt"
# It appends until data add has returned (at most 120 s, however slow a sanitizer build is).
(
  end=$((SECONDS + 120))
  while [ ! -e "$WORK/moving.stop" ] && [ $SECONDS -lt $end ]; do printf 'more\n' >>"$WORK/moving/log.txt"; done
) &
appender=$!
# data add starts once the appender is seen appending (a file larger than it was written), so
# that a loaded machine's late start of the appender does not let the file be hashed still.
check "… (the file grows)" wait_for 30 sh -c "[ \$(stat -c %s '$WORK/moving/log.txt') -gt 67108864 ]"
run_mlw data add moving "$WORK/moving"
touch "$WORK/moving.stop"
wait "$appender" 2>/dev/null
expect_eq "a folder with a file being written" "$CODE" 1
expect_contains "… is refused, naming the file" "$ERR" "log.txt changed while it was"
check "… and no version recorded" test ! -e .mlw/data/moving/versions.json

# A store whose folders the login cannot write (another user's, a wrong mode): one line.
chmod 555 "$STORE/versions"
run_mlw data push big2 -c rm
chmod 755 "$STORE/versions"
expect_eq "a store the login cannot write" "$CODE" 1
expect_contains "… is said, with its mode" "$ERR" "is not writable by mlwtest (mode dr-xr-xr-x)"

# A new version's folder is made from the newest other one the store holds: only what changed
# crosses the wire. A file gone, a whole folder gone, a file that became a link, a folder added,
# a file changed: the run sees exactly the new version.
rm "$DS/images/cats/c4.jpg" "$DS/with space.txt"
rm -r "$DS/shards"
ln -s tool.sh "$DS/with space.txt"
mkdir -p "$DS/texts/deep" && printf 'new\n' >"$DS/texts/deep/n.txt"
printf 'cat 2, again\n' >"$DS/images/cats/c2.jpg"
run_mlw data add ds "$DS" -m "reshaped"
expect_contains "a reshaped version" "$OUT" "ds@3"
run_mlw -v -o json data push ds@3 -c rm
expect_eq "its push works" "$CODE" 0
expect_contains "… made from the last version's folder" "$ERR" "its folder made from"
expect_not_contains "… its list made from the last version's there, not sent whole" "$ERR" \
  "the whole folder"
ID3=$(json_get "$("$MLW" -o json data show ds@3)" 'd["id"]')
expect_eq "… that list is the version's objects, each once" "$(cat "$STORE/versions/$ID3")" \
  "$(object_list ds "$ID3")"
expect_eq "… sending the two new contents" "$(json_get "$OUT" 'd["files_sent"]')" 2
tree3=$(json_get "$OUT" 'd["path"]')
run_mlw experiment submit -c rm --data ds@3 see.py
expect_eq "a run of it" "$CODE" 3
expect_eq "… sees every file of the new version, nothing of the old" "$(sees "$OUT")" "$(expected_listing "$DS")"
check "… the folder that went is gone from it" test ! -e "$tree3/shards"
check "… its folders are read-only" test "$(stat -c %a "$tree3/texts/deep")" = 555
run_mlw data verify -c rm ds@3
expect_eq "… and it verifies" "$CODE" 0

# Such a push returns once the new files are in the store and checked: the folder is made after
# it, by a process it started on the target (linking the old folder again is O(files)). Here
# that process hangs in its `cp` (a fake one first on the login's PATH) and is then killed: the
# next run of the version makes the folder itself, pushes nothing, and sees the new version.
# A push of the next version meanwhile does not wait for that folder: its own is made from it
# once it is there.
printf 'cat 3, again\n' >"$DS/images/cats/c3.jpg"
run_mlw data add ds "$DS" -m "one changed"
run_mlw -o json data show ds@4
ID4=$(json_get "$OUT" 'd["id"]')
install -d -o mlwtest "$USER_HOME/slow"
printf '#!/bin/sh\nexec sleep 1234\n' | install -o mlwtest -m 0755 /dev/stdin "$USER_HOME/slow/cp"
printf 'PATH="$HOME/slow:$PATH"\n' | install -o mlwtest -m 0644 /dev/stdin "$USER_HOME/.bashrc"
timeout 60 "$MLW" -v data push ds@4 -c rm >"$WORK/o" 2>"$WORK/e"
expect_eq "a push of one changed file returns while its folder waits to be made" "$?" 0
expect_contains "… made from the last version's folder" "$(cat "$WORK/e")" "its folder made from"
check "… the folder is not there yet" test ! -e "$STORE/trees/$ID4"
maker=
for i in $(seq 50); do
  maker=$(pgrep -u mlwtest -f "^sleep 1234$") && break
  sleep 0.2
done
check "… the process making it is there, in cp" test -n "$maker"
listing4=$(expected_listing "$DS")
printf 'cat 1, once more\n' >"$DS/images/cats/c1.jpg"
run_mlw data add ds "$DS" -m "the next one"
ID5=$(json_get "$("$MLW" -o json data show ds@5)" 'd["id"]')
timeout 60 "$MLW" -v data push ds@5 -c rm >"$WORK/o" 2>"$WORK/e"
expect_eq "a push of the next version while that folder waits to be made returns" "$?" 0
expect_contains "… made from that version's folder" "$(cat "$WORK/e")" \
  "its folder made from ${ID4:0:7}'s"
expect_not_contains "… its list made there" "$(cat "$WORK/e")" "the whole folder"
check "… its folder is not there yet either" test ! -e "$STORE/trees/$ID5"
expect_eq "… its list is the version's objects" "$(cat "$STORE/versions/$ID5")" \
  "$(object_list ds "$ID5")"
# The fake cp goes first, so that no maker started after the kill finds it.
rm -rf "$USER_HOME/slow" "$USER_HOME/.bashrc"
for pid in $maker; do
  parent=$(ps -o ppid= -p "$pid" | tr -d ' ')
  kill -9 "$parent" "$pid" 2>/dev/null
done
run_mlw -v experiment submit -c rm --data ds@4 see.py
expect_eq "a run of it after that process was killed" "$CODE" 3
expect_eq "… sees the new version" "$(sees "$OUT")" "$listing4"
expect_not_contains "… pushing nothing again" "$ERR" "pushing"
check "… its folder made" test -f "$STORE/trees/$ID4/images/cats/c3.jpg"
run_mlw data verify -c rm ds@4
expect_eq "… and it verifies" "$CODE" 0
run_mlw -v experiment submit -c rm --data ds@5 see.py
expect_eq "a run of the next version" "$CODE" 3
expect_eq "… sees it" "$(sees "$OUT")" "$(expected_listing "$DS")"
expect_not_contains "… its folder made there: nothing pushed again" "$ERR" "pushing"
run_mlw data verify -c rm ds@5
expect_eq "… and it verifies" "$CODE" 0

# A forged manifest in the project is refused before anything is sent.
chmod u+w ".mlw/data/ds/manifests/$ID1" 2>/dev/null
sed -i 's/c1.jpg/../' ".mlw/data/ds/manifests/$ID1"
run_mlw data push ds@1 -c rm
expect_contains "a changed manifest is refused" "$ERR" "was changed"

finish
