# shellcheck shell=sh
# A machine's data store (`mlw data`, docs/data.md): steps called on the line after this file with
# their words quoted; STORE is the compute file's dataStore (a leading ~/ is the login's home).
#   STORE/objects/SHA256[.x]  each file's content once (0444, 0555), checked by its hash on arrival
#   STORE/versions/ID         the objects of a version ("NAME SIZE" lines): written once complete
#   STORE/trees/ID/           the version's folder: hard links into objects/, folders 0555
#   STORE/trees/ID.made       its mtime: nothing in the tree may be newer (else it was written to)
#   STORE/trees/.ID.base      a version pushed as changes to BASE's folder, made after the push
#                             returned (.ID.gone, .ID.tar hold the changes)
#   STORE/uses/RUN_ID         a run that mounts versions: its run folder, then their ids
#   STORE/.gc.lock            pushes and uses hold it shared, gc exclusive
set -e
umask 022
mlw_data_locked=

# Sets S to the store's folder and makes its folders; takes the gc lock shared (fd 8), or with
# $2 = x exclusive.
mlw_data_open() {
  case $1 in
    \~) S=$HOME ;;
    \~/*) S=$HOME/${1#\~/} ;;
    *) S=$1 ;;
  esac
  if [ ! -d "$S/versions" ] || [ ! -d "$S/trees" ] || [ ! -d "$S/uses" ]; then
    mkdir -p "$S/objects" "$S/incoming" "$S/versions" "$S/trees" "$S/uses" || {
      echo "mlw: cannot make the data store $S on $(hostname)" >&2
      exit 5
    }
  fi
  [ -w "$S/versions" ] || {
    echo "mlw: the data store $S on $(hostname) is not writable by $(id -un) (mode $(stat -c %A "$S/versions"))" >&2
    exit 5
  }
  [ -z "$mlw_data_locked" ] || return 0
  exec 8>>"$S/.gc.lock"
  if [ "$2" = x ]; then flock 8; else flock -s 8; fi
  mlw_data_locked=1
}

# Removes a folder of read-only folders (a tree, or one being made), where there is one.
mlw_data_remove() {
  [ ! -e "$1" ] || {
    chmod -R u+w "$1" 2>/dev/null || :
    rm -rf "$1"
  }
}

# Removes a version's tree, its list and the changes it is to be made from (the next push makes
# them again).
mlw_data_drop() {
  mlw_data_remove "$S/trees/$1"
  mlw_data_remove "$S/trees/.$1.tmp"
  rm -f "$S/trees/$1.made" "$S/versions/$1" "$S/trees/.$1.base" "$S/trees/.$1.tar" \
    "$S/trees/.$1.gone" "$S/trees/.$1.diff"
}

# mlw_data_make ID, with trees/.ID.lock held: makes the folder of a version that a push left as
# changes to another's (trees/.ID.base names it): BASE's folder linked again (cp -al), what went
# removed, the tar of what is new unpacked, its folders 0555. Where BASE's folder is gone or was
# written to (then BASE is dropped too), drops the version (the next push sends it whole) and
# fails. A BASE whose own folder is still to be made is waited for (in a subshell: its lock's fd
# is this one's).
mlw_data_make() {
  { read -r mk_base mk_gone <"$S/trees/.$1.base"; } 2>/dev/null || return 1
  mk_its=
  { read -r mk_its _ <"$S/trees/.$mk_base.base"; } 2>/dev/null || :
  [ "$mk_its" = "$1" ] || (mlw_data_settle "$mk_base")
  mlw_data_remove "$S/trees/.$1.tmp"
  if mlw_data_derive "$1" "$mk_base" "$mk_gone" && (cd "$S" && tar -xf "trees/.$1.tar") &&
    find "$S/trees/.$1.tmp" -type d -exec chmod 555 {} + &&
    mv "$S/trees/.$1.tmp" "$S/trees/$1"; then
    : >"$S/trees/$1.made"
    rm -f "$S/trees/.$1.base" "$S/trees/.$1.tar" "$S/trees/.$1.gone" "$S/trees/.$1.diff"
    return 0
  fi
  # BASE's folder written to: it is dropped too (mlw_data_check), so that the next push sends
  # this version whole and a run of BASE gets it again.
  if mlw_data_whole "$mk_base" && [ -n "$(mlw_data_touched "$mk_base")" ]; then
    mlw_data_check "$mk_base" >/dev/null
  fi
  mlw_data_drop "$1"
  return 1
}

# mlw_data_settle ID: where the folder of a version is still to be made from its changes, waits
# for the process the push started to make it, or makes it (that process died).
mlw_data_settle() {
  mlw_data_pending "$1" || return 0
  exec 7>"$S/trees/.$1.lock"
  flock 7
  [ ! -f "$S/trees/.$1.base" ] || mlw_data_make "$1" || :
  rm -f "$S/trees/.$1.lock"
  exec 7>&-
}

# True where a version's folder is still to be made from its changes (its list is in place).
mlw_data_pending() {
  [ -f "$S/trees/.$1.base" ] && [ -f "$S/versions/$1" ]
}

# True where the store holds a version whole or will (its folder still to be made): a folder may
# be made from it.
mlw_data_derivable() {
  mlw_data_whole "$1" || mlw_data_pending "$1"
}

# True where the store holds a version whole: its list, its tree and the tree's note of when it
# was made (whether the tree was written to since is mlw_data_touched's).
mlw_data_whole() {
  [ -f "$S/versions/$1" ] && [ -d "$S/trees/$1" ] && [ -f "$S/trees/$1.made" ]
}

# Prints the first file or folder of a version's tree written to since it was made (nothing
# when none is).
mlw_data_touched() {
  t=$(find "$S/trees/$1" -newer "$S/trees/$1.made" -print -quit 2>/dev/null)
  [ -z "$t" ] || [ ! -d "$t" ] || {
    f=$(find "$S/trees/$1" -newer "$S/trees/$1.made" ! -type d -print -quit 2>/dev/null)
    t=${f:-$t/}
  }
  printf '%s' "$t"
}

# The ids that live runs use, one per line ("ID RUN_ID"). A run's marker is held by a shared lock
# by its monitor and what that started (exec/monitor.sh, which then leaves `data.held` in the
# run's folder), as GPU leases are: the kernel frees it when they end, however they end.
# Markers are removed for runs that ended (an exit_code in their folder — exit_code.job for a
# batch job — or an ended run.json), whose lock was taken and is free again (unless their
# folder's `reboot` says a boot hook starts them again), and whose folder never came for 2 days.
# A run not started yet (queued in Slurm or Grid Engine, or between submit and its monitor) has
# only its folder to go by.
mlw_data_live() {
  for u in "$S"/uses/*; do
    [ -f "$u" ] || continue
    d=$(head -n 1 "$u")
    case $d in \~/*) d=$HOME/${d#\~/} ;; esac
    if [ -e "$d/exit_code" ] || [ -e "$d/exit_code.job" ] ||
      grep -Eqs '"ended_ms": [1-9]' "$d/run.json" ||
      { [ -e "$d/data.held" ] && [ ! -e "$d/reboot" ] && flock -n -x "$u" true 2>/dev/null; } ||
      { [ ! -e "$d" ] && [ -n "$(find "$u" -mmin +2880)" ]; }; then
      rm -f "$u"
      continue
    fi
    tail -n +2 "$u" | sed "s|\$| ${u##*/}|"
  done
}

