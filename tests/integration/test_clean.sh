#!/usr/bin/env bash
# `experiment clean` on a remotedocker target, against the real sshd and dockerd of
# tests/fixtures/servers.sh: one project's images and run folders, then with --all-projects every
# project's and the content store. That removes every mlw_env image of the engine, which the
# other suites share: ctest runs this suite after all of them (tests/CMakeLists.txt, DEPENDS), so
# that it neither removes an image another suite is about to run nor sees one another suite built.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_IMAGE DOCKER_HOST
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
USER_HOME=$(getent passwd mlwtest | cut -d: -f6)
rm -rf "$USER_HOME/.mlw" "$USER_HOME/.ssh"

new_project cproj
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
"$MLW" computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin -k \
  --accept-host-key --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach" "$?" 0
printf 'print("hello")\n' >hello.py
run_mlw -o json experiment submit -c rd hello.py
expect_eq "a run that builds the environment" "$CODE" 0
TAG=$(json_get "$OUT" 'd["image_tag"]')
RID=$(json_get "$OUT" 'd["run_id"]')
check "the run's image is in the engine" bash -c "docker image inspect '$TAG' >/dev/null"
check "the target has the run's folder" test -d "$USER_HOME/.mlw/runs/$RID"
check "the target has the snapshot's objects" test -d "$USER_HOME/.mlw/objects"

# A second project on the same machine, with an environment of its own (issue 45: clean is one
# project's unless asked for all).
new_project oproj
"$MLW" computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin -k \
  --accept-host-key --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
printf '\n# the other project\n' >>aml_config/conda_dependencies.yml
printf 'print("other")\n' >other.py
run_mlw -o json experiment submit -c rd other.py
expect_eq "the other project's run" "$CODE" 0
OTAG=$(json_get "$OUT" 'd["image_tag"]')
ORID=$(json_get "$OUT" 'd["run_id"]')
check "… with an image of its own" test "$OTAG" != "$TAG"
# … and a sweep, whose points took their turns on the target (docs/sweeps.md).
"$MLW" -q experiment sweep -c rd other.py --x 1,2 >"$WORK/o" 2>"$WORK/e"
expect_eq "the other project's sweep" "$?" 0
OSWEEP=$(sed -n 's/^SweepId: //p' "$WORK/o")
check "… its turns folder is on the target" test -d "$USER_HOME/.mlw/sweeps/$OSWEEP/turns"
cd "$WORK/cproj" || exit 1

run_mlw experiment clean -c rd
expect_eq "clean" "$CODE" 0
expect_contains "clean names the image it removed" "$OUT" "$TAG"
expect_contains "… and the run folder" "$OUT" "run runs/$RID/"
printf '%s\n' "$OUT" >"$WORK/clean.txt"
expect_eq "one line per thing removed: a header, the image, the run folder" "$(wc -l <"$WORK/clean.txt")" 3
expect_eq "… none over 100 characters" "$(awk 'length > 100' "$WORK/clean.txt")" ""
expect_contains "the kept content store is said, with how to remove it" "$ERR" "--all-projects removes it"
check "the run's image is gone" bash -c "! docker image inspect '$TAG' >/dev/null 2>&1"
check "the target's run folder is gone" test ! -e "$USER_HOME/.mlw/runs/$RID"
check "the other project's image stays" bash -c "docker image inspect '$OTAG' >/dev/null"
check "the other project's run folder stays" test -d "$USER_HOME/.mlw/runs/$ORID"
check "… and its sweep's folder" test -d "$USER_HOME/.mlw/sweeps/$OSWEEP"
check "the shared snapshot store stays" test -d "$USER_HOME/.mlw/objects"
check "the run stays in the local history" test -e ".mlw/runs/$RID/run.json"

run_mlw -o json experiment clean -c rd --all-projects
expect_eq "clean --all-projects" "$CODE" 0
expect_contains "it names the other project's image" "$OUT" "$OTAG"
check "no mlw images left" bash -c "! docker images --format '{{.Repository}}' | grep -q mlw_env"
check "the other project's run folder is gone" test ! -e "$USER_HOME/.mlw/runs/$ORID"
expect_contains "… and its sweep's folder, said" "$OUT" "sweep sweeps/$OSWEEP/"
check "… gone" test ! -e "$USER_HOME/.mlw/sweeps/$OSWEEP"
check "the target's snapshot store is gone" test ! -e "$USER_HOME/.mlw/objects"

finish
