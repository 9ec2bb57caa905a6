# shellcheck shell=sh
# Steps on a target's Docker engine and mlw's store there, each a function called on the line after
# this file with its words quoted. DOCKER… is the docker command (`docker`, `sudo docker`, …).

# mlw_has_image TAG DOCKER…: succeeds when the engine has the image.
mlw_has_image() {
  tag=$1
  shift
  "$@" image inspect "$tag" >/dev/null 2>&1
}

# mlw_clean_images PROJECT N TAG... DOCKER...: removes PROJECT's mlw_env images: those built for it
# (label mlw.project) and the N TAGs (the images its recorded runs used); PROJECT "" removes every
# mlw_env image of the engine. Prints docker's "Untagged: mlw_env:..." lines. An image a container
# still uses stays.
mlw_clean_images() {
  project=$1 n=$2
  shift 2
  tags=
  while [ "$n" -gt 0 ]; do
    tags="$tags$1
"
    shift
    n=$((n - 1))
  done
  if [ -z "$project" ]; then
    "$@" images --filter reference='mlw_env:*' --format '{{.Repository}}:{{.Tag}}'
  else
    "$@" images --filter reference='mlw_env:*' --filter label="mlw.project=$project" \
      --format '{{.Repository}}:{{.Tag}}'
    printf '%s' "$tags"
  fi | sort -u | xargs -r "$@" rmi 2>&1 | grep -i untagged
  exit 0
}

# mlw_clean_store STORE PROJECT: removes, under STORE (~/.mlw), the folders of PROJECT's runs that
# ended (runs/PROJECT_DIGITS/), printing "run runs/ID/" for each, and of its sweeps that no run
# waits in ("sweep sweeps/ID/"), and "kept objects N": the snapshot store, which every project's
# runs share, stays. PROJECT "": every ended run's and sweep's folder and the snapshot store
# ("objects N", how many it held).
mlw_clean_store() {
  # mlw_of FOLDER/ PREFIX: whether FOLDER's name is PREFIX and digits (any name where PREFIX is
  # only "_" or "_sweep_": every project's).
  mlw_of() {
    case $2 in _ | _sweep_) return 0 ;; esac
    set -- "${1%/}" "$2"
    set -- "${1##*/}" "$2"
    case ${1#"$2"} in "$1" | '' | *[!0-9]*) return 1 ;; esac
  }
  cd "$1" 2>/dev/null || exit 0
  # shellcheck disable=SC2012 # a count of names made by mlw (hex digests)
  n=$(ls objects 2>/dev/null | wc -l)
  if [ -z "$2" ]; then
    rm -rf objects incoming
    echo "objects $n"
  elif [ "$n" -gt 0 ]; then
    echo "kept objects $n"
  fi
  for r in runs/*/; do
    mlw_of "$r" "$2"_ || continue
    { [ -e "$r/exit_code" ] || [ -e "$r/batch_state" ]; } && rm -rf "$r" && echo "run $r"
  done
  # A sweep's turns (sweeps/PROJECT_sweep_DIGITS/turns, exec/monitor.sh), once no point of it
  # waits or runs there (no ticket of it is locked).
  for s in sweeps/*/; do
    { [ -d "$s" ] && mlw_of "$s" "$2"_sweep_; } || continue
    live=
    for q in "$s"turns/q.*; do
      if [ -d "$q" ] && ! flock -n "$q" true 2>/dev/null; then live=1; fi
    done
    [ -n "$live" ] || { rm -rf "$s" && echo "sweep $s"; }
  done
  exit 0
}

# mlw_forget RUN: removes a run folder in the background (prepare's, once the image is built).
mlw_forget() {
  # Its descriptors closed, so that the step ends before the removal does.
  { rm -rf "$1"; } >/dev/null 2>&1 </dev/null &
}
