# shellcheck shell=sh
# Ships a snapshot into a target's content store, run after `set -- STORE NONCE RUN_DIR RUNS`
# (ship_script and ship_in_probe in exec/ship.cpp), reading its standard input:
#   - moves the complete objects of interrupted uploads (STORE/incoming/*) into STORE/objects;
#   - reads "U\n" and a U-byte tar of objects sent ahead: each is checked against the sha256 its
#     name says and moved into the store; damaged ones are printed ("damaged: NAME") and fail
#     the ship (exit 1; a tar that fails: exit 2);
#   - reads "N\n" and N bytes of object names: when the store lacks any, prints them and
#     ":missing" and exits 3, making nothing;
#   - reads "T\n" and a T-byte tar that makes RUN_DIR from the store (hard links), atomically by
#     rename (nothing when T is 0).
set -e
S=$1/objects
I=$1/incoming
D=$I/$2
R=$3
if [ ! -d "$S" ] || [ ! -d "$I" ] || [ ! -d "$4" ]; then mkdir -p "$S" "$I" "$4"; fi
cd "$I"
# Stores the objects named on stdin (hex names: no option among them) whose content has the
# sha256 their name says: hashed by openssl where there is one (its SHA extensions hash three
# times as fast as coreutils' sha256sum, which would otherwise bound a large push), printed as
# sha256sum does. A process costs ~5 ms on a loaded machine: 1,000 names per hashing process and
# as many per mv as a command line holds (64 per process made a push of 300,000 small files
# spend 22 s starting openssl).
# Another ship may take the same objects at once (see below): one gone in between is neither
# hashed nor moved here, and is no error — what the store still lacks is asked after all this.
mlw_keep() {
  if command -v openssl >/dev/null 2>&1; then
    xargs -r -n 1000 openssl dgst -sha256 -r 2>/dev/null | sed 's/ \*/  /'
  else
    xargs -r -n 1000 sha256sum -- 2>/dev/null
  fi | awk '$1 == substr($2, 1, 64) { print $2 }' | { xargs -r mv -f -t "$S"/ 2>/dev/null || :; }
}
# An upload whose lock is still held is under way, or was dropped and its step has not yet seen
# the end of its input: the objects that arrived whole (their content has the hash their name
# says; the one tar is writing has not) are taken all the same, so that a push resumed at once
# after a dropped one does not send them again; its folder stays for its own step.
for d in */; do
  [ -d "$d" ] || continue
  d=${d%/}
  # shellcheck disable=SC2094 # the lock goes with the folder it guarded, while still held
  (
    flock -n 9 && free=1 || free=
    # shellcheck disable=SC2010 # the store's names are hashes: nothing for ls to mangle
    cd "$d" && ls | grep -E '^[0-9a-f]{64}(\.x)?$' | mlw_keep
    [ -z "$free" ] || { cd "$I" && rm -rf "$d" "$d.lock"; }
  ) 9>"$d.lock"
done
read -r u
if [ "$u" -gt 0 ]; then
  exec 9>"$D.lock"
  flock 9
  mkdir -p "$D"
  # Over 4 MiB, each object is checked and stored as soon as tar has gone on to the next (tar -v
  # names a member as it begins it; awk holds each name back until the next one), so over a slow
  # link the hashing hides behind the wire; a smaller upload is checked after it (two processes
  # fewer). A failed tar fails the ship and leaves what it wrote for the next ship to recover, as
  # a dropped upload does.
  cd "$D"
  if [ "$u" -gt 4194304 ]; then
    { head -c "$u" | tar -x -v || : >"$D.failed"; } |
      awk '/^[0-9a-f]+(\.x)?$/ { if (p != "") { print p; fflush() } p = $0 }
        END { if (p != "") print p }' | mlw_keep
  else
    head -c "$u" | tar -x || : >"$D.failed"
    # All checked by one sha256sum -c and stored by one mv (an object is named by its hash);
    # where one fails, or the tools are not GNU's, each is checked and stored alone.
    if ! for f in *; do printf '%s  %s\n' "${f%.x}" "$f"; done |
      sha256sum -c --strict --status 2>/dev/null || ! mv -f -- * "$S"/; then
      printf '%s\n' * | mlw_keep
    fi
  fi
  [ ! -e "$D.failed" ] || {
    rm -f "$D.failed"
    exit 2
  }
  set -- *
  cd "$I"
  if [ -e "$D/$1" ]; then
    printf 'damaged: %s\n' "$@"
    rm -rf "$D" "$D.lock"
    exit 1
  fi
  rm -rf "$D" "$D.lock"
fi
read -r n
cd "$S"
# What the store still lacks: named, then ":missing", and nothing is made (exit 3). A short list
# is checked by the shell itself (every process costs a few ms there).
if [ "$n" -le 16384 ]; then
  m=
  while [ "$n" -gt 0 ] && IFS= read -r x; do
    n=$((n - ${#x} - 1))
    [ -e "$x" ] || {
      printf '%s\n' "$x"
      m=1
    }
  done
  if [ -n "$m" ]; then
    echo :missing
    exit 3
  fi
else
  # The store's names, "/" (no file's name), then the names asked about: no shell started for
  # awk's getline. A failing ls names nothing: all are missing.
  { ls -f || :; echo /; head -c "$n"; } |
    awk 'p { if (!($0 in have)) { print; m = 1 }; next } $0 == "/" { p = 1; next } { have[$0] = 1 }
      END { if (m) print ":missing"; exit m ? 3 : 0 }' || exit 3
fi
read -r t
[ "$t" -gt 0 ] || exit 0
# Every process costs a few ms on the target: the folders were made at the start.
[ -e "$R.tmp" ] && rm -rf "$R.tmp"
mkdir -m 700 "$R.tmp"  # the run folder: its monitor.sh and run.env hold the -e values
head -c "$t" | tar -x -P -C "$R.tmp"
: >"$R.tmp/driver_log.txt"
mv "$R.tmp" "$R"
