# shellcheck shell=sh
# `attach -k`: appends the public key on stdin to the login's ~/.ssh/authorized_keys (made 0600
# in a 0700 ~/.ssh where there is none).
umask 077 && mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && cat >>~/.ssh/authorized_keys
