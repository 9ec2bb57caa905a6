# shellcheck shell=sh
# restartAfterReboot (compute key `restart`, docs/reproduce.md): a boot hook that starts again,
# after the machine restarted, the runs whose monitor the restart ended. The monitor of such a run
# writes this file to ~/.mlw/reboot.sh and sources it; the hook is one line that runs it with the
# word mlw-boot at each boot:
#   crontab   `@reboot /bin/sh "$HOME/.mlw/reboot.sh" mlw-boot` in the user's crontab, or, where
#             there is no crontab command,
#   systemd   the user unit mlw-reboot.service (WantedBy default.target), for a user whose
#             manager starts at boot (loginctl enable-linger).
# A run that wants it has the file `reboot` in its folder (its maxRestarts) and `boot.env` (the
# login's PATH and DOCKER_* variables, which cron's bare environment lacks); the hook is installed
# while one such run has no end, and removed with the last. Each monitor writes its pid with the
# boot's id into monitor.pid (exec/launch.sh): a monitor of an earlier boot is gone, whatever
# process has its pid now.
# shellcheck disable=SC2016 # cron's shell expands $HOME
mlw_hook_line='@reboot /bin/sh "$HOME/.mlw/reboot.sh" mlw-boot'
mlw_hook_unit=$HOME/.config/systemd/user/mlw-reboot.service

# mlw_hook_kind: prints crontab, systemd or none: what this machine offers for the hook.
mlw_hook_kind() {
  if command -v crontab >/dev/null 2>&1; then
    echo crontab
  elif command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1 &&
    [ "$(loginctl show-user "$(id -un)" -p Linger --value 2>/dev/null)" = yes ]; then
    echo systemd
  else
    echo none
  fi
}

# mlw_hook_locked CMD…: CMD under the hook's lock (every run of the user installs and removes it).
mlw_hook_locked() {
  mkdir -p "$HOME/.mlw" || return 1
  (
    exec 9>"$HOME/.mlw/reboot.lock"
    flock -w 30 9 || exit 1
    "$@"
  )
}

mlw_hook_add() {
  case $(mlw_hook_kind) in
    crontab)
      t=$(crontab -l 2>/dev/null) || t=
      # The line itself, whole (a commented-out copy is not the hook).
      printf '%s\n' "$t" | grep -qxF "$mlw_hook_line" && return 0
      printf '%s\n' "$t" "$mlw_hook_line" | sed '/./,$!d' | crontab -
      ;;
    systemd)
      mkdir -p "${mlw_hook_unit%/*}" &&
        printf '%s\n' '[Unit]' 'Description=mlw: start again the runs kept by restartAfterReboot' \
          '[Service]' 'Type=oneshot' 'ExecStart=/bin/sh %h/.mlw/reboot.sh mlw-boot' \
          '[Install]' 'WantedBy=default.target' >"$mlw_hook_unit" &&
        systemctl --user enable mlw-reboot.service >/dev/null 2>&1
      ;;
    *)
      echo "neither crontab nor a systemd user manager that starts at boot (loginctl" \
        "enable-linger) is there for the boot hook" >&2
      return 1
      ;;
  esac
}

# mlw_hook_drop: removes the hook when no run of the user still wants it.
mlw_hook_drop() {
  for f in "$HOME"/.mlw/runs/*/reboot; do
    [ -e "$f" ] && return 0
  done
  if command -v crontab >/dev/null 2>&1; then
    t=$(crontab -l 2>/dev/null) || return 0
    printf '%s\n' "$t" | grep -qxF "$mlw_hook_line" || return 0
    t=$(printf '%s\n' "$t" | grep -vxF "$mlw_hook_line")
    if [ -n "$t" ]; then printf '%s\n' "$t" | crontab -; else crontab -r; fi
  elif [ -e "$mlw_hook_unit" ]; then
    systemctl --user disable mlw-reboot.service >/dev/null 2>&1
    rm -f "$mlw_hook_unit"
  fi
}

# mlw_hook_install MAX: in the run folder, marks the run as one the hook starts again (at most
# MAX restarts in all) and installs the hook; says why not on stderr.
mlw_hook_install() {
  echo "$1" >reboot && mlw_hook_locked mlw_hook_add
}

# mlw_hook_remove: in the run folder, at the run's end.
mlw_hook_remove() {
  [ -e reboot ] || return 0
  rm -f reboot
  mlw_hook_locked mlw_hook_drop
}

# mlw_boot_id: this boot's id into b.
mlw_boot_id() {
  b=
  { read -r b </proc/sys/kernel/random/boot_id; } 2>/dev/null || b=
}

# mlw_relaunch: in a run folder with `reboot`, starts its monitor again where the machine
# restarted under it (a monitor.pid of another boot, or of a pid that no longer runs), unless the
# run ended, was stopped (143) or used its restarts (137, said in the log).
mlw_relaunch() {
  { [ -f exit_code ] || [ -e no_relaunch ]; } && return 0
  mlw_boot_id
  p=
  o=
  { read -r o p || :; } <monitor.pid 2>/dev/null
  [ "$o" = "$b" ] && [ -n "$p" ] && kill -0 "$p" 2>/dev/null && return 0
  if [ -e stopped ]; then
    echo 143 >exit_code.tmp && mv exit_code.tmp exit_code
    return 0
  fi
  read -r max <reboot || max=0
  n=0
  [ -s restarts ] && { read -r n <restarts || n=0; }
  if [ "$n" -ge "$max" ]; then
    echo "mlw: the machine restarted during the run; its $max restarts (maxRestarts) were used:" \
      "not started again" >>driver_log.txt
    : >reboot_limit
    echo 137 >exit_code.tmp && mv exit_code.tmp exit_code
    return 0
  fi
  n=$((n + 1))
  echo "$n" >restarts.tmp && mv restarts.tmp restarts
  echo "mlw: restart $n of $max after the machine restarted" >>driver_log.txt
  : >rebooted
  # Detached as exec/launch.sh starts it, with a parent that reaps it at once.
  # shellcheck disable=SC2016 # the started shell expands $!
  setsid sh -c '( . ./boot.env; . ./monitor.sh ) >>monitor.log 2>&1 </dev/null &
    echo "$1 $!" >monitor.pid; exec >/dev/null 2>&1; wait' mlw-relaunch "$b" \
    </dev/null >/dev/null 2>&1 &
}

# mlw_reboot_all: the hook: every run folder of the user that wants it; the hook goes with the
# last of them.
mlw_reboot_all() {
  for f in "$HOME"/.mlw/runs/*/reboot; do
    [ -e "$f" ] || continue
    (cd "${f%/reboot}" && mlw_relaunch)
    [ -f "${f%/reboot}/exit_code" ] && rm -f "$f"
  done
  mlw_hook_locked mlw_hook_drop
}

if [ "${1:-}" = mlw-boot ]; then
  mlw_reboot_all
fi
