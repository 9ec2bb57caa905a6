# shellcheck shell=sh
# How a run a monitor ran ended, printed in its run folder (follow.sh evaluates it): the script's
# exit code, then "oom" where the kernel killed it for memory.
c=
[ -f exit_code ] && { read -r c || :; } <exit_code
echo "$c"
[ -e oom ] && echo oom
