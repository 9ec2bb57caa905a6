# shellcheck shell=sh
# mlw install: the environment's build script, run in the image by the environment's Dockerfile
# (RUN ["/bin/sh", "/mlw/env/install.sh", ARGUMENTS…]; exec/install_script.cpp writes the words).
# Beside it: conda_dependencies.yml, requirements.txt (the pip: section) and files/ (the project
# files the pip: section names, wheels). Conda where the image has it; else every problem of the
# file is said at once, then the pip: section is installed with pip.
#   $1  what to say when the image has no spark-submit ('' unless Framework is PySpark)
#   $2  what to say, without conda, about the file's conda packages ('' when it has none)
#   $3  the python version the file pins (digits and dots; '' when none)
#   $4  $5  what to say before and after the image's python version when it is not the pin
#   $6  what to say when the image has neither conda nor pip
#   $7  what to say when a notebook kernel's image has no ipykernel and nothing to install it
#       with ('' for a run's image: ipykernel is added only to a kernel's)
#   $8… the wheels the pip: section names by file, checked against the tags the image's python
#       accepts (pip's own packaging.tags)
# A reason that stops the build is one line, mlw-error[CODE]: MESSAGE (exec/build_output.cpp reads
# it): 127 for a missing command, 125 for a file the image cannot install.
set -e
env_dir=$(cd "$(dirname "$0")" && pwd)
no_spark=$1 conda_problem=$2 pin=$3 pin_before=$4 pin_after=$5 no_pip=$6 no_kernel=$7
shift 7
# A notebook kernel's image: ipykernel, with what installed the rest, unless the image has it.
add_ipykernel() {
  [ -n "$no_kernel" ] || return 0
  if python3 -c 'import ipykernel' >/dev/null 2>&1; then
    echo 'mlw: ipykernel is there, for the notebook kernel'
  elif command -v conda >/dev/null 2>&1; then
    conda install -y -n base ipykernel
  elif python3 -m pip --version >/dev/null 2>&1; then
    echo 'mlw: adding ipykernel, for the notebook kernel'
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir --disable-pip-version-check \
      ipykernel
  else
    printf 'mlw-error[125]: %s\n' "$no_kernel"
    exit 1
  fi
}
cd "$env_dir/files"
if [ -n "$no_spark" ] && ! command -v spark-submit >/dev/null 2>&1; then
  printf 'mlw-error[127]: %s\n' "$no_spark"
  exit 1
fi
if command -v conda >/dev/null 2>&1; then
  conda env update -n base -f "$env_dir/conda_dependencies.yml"
  add_ipykernel
  exit 0
fi
problems=''
problem() { problems="${problems:+$problems; also: }$1"; }
[ -z "$conda_problem" ] || problem "$conda_problem"
if [ -n "$pin" ]; then
  have=$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null || echo none)
  case "$have" in
  "$pin" | "$pin".*) ;;
  *) problem "$pin_before$have$pin_after" ;;
  esac
fi
if [ $# -gt 0 ]; then
  bad=$(python3 - "$@" 2>/dev/null <<'PY' || true
import platform, sys
try:
    from pip._vendor.packaging.tags import sys_tags
except Exception:
    sys.exit(0)
ok = {(t.interpreter, t.abi, t.platform) for t in sys_tags()}
bad = []
for path in sys.argv[1:]:
    name = path.rsplit('/', 1)[-1]
    parts = name[:-4].split('-')
    if len(parts) < 5:
        continue
    py, abi, plat = parts[-3:]
    if not any((p, a, q) in ok for p in py.split('.') for a in abi.split('.')
               for q in plat.split('.')):
        bad.append('%s (%s-%s-%s)' % (name, py, abi, plat))
if bad:
    print('wheels for another platform or Python than the image has (python3 %d.%d on %s): %s'
          % (sys.version_info[0], sys.version_info[1], platform.machine(), ', '.join(bad)))
PY
  )
  [ -z "$bad" ] || problem "$bad"
fi
if [ -n "$problems" ]; then
  printf 'mlw-error[125]: %s\n' "$problems"
  exit 1
fi
if [ ! -s "$env_dir/requirements.txt" ]; then
  echo 'mlw: nothing to install'
elif python3 -m pip --version >/dev/null 2>&1; then
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir --disable-pip-version-check \
    -r "$env_dir/requirements.txt"
else
  printf 'mlw-error[125]: %s\n' "$no_pip"
  exit 1
fi
add_ipykernel
