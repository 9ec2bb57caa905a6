# shellcheck shell=sh
# shellcheck disable=SC2034 # d, shared and note are the caller's
# Which lease folder a machine's leases use (docs/gpus.md "Between users"), put before lease.sh
# and queue.sh. Leases are shared between the users of a machine only in a folder that no user
# can take over: one owned by root with mode 1777 (as /tmp), made once by an administrator with
# the lock files it needs (mlw_lease_admin says the command; root's own runs make them too).
# Anywhere else, say a folder that a user made first, each user's runs lease in that user's own
# folder, ~/.mlw/leases (0700): they coordinate with each other, not with other users.
#
# mlw_lease_folder DIR: sets d (the folder to use), shared (1 for DIR, empty for the user's own)
# and note (why DIR is not used; empty when it is). Fails (status 1, with note) only where the
# user's own folder cannot be had.
mlw_lease_folder() {
  shared=
  note=
  d=$1
  if [ ! -e "$1" ] && [ ! -L "$1" ] && [ "$(id -u)" = 0 ]; then
    mkdir -m 1777 "$1" 2>/dev/null && chmod 1777 "$1"
  fi
  if mlw_lease_shared "$1"; then
    shared=1
    return 0
  fi
  if [ -L "$1" ] || [ -e "$1" ]; then
    note="the lease folder $1 is not root's with mode 1777 (it is $(stat -c "%U's, mode %a" \
      "$1" 2>/dev/null))"
  else
    note="there is no lease folder $1"
  fi
  mlw_lease_own
}

# mlw_lease_shared DIR: true where DIR is shared safely: a folder, not a link, root's, mode 1777.
mlw_lease_shared() {
  [ -d "$1" ] && [ ! -L "$1" ] && [ "$(stat -c %u:%a "$1" 2>/dev/null)" = 0:1777 ]
}

# mlw_lease_own: the user's own folder (d, shared empty), made 0700 where it is missing; adds
# to note what is wrong with it.
mlw_lease_own() {
  shared=
  d=${HOME:-/nonexistent}/.mlw/leases
  if [ ! -d "$d" ]; then
    mkdir -p "${d%/leases}" 2>/dev/null
    mkdir -m 700 "$d" 2>/dev/null
  fi
  if [ -L "$d" ] || [ ! -d "$d" ] || [ ! -O "$d" ]; then
    note="$note; and $d is not a folder of this user's"
    return 1
  fi
  chmod 700 "$d" 2>/dev/null
  return 0
}

# mlw_lease_admin DIR: the administrator's command that makes DIR shared between users.
mlw_lease_admin() {
  echo "sudo sh -c 'install -d -o root -g root -m 1777 $1 && cd $1 &&" \
    "for k in \$(seq 0 63); do : >gpu.\$k; : >slot.\$k; done'"
}

# mlw_lease_probe DIR: doctor's lines (remote/probe.sh), nothing made: lease_dir=shared, or
# lease_dir=WHY it is not (with lease_admin=COMMAND).
mlw_lease_probe() {
  if mlw_lease_shared "$1"; then
    for k in gpu.0 slot.0; do
      if [ -L "$1/$k" ] || [ "$(stat -c %u "$1/$k" 2>/dev/null)" != 0 ]; then
        echo "lease_dir=$1 has no $k of root's"
        echo "lease_admin=$(mlw_lease_admin "$1")"
        return 0
      fi
    done
    echo "lease_dir=shared"
  elif [ -e "$1" ] || [ -L "$1" ]; then
    echo "lease_dir=$1 is $(stat -c "%U's, mode %a" "$1" 2>/dev/null), not root's with mode 1777"
    echo "lease_admin=$(mlw_lease_admin "$1")"
  else
    echo "lease_dir=there is no $1"
    echo "lease_admin=$(mlw_lease_admin "$1")"
  fi
}
