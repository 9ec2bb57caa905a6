#!/usr/bin/env bash
# `mlw data` on Slurm and Grid Engine (issue 46, docs/data.md), against the real cluster and cell
# of tests/fixtures/servers.sh: a version pushed once through the login node into the store that
# dataStore names (here the users' homes, which every node shares), mounted by a job that lists
# and hashes what it sees (MLW_DATA_NAME), and a second job that pushes nothing.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_SLURM_USER \
  MLW_TEST_SGE_USER MLW_TEST_SGE_ROOT MLW_TEST_SGE_PORTS SLURM_CONF
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
read -r QPORT EPORT <<<"$MLW_TEST_SGE_PORTS"
export SGE_ROOT=$MLW_TEST_SGE_ROOT SGE_CELL=default SGE_QMASTER_PORT=$QPORT SGE_EXECD_PORT=$EPORT

DS="$WORK/ds"
mkdir -p "$DS/a/b"
for i in 1 2 3; do printf 'row %s\n' "$i" >"$DS/a/b/r$i.csv"; done
printf 'top\n' >"$DS/top.txt"
expected=$(cd "$DS" && find . -type f -printf '%P\n' | LC_ALL=C sort |
  while IFS= read -r f; do printf '%s %s\n' "$f" "$(sha256sum <"$f" | cut -c1-16)"; done)

new_project bproj
cat >see.py <<'PY'
import hashlib, os
root = os.environ["MLW_DATA_DS"]
for folder, dirs, files in sorted(os.walk(root)):
    for f in sorted(files):
        p = os.path.join(folder, f)
        print("SEES", os.path.relpath(p, root), hashlib.sha256(open(p, "rb").read()).hexdigest()[:16])
PY
run_mlw data add ds "$DS"
expect_eq "data add" "$CODE" 0

for kind in slurm sge; do
  if [ "$kind" = slurm ]; then U=$MLW_TEST_SLURM_USER; else U=$MLW_TEST_SGE_USER; fi
  UH=$(getent passwd "$U" | cut -d: -f6)
  rm -rf "$UH/.mlw/data"
  "$MLW" computetarget attach "$kind" -n "$kind" -a "$ADDR" -u "$U" --password-stdin -k \
    --accept-host-key <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
  expect_eq "attach $kind" "$?" 0
  run_mlw -o json data push ds -c "$kind"
  expect_eq "$kind: push" "$CODE" 0
  expect_eq "$kind: … every file's content sent once" "$(json_get "$OUT" 'd["files_sent"]')" 4
  check "$kind: … into the store dataStore names (the shared home)" \
    test -d "$UH/.mlw/data/trees/$(json_get "$OUT" 'd["id"]')"
  run_mlw experiment submit -c "$kind" --data ds see.py
  expect_eq "$kind: a job that mounts it" "$CODE" 0
  expect_eq "$kind: … sees every file with its content" "$(printf '%s\n' "$OUT" | sed -n 's/^SEES //p' | LC_ALL=C sort)" "$expected"
  run_mlw -v experiment submit -c "$kind" --data ds see.py
  expect_eq "$kind: a second job" "$CODE" 0
  expect_not_contains "$kind: … pushes nothing" "$ERR" "pushing"
  run_mlw data rm ds@1 -c "$kind"
  expect_eq "$kind: once its jobs have ended, the version can be removed" "$CODE" 0
  check "$kind: … and is gone from the store" test ! -e "$UH/.mlw/data/versions/$(json_get \
    "$("$MLW" -o json data show ds@1)" 'd["id"]')"
done

# Two users of one machine push one version at once (the Slurm and the Grid Engine logins of this
# host): each into its own store, both whole, neither writable by the other.
printf 'row 4\n' >"$DS/a/b/r4.csv"
run_mlw data add ds "$DS"
"$MLW" data push ds -c slurm >"$WORK/p1" 2>&1 &
p1=$!
"$MLW" data push ds -c sge >"$WORK/p2" 2>&1 &
p2=$!
wait "$p1"
r1=$?
wait "$p2"
r2=$?
expect_eq "two users push one version at once: both succeed" "$r1,$r2" "0,0"
for kind in slurm sge; do
  if [ "$kind" = slurm ]; then U=$MLW_TEST_SLURM_USER; else U=$MLW_TEST_SGE_USER; fi
  UH=$(getent passwd "$U" | cut -d: -f6)
  run_mlw data verify -c "$kind"
  expect_eq "$kind: … its store verifies" "$CODE" 0
  expect_eq "$kind: … every file of the store is its user's" \
    "$(find "$UH/.mlw/data" ! -user "$U" -print -quit)" ""
  expect_eq "$kind: … nothing in it is writable by another user" \
    "$(find "$UH/.mlw/data" -perm /022 ! -type l -print -quit)" ""
done

finish
