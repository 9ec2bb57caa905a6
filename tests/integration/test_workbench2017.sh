#!/usr/bin/env bash
# Projects shaped like the public 2017 Workbench samples (tests/data/workbench2017/: an Iris
# classifier with azureml.logging, a churn model, a user of AZUREML_NATIVE_SHARE_DIRECTORY), with
# the aml_config files as Workbench wrote them: they load without a warning and run on the local
# and docker targets, their metrics side by side in history compare. Also: the 2017 logger takes
# a real numpy array, and mlw's azureml package hides no other azureml.* package.
source "$(dirname "$0")/lib.sh"
require_env DOCKER_HOST MLW_TEST_IMAGE
DATA="$MLW_SOURCE_DIR/tests/data/workbench2017"
export HOME="$WORK/home"
mkdir -p "$HOME"

# sample NAME SCRIPT METRIC: runs the sample on local and docker, compares the two runs.
sample() {
  local name=$1 script=$2 metric=$3
  cp -r "$DATA/$name" "$WORK/$name"
  cd "$WORK/$name" || exit 1
  # The one edit a user makes here: a base image this machine has (no registry is reachable).
  sed -i "s|^baseDockerImage:.*|baseDockerImage: \"$MLW_TEST_IMAGE\"|" aml_config/docker.compute
  run_mlw computetarget list
  expect_eq "$name: the 2017 files load" "$CODE" 0
  expect_eq "$name: without a warning" "$ERR" ""
  run_mlw experiment submit -c local "$script"
  expect_eq "$name on local" "$CODE" 0
  expect_eq "$name on local: no warning" "$(grep -c 'warning' <<<"$ERR")" 0
  LOCAL_RUN=$("$MLW" -o json history last | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
  run_mlw experiment submit -c docker "$script"
  expect_eq "$name on docker" "$CODE" 0
  DOCKER_RUN=$("$MLW" -o json history last | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
  run_mlw -o json history compare "$LOCAL_RUN" "$DOCKER_RUN"
  expect_eq "$name: $metric side by side in history compare" \
    "$(json_get "$OUT" '[r for r in d if r["field"] == "'"$metric"'"][0]["'"$LOCAL_RUN"'"] is not None and [r for r in d if r["field"] == "'"$metric"'"][0]["'"$DOCKER_RUN"'"] is not None')" "True"
}

sample iris iris_sklearn.py Accuracy
expect_contains "iris: the sample's output" "$OUT" "Accuracy"
run_mlw -o json history info -r "$DOCKER_RUN"
expect_eq "iris: the precision array is recorded as a list" "$(json_get "$OUT" 'len(d["metrics"]["Precision"])')" "3"
expect_eq "iris: the model is among the outputs" "$(json_get "$OUT" '"model.pkl" in str(d["outputs"])')" "True"

sample churn churn_prediction.py Accuracy
expect_eq "churn: the churn rate compared too" "$(json_get "$OUT" 'any(r["field"] == "Churn Rate" for r in d)')" "True"

sample share share_counter.py "Runs Seen"
"$MLW" -q experiment submit -c local share_counter.py >/dev/null 2>&1
run_mlw -o json history last
expect_eq "share: the local share persists across runs" "$(json_get "$OUT" 'd["metrics"]["Runs Seen"]')" "2"
check "share: per project and target, the 2017 way" test -f "$HOME/.azureml/share/share/local/runs.txt"
check "share: the docker target has its own" test -f "$HOME/.azureml/share/share/docker/runs.txt"
check "share: nothing lands beside the folder" test ! -e "$HOME/.azureml/share/share/localruns.txt"

# --- the 2017 logger with a real numpy array (Debian's python3-numpy) ------------------------
cd "$WORK/iris" || exit 1
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  fail "numpy: /usr/bin/python3 has no numpy (scripts/setup installs python3-numpy)"
else
  "$MLW" -q computetarget attach local -n debianpy --python /usr/bin/python3 >/dev/null
  run_mlw experiment submit -c debianpy iris_sklearn.py
  expect_eq "a numpy array logged with the 2017 logger does not crash the script" "$CODE" 0
  run_mlw -o json history last
  expect_eq "the numpy array is recorded as a list" "$(json_get "$OUT" 'type(d["metrics"]["Precision"]).__name__')" "list"
fi
cat >odd.py <<'PY'
from azureml.logging import get_azureml_logger
class Unprintable:
    def __str__(self):
        raise RuntimeError("no text")
get_azureml_logger().log("odd", Unprintable())
print("still running")
PY
run_mlw experiment submit -c local odd.py
expect_eq "the logging shim never raises" "$CODE" 0
expect_contains "the script went on" "$OUT" "still running"

# --- mlw's azureml package hides no other installed azureml.* package -------------------------
for style in pkgutil namespace; do
  site="$WORK/site-$style"
  mkdir -p "$site/azureml/core"
  echo 'VERSION = "other azureml package"' >"$site/azureml/core/__init__.py"
  [ $style = pkgutil ] &&
    echo '__path__ = __import__("pkgutil").extend_path(__path__, __name__)' >"$site/azureml/__init__.py"
  cat >both.py <<'PY'
import azureml.core
from azureml.logging import get_azureml_logger
get_azureml_logger().log("both", 1)
print("azureml.core:", azureml.core.VERSION)
PY
  run_mlw experiment submit -c local -e "PYTHONPATH=$site" both.py
  expect_eq "another azureml package ($style style) beside mlw's: exit 0" "$CODE" 0
  expect_contains "another azureml package ($style style) is importable" "$OUT" "azureml.core: other azureml package"
done
finish
