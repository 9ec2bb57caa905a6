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
# --- 2017–2018 files as users have them (issue 33): named for what they are, never a wrong reason
# The 2018 Azure ML SDK's run configuration, as its samples wrote it.
cat >aml_config/sdk.runconfig <<'YML'
script: train.py
arguments: []
target: local
framework: Python
communicator: None
environment:
  python:
    userManagedDependencies: false
    condaDependenciesFile: aml_config/conda_dependencies.yml
history:
  outputCollection: true
YML
cp aml_config/local.compute aml_config/sdk.compute
printf 'print("never")\n' >train.py
run_mlw experiment submit -c sdk train.py
expect_eq "an SDK 2018 run configuration: refused (125: the run could not start)" "$CODE" 125
expect_contains "… named as such" "$ERR" "an Azure ML SDK (2018) run configuration"
expect_not_contains "… not as PySpark" "$ERR" "PySpark"
expect_eq "… in one line, without a dozen unknown-key warnings" "$(grep -c . <<<"$ERR")" 1
rm aml_config/sdk.runconfig aml_config/sdk.compute
# An early 2017 JSON run configuration: CondaFile (CondaDependenciesFile's first name) and
# ManagedEnvironment.
cat >aml_config/early.runconfig <<'JSON'
{
  "ArgumentVector": ["$file"],
  "Target": "local",
  "Framework": "Python",
  "CondaFile": "aml_config/early_conda.yml",
  "ManagedEnvironment": true,
  "PrepareEnvironment": true,
  "TrackedRun": true
}
JSON
cp aml_config/local.compute aml_config/early.compute
printf 'dependencies:\n  - python=3.11\n' >aml_config/early_conda.yml
printf 'print("early ran")\n' >early.py
run_mlw -o json experiment submit -c early early.py
expect_eq "an early run configuration runs" "$CODE" 0
expect_not_contains "ManagedEnvironment: no wrong did-you-mean" "$ERR" "did you mean"
expect_not_contains "CondaFile: not an unknown key" "$ERR" "unknown key"
# On a docker target the file CondaFile names is the environment: a malformed one is named.
sed 's/"Target": "local"/"Target": "earlyd"/; s/early_conda.yml/early_bad.yml/' aml_config/early.runconfig >aml_config/earlyd.runconfig
cp aml_config/docker.compute aml_config/earlyd.compute
printf 'dependencies: 5\n' >aml_config/early_bad.yml
run_mlw experiment submit -c earlyd early.py
expect_eq "CondaFile is read as CondaDependenciesFile (its malformed file refused)" "$CODE" 125
expect_contains "… naming that file" "$ERR" "aml_config/early_bad.yml:1: dependencies must be a list"
# A 2017 HDInsight cluster target.
printf 'type: cluster\naddress: my-cluster-ssh.azurehdinsight.net\nusername: sshuser\n' >aml_config/hdi.compute
expect_error "type: cluster is named as HDInsight" 1 "HDInsight Spark cluster, which mlw does not run" \
  computetarget show -n hdi
rm aml_config/hdi.compute
finish