# mlw_data_ready STORE RUN_DIR RUN_ID ID...: for each version "ready ID PATH", "damaged ID FILE"
# (written to: its tree is removed, to be made again) or "missing ID"; with every one ready and a
# RUN_ID, marks them used by that run (its folder RUN_DIR) until it ends.
mlw_data_ready() {
  mlw_data_open "$1"
  dir=$2 run=$3
  shift 3
  all=1
  for id in "$@"; do
    mlw_data_settle "$id"
    if mlw_data_whole "$id"; then
      t=$(mlw_data_touched "$id")
      if [ -z "$t" ]; then
        printf 'ready %s %s\n' "$id" "$(cd "$S/trees/$id" && pwd -P)"
        continue
      fi
      printf 'damaged %s %s\n' "$id" "${t#"$S/trees/$id/"}"
      mlw_data_check "$id" >/dev/null
    fi
    printf 'missing %s\n' "$id"
    all=
  done
  if [ -n "$all" ] && [ -n "$run" ]; then
    { printf '%s\n' "$dir" "$@"; } >"$S/uses/$run.tmp" && mv -f "$S/uses/$run.tmp" "$S/uses/$run"
  fi
}

# mlw_data_held STORE ID BASE: mlw_data_ready of ID (for a push), then "held BASE" where the store
# holds BASE whole or will (its folder still to be made, not waited for: a push right after the
# last one): a push may make ID's folder from BASE's. Whether BASE's folder was written to (a
# walk of all of it) is left to mlw_data_make, which then drops both.
mlw_data_held() {
  mlw_data_ready "$1" "" "" "$2"
  ! mlw_data_derivable "$3" || printf 'held %s\n' "$3"
}

