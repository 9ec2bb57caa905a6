#!/bin/sh
# Writes mlw.1.gz and the bash, zsh and fish completions with the built mlw ($1) into $2.
set -eu
mkdir -p "$2"
"$1" __man | gzip -9n >"$2/mlw.1.gz.tmp" && mv "$2/mlw.1.gz.tmp" "$2/mlw.1.gz"
"$1" completion bash >"$2/mlw.bash"
"$1" completion zsh >"$2/_mlw"
"$1" completion fish >"$2/mlw.fish"
