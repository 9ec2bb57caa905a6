#!/usr/bin/env bash
# Projects: create with each template, the layout of spec §1, bad names, help and version.
source "$(dirname "$0")/lib.sh"

cd "$WORK"
run_mlw project create -n demo
expect_eq "create exits 0" "$CODE" 0
for f in aml_config/local.compute aml_config/local.runconfig aml_config/docker.compute \
  aml_config/docker.runconfig aml_config/conda_dependencies.yml aml_config/spark_dependencies.yml \
  .amlignore train.py; do
  check "layout has $f" test -f "demo/$f"
done
expect_contains "generated files explain their keys" "$(cat demo/aml_config/docker.compute)" "# true: run the container with the machine's GPUs (uncomment, or add nvidiaDocker: true)."
expect_contains "runconfig writes Framework Python" "$(cat demo/aml_config/local.runconfig)" 'Framework: "Python"'
expect_contains "git ignores .mlw" "$(cat demo/.gitignore)" ".mlw/"

mkdir -p "$WORK/parent"
run_mlw project create -n other -p "$WORK/parent" --template tensorflow-mnist
expect_eq "create -p exits 0" "$CODE" 0
check "project created under -p" test -f "$WORK/parent/other/train.py"
# The help's example, verbatim but for HOME: -p names a folder that is not there yet.
HOME="$WORK/home-p" run_mlw project create -n mnist -p '~/work' --template pytorch-mnist
expect_eq "create -p ~/work (a folder not made yet) exits 0" "$CODE" 0
check "the folder and the project were made" test -f "$WORK/home-p/work/mnist/train.py"
touch "$WORK/not-a-folder"
expect_error "-p naming a file" 1 "is not a folder" project create -n x -p "$WORK/not-a-folder"

expect_error "existing non-empty folder" 1 "already exists" project create -n demo
expect_error "name with a path" 2 "may only contain" project create -n ../x
expect_error "empty name" 2 "must not be empty" project create -n ""
expect_error "65-character name" 2 "at most 64" project create -n "$(printf 'a%.0s' {1..65})"
expect_error "unknown template" 2 'did you mean "pytorch-mnist"' project create -n t2 --template pytorch-mnst
check "failed creates leave nothing" test ! -e "$WORK/x" -a ! -e "$WORK/t2"

# Every template runs on the local target, with no download and no framework installed.
for template in blank pytorch-mnist tensorflow-mnist; do
  cd "$WORK" && "$MLW" -q project create -n "t_${template//-/_}" --template "$template" >/dev/null
  cd "$WORK/t_${template//-/_}"
  run_mlw experiment submit -c local train.py --epochs 2
  expect_eq "$template template runs" "$CODE" 0
  run_mlw -o json history last
  expect_eq "$template run is recorded Completed" "$(json_get "$OUT" 'd["status"]')" "Completed"
  if [ "$template" != blank ]; then
    expect_contains "$template logs accuracy" "$(json_get "$OUT" 'sorted(d["metrics"])')" "ccuracy"
  fi
done
cd "$WORK/t_pytorch_mnist" && run_mlw history logs -r "$(json_get "$("$MLW" -o json history last)" 'd["run_id"]')"
expect_contains "pytorch template says which device" "$OUT" "device:"

# Outside a project: say where mlw looked; --project points at one from anywhere.
mkdir -p "$WORK/empty/deeper"
cd "$WORK/empty/deeper"
expect_error "no project found" 1 "no aml_config/ folder found in $WORK/empty/deeper or any folder above it" history list
expect_error "--project without aml_config" 1 "no aml_config/ folder in $WORK/empty" --project "$WORK/empty" history list
run_mlw --project "$WORK/demo" -o json computetarget list
expect_eq "--project from elsewhere" "$(json_get "$OUT" 'len(d)')" "2"
mkdir -p "$WORK/demo/sub/dir" && cd "$WORK/demo/sub/dir"
run_mlw -o json computetarget list
expect_eq "found from a subfolder" "$(json_get "$OUT" 'len(d)')" "2"
cd "$WORK"

run_mlw --version
expect_contains "--version" "$OUT" "mlw 0."
for cmd in "project create" "computetarget attach local" "computetarget list" "computetarget show" \
  "computetarget detach" "experiment submit" "experiment cancel" "history list" "history last" \
  "history info" "history logs" "history download" "history compare"; do
  # shellcheck disable=SC2086
  run_mlw $cmd --help
  expect_eq "$cmd --help exits 0" "$CODE" 0
  expect_contains "$cmd --help has examples" "$OUT" "Examples:"
done
expect_error "unknown command" 2 "unknown command \"frobnicate\"" frobnicate

finish