# mlw_data_tree STORE ID [BASE]: reads "N\n" and N bytes of "OBJECT SIZE" lines, then "T\n" and a
# T-byte tar that makes trees/.ID.tmp/ (folders, and hard links to objects/, relative to STORE); makes
# trees/ID from it (folders 0555) and versions/ID; prints "ready ID PATH". With BASE (a version
# whose tree this store holds), "F\n" and F bytes of NUL-ended paths, "D\n" and D bytes of folders
# come before the tar: the tree starts as BASE's (cp -al: links, no content copied), those files
# and then those (emptied) folders are removed, and the tar holds only what is new or changed;
# where BASE's tree is gone, nothing is made and it exits 6 (the push sends the whole tree).
# With BASE, the version is whole once its list is in place: its folder is made by a process
# started here, holding the version's lock, after the push returns (linking a large folder
# again is O(files), the changes O(changes)); whatever reads the version waits for it
# (mlw_data_settle); should BASE's folder have been written to, that process drops the version
# and the next push sends it whole. Two pushes of one version take turns; a tree another push
# made is kept.
mlw_data_tree() {
  mlw_data_open "$1"
  id=$2 base=$3
  exec 7>"$S/trees/.$id.lock"
  flock 7
  # The version's list: N bytes of it, or (N "derived") the lines BASE's list gains, "-", and
  # those it loses (mlw_data_list); then, with BASE, the paths gone and the folders emptied.
  read -r n how
  if [ "$how" = derived ]; then
    read -r a
    head -c "$a" >"$S/trees/.$id.diff"
  else
    head -c "$n" >"$S/trees/.$id.list"
  fi
  if [ -n "$base" ]; then
    read -r f d
    head -c "$((f + d))" >"$S/trees/.$id.gone"
  fi
  read -r t
  if [ -f "$S/versions/$id" ] && [ -d "$S/trees/$id" ] && [ -z "$(mlw_data_touched "$id")" ]; then
    head -c "$t" >/dev/null
  elif [ -n "$base" ]; then
    # (A process each where there is something to remove: none on a first push of the version.)
    for x in "$S/trees/$id.made" "$S/versions/$id" "$S/trees/.$id.base"; do
      [ ! -e "$x" ] || rm -f "$x"
    done
    mlw_data_remove "$S/trees/$id"
    # (Whether BASE's folder was written to, a walk of all of it, is left to mlw_data_make.)
    if ! mlw_data_derivable "$base" ||
      { [ "$how" = derived ] && ! mlw_data_list "$id" "$base" "$n"; }; then
      head -c "$t" >/dev/null
      rm -f "$S/trees/.$id.list" "$S/trees/.$id.gone" "$S/trees/.$id.diff"
      echo "mlw: the tree of $base is gone or was written to on $(hostname)" >&2
      exit 6
    fi
    head -c "$t" >"$S/trees/.$id.tar"
    printf '%s %s\n' "$base" "$f" >"$S/trees/.$id.base"
    mv -f "$S/trees/.$id.list" "$S/versions/$id"
    (
      exec </dev/null >/dev/null 2>&1
      mlw_data_make "$id" && rm -f "$S/trees/.$id.lock"
    ) &
    printf 'ready %s %s/%s\n' "$id" "$(cd "$S/trees" && pwd -P)" "$id"
    return 0
  else
    mlw_data_drop "$id"
    tmp=$S/trees/.$id.tmp
    mlw_data_remove "$tmp"
    mkdir "$tmp"
    head -c "$t" | (cd "$S" && tar -x) || {
      mlw_data_remove "$tmp"
      echo "mlw: making the folder of data version $id failed on $(hostname)" >&2
      exit 1
    }
    find "$tmp" -type d -exec chmod 555 {} +
    mv "$tmp" "$S/trees/$id"
    : >"$S/trees/$id.made"
    mv -f "$S/trees/.$id.list" "$S/versions/$id"
  fi
  rm -f "$S/trees/.$id.list" "$S/trees/.$id.lock" "$S/trees/.$id.gone" "$S/trees/.$id.diff"
  printf 'ready %s %s\n' "$id" "$(cd "$S/trees/$id" && pwd -P)"
}

