# shellcheck shell=sh
# Steps on a target's Docker engine and mlw's store there, each a function called on the line after
# this file with its words quoted. DOCKER… is the docker command (`docker`, `sudo docker`, …).

# mlw_has_image TAG DOCKER…: succeeds when the engine has the image.
mlw_has_image() {
  tag=$1
  shift
  "$@" image inspect "$tag" >/dev/null 2>&1
}

# mlw_clean_images DOCKER…: removes every mlw_env image of the engine; prints docker's
# "Untagged: mlw_env:…" lines. An image a container still uses stays.
mlw_clean_images() {
  "$@" images --filter reference='mlw_env:*' --format '{{.Repository}}:{{.Tag}}' |
    xargs -r "$@" rmi 2>&1 | grep -i untagged
  exit 0
}

# mlw_clean_store STORE: removes the snapshot store under STORE (~/.mlw) and the folders of the runs
# that ended; prints "objects N" (how many it held) and "run runs/ID/" for each run folder.
mlw_clean_store() {
  cd "$1" 2>/dev/null || exit 0
  # shellcheck disable=SC2012 # a count of names made by mlw (hex digests)
  n=$(ls objects 2>/dev/null | wc -l)
  rm -rf objects incoming
  echo "objects $n"
  for r in runs/*/; do
    { [ -e "$r/exit_code" ] || [ -e "$r/batch_state" ]; } && rm -rf "$r" && echo "run $r"
  done
  exit 0
}

# mlw_forget RUN: removes a run folder in the background (prepare's, once the image is built).
mlw_forget() {
  # Its descriptors closed, so that the step ends before the removal does.
  { rm -rf "$1"; } >/dev/null 2>&1 </dev/null &
}
