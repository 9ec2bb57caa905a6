# shellcheck shell=sh
# How a run a monitor ran ended, printed in its run folder (follow.sh evaluates it): the script's
# exit code, then "oom" where the kernel killed it for memory, "lost" where the Docker engine did
# not answer again, "outage" where it stopped answering for a while, "restarts N" where its
# restart policy ran the script again N times, "reboot-limit" where the machine restarted after
# they were used, "no-relaunch" where the boot hook of restartAfterReboot did not start it again,
# "gpu-stop REASON" where the idleGpu policy stopped it and "gpu-note TEXT"s of its GPU sampler.
c=
[ -f exit_code ] && { read -r c || :; } <exit_code
echo "$c"
[ -e oom ] && echo oom
[ -e lost ] && echo lost
[ -e outage ] && echo outage
[ -s restarts ] && { read -r r || :; } <restarts && echo "restarts $r"
[ -e reboot_limit ] && echo reboot-limit
[ -e no_relaunch ] && echo no-relaunch
[ -s gpu_stop ] && { read -r r || :; } <gpu_stop && echo "gpu-stop $r"
[ -s gpu_notes ] && head -n 20 gpu_notes | sed 's/^/gpu-note /'