# mlw_data_list ID BASE BYTES: trees/.ID.list as BASE's list less the lines of trees/.ID.diff
# after its "-" line and with those before it, merged in name order (each part is in it, as the
# lists are), where it comes to BYTES bytes; else fails (the whole list is sent then). One
# process: awk.
mlw_data_list() {
  # shellcheck disable=SC2016 # awk's $0
  LC_ALL=C awk -v want="$3" -v out="$S/trees/.$1.list" '
    FILENAME == ARGV[1] {
      if ($0 == "-") dropping = 1
      else if (dropping) drop[$0] = 1
      else add[++na] = $0
      next
    }
    {
      while (i < na && add[i + 1] < $0) { print add[++i] > out; n += length(add[i]) + 1 }
      if (!($0 in drop)) { print > out; n += length($0) + 1 }
    }
    END {
      while (i < na) { print add[++i] > out; n += length(add[i]) + 1 }
      close(out)
      exit n == want ? 0 : 1
    }' "$S/trees/.$1.diff" "$S/versions/$2" || {
    rm -f "$S/trees/.$1.list"
    return 1
  }
}

# mlw_data_derive ID BASE F: trees/.ID.tmp as BASE's tree less the paths in the first F bytes of
# trees/.ID.gone and then the folders in the rest (deepest first), its folders writable; fails
# where BASE's tree is not whole.
mlw_data_derive() {
  mlw_data_whole "$2" && [ -z "$(mlw_data_touched "$2")" ] || return 1
  cp -al "$S/trees/$2" "$S/trees/.$1.tmp" || return 1
  find "$S/trees/.$1.tmp" -type d -exec chmod u+w {} + || return 1
  (cd "$S/trees/.$1.tmp" && head -c "$3" <"$S/trees/.$1.gone" | xargs -r -0 rm -f -- &&
    tail -c +"$(($3 + 1))" <"$S/trees/.$1.gone" | xargs -r -0 rmdir --)
}

# mlw_data_cat STORE: reads object names, one per line, and prints their contents one after the
# other (a push to another machine whose folder changed since it was added takes them from here);
# where one is not an object name or this store lacks it, prints nothing and exits 4.
mlw_data_cat() {
  mlw_data_open "$1"
  l=$S/.cat.$$
  cat >"$l"
  cd "$S/objects"
  bad=
  while [ -z "$bad" ] && IFS= read -r o; do
    case $o in
      '' | *[!0-9a-fx.]*) bad="not an object name: $o" ;;
      *) [ -f "$o" ] || bad="this store lacks $o" ;;
    esac
  done <"$l"
  [ -n "$bad" ] || xargs -r cat -- <"$l"
  rm -f "$l"
  [ -z "$bad" ] || {
    echo "mlw: $bad" >&2
    exit 4
  }
}

# mlw_data_check ID: checks each object of a version by its hash; prints "changed ID OBJECT" for
# each that is not (or is gone), removes it and the version's tree and list (the next push sends
# it again); "touched ID FILE" where the tree was written to.
mlw_data_check() {
  bad=$(cd "$S/objects" && awk '{ h = $1; sub(/\.x$/, "", h); print h "  " $1 }' "$S/versions/$1" |
    sha256sum -c --quiet 2>/dev/null | sed -n 's/: FAILED.*$//p')
  t=
  gone=
  if mlw_data_whole "$1"; then t=$(mlw_data_touched "$1"); else gone=1; fi
  [ -n "$bad$t$gone" ] || return 0
  for o in $bad; do
    printf 'changed %s %s\n' "$1" "$o"
    rm -f "$S/objects/$o"
  done
  [ -z "$t" ] || printf 'touched %s %s\n' "$1" "${t#"$S/trees/$1/"}"
  [ -z "$gone" ] || printf 'gone %s\n' "$1"
  mlw_data_drop "$1"
}

# mlw_data_verify STORE ID...: mlw_data_check of each (every version the store holds when none is
# named); prints "ok ID" for a version that is intact, "absent ID" for one it does not hold,
# "gone ID" for one whose folder was removed by hand (its list is dropped: the next push makes it).
mlw_data_verify() {
  mlw_data_open "$1" x
  shift
  # shellcheck disable=SC2046 # the names are ids: hex digits only
  [ $# -gt 0 ] || set -- $(ls "$S/versions")
  for id in "$@"; do
    if [ ! -f "$S/versions/$id" ]; then
      printf 'absent %s\n' "$id"
    else
      mlw_data_settle "$id"
      out=$(mlw_data_check "$id")
      if [ -z "$out" ]; then printf 'ok %s\n' "$id"; else printf '%s\n' "$out"; fi
    fi
  done
}

# mlw_data_rm STORE ID: removes a version's tree and list unless a live run uses it ("in-use ID
# RUN", exit 4); prints "removed ID" or "absent ID". A version whose folder is still to be made
# from this one's is made first.
mlw_data_rm() {
  mlw_data_open "$1" x
  users=$(mlw_data_live | awk -v id="$2" '$1 == id { printf "%s ", $2 }')
  if [ -n "$users" ]; then
    printf 'in-use %s %s\n' "$2" "$users"
    exit 4
  fi
  if [ -e "$S/versions/$2" ] || [ -e "$S/trees/$2" ]; then
    # A version still to be made from this one's folder is made first.
    for plan in "$S"/trees/.*.base; do
      if [ -f "$plan" ] && [ "$(cat "$plan")" = "$2" ]; then
        plan=${plan##*/.}
        mlw_data_settle "${plan%.base}"
      fi
    done
    mlw_data_drop "$2"
    printf 'removed %s\n' "$2"
  else
    printf 'absent %s\n' "$2"
  fi
}

# mlw_data_gc STORE: removes the objects no version's list names, trees without a list, and
# uploads left unfinished for a day; never what a live run uses. Prints "removed N BYTES" and
# "kept VERSIONS OBJECTS".
mlw_data_gc() {
  mlw_data_open "$1" x
  live=$(mlw_data_live | awk '{ print $1 }')
  for tree in "$S"/trees/*; do
    id=${tree##*/}
    case $id in *.made) continue ;; esac
    [ -f "$S/versions/$id" ] || printf '%s\n' "$live" | grep -qx "$id" || mlw_data_drop "$id"
  done
  for plan in "$S"/trees/.*.base; do
    id=${plan##*/.}
    id=${id%.base}
    [ ! -f "$plan" ] || [ -f "$S/versions/$id" ] || mlw_data_drop "$id"
  done
  find "$S/incoming" -mindepth 1 -maxdepth 1 -mmin +1440 -exec rm -rf {} +
  cd "$S/objects"
  { cat "$S"/versions/* 2>/dev/null | awk '{ print $1 }'; echo /; ls -f; } |
    awk 'p { if ($0 != "." && $0 != ".." && !($0 in keep)) print; next }
      $0 == "/" { p = 1; next } { keep[$0] = 1 }' >"$S/.gc.list"
  n=$(wc -l <"$S/.gc.list")
  b=$(xargs -r -d '\n' stat -c %s -- <"$S/.gc.list" 2>/dev/null | awk '{ b += $1 } END { printf "%.0f", b }')
  xargs -r -d '\n' rm -f -- <"$S/.gc.list"
  rm -f "$S/.gc.list"
  printf 'removed %s %s\n' "$n" "$b"
  printf 'kept %s %s\n' "$(find "$S/versions" -type f | wc -l)" "$(find . -type f | wc -l)"
}

# mlw_data_du STORE: "version ID FILES BYTES USERS" per version held, then "total OBJECTS BYTES
# FREE" (free: bytes left on the store's filesystem).
mlw_data_du() {
  mlw_data_open "$1"
  live=$(mlw_data_live)
  for v in "$S"/versions/*; do
    [ -f "$v" ] || continue
    id=${v##*/}
    users=$(printf '%s\n' "$live" | awk -v id="$id" '$1 == id { n++ } END { print n + 0 }')
    awk -v id="$id" -v u="$users" '{ n++; b += $2 } END { printf "version %s %d %.0f %s\n", id, n, b, u }' "$v"
  done
  cd "$S/objects"
  printf 'total %s %s %s\n' "$(find . -type f | wc -l)" \
    "$(du -sb . | awk '{ print $1 }')" "$(df -P -B1 . | awk 'NR == 2 { print $4 }')"
}
