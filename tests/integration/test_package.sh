#!/usr/bin/env bash
# Installing mlw (issue 14): `cmake --install` puts the binary, mlw(1) and the bash, zsh and fish
# completions in their standard places; `cpack -G DEB` makes a .deb whose Depends are right,
# installed with dpkg in a clean Debian 12 root (the test engine's debootstrap image, no network)
# where `mlw --version` and `man -w mlw` work.
source "$(dirname "$0")/lib.sh"
require_env DOCKER_HOST MLW_TEST_IMAGE
for tool in cmake cpack dpkg-deb man docker gzip; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is required (scripts/setup installs it)"; exit 1; }
done
BUILD=$(dirname "$MLW")
check "the build folder is a CMake build" test -f "$BUILD/CMakeCache.txt"
VERSION=$("$MLW" --version)

# cmake --install into a prefix of our own.
cmake --install "$BUILD" --prefix "$WORK/prefix" >"$WORK/install.log" 2>&1
expect_eq "cmake --install exits 0" "$?" 0
P=$WORK/prefix
for f in bin/mlw share/man/man1/mlw.1.gz share/bash-completion/completions/mlw \
  share/zsh/vendor-completions/_mlw share/fish/vendor_completions.d/mlw.fish \
  share/doc/mlw/cli.md; do
  check "installs $f" test -s "$P/$f"
done
expect_eq "the installed mlw is this build" "$("$P/bin/mlw" --version)" "$VERSION"
check "installs libexec/mlw/mlw-ui" test -x "$P/libexec/mlw/mlw-ui"
# The installed mlw runs the installed mlw-ui for `history ui` (which checks the port).
ui_err=$("$P/bin/mlw" history ui --port 70000 2>&1 >/dev/null)
expect_contains "the installed mlw finds libexec/mlw/mlw-ui" "$ui_err" "--port must be 0"
expect_eq "man finds mlw(1) under the prefix" "$(MANPATH="$P/share/man" man -w mlw)" \
  "$P/share/man/man1/mlw.1.gz"
page=$(MANPATH="$P/share/man" MANWIDTH=100 man mlw 2>/dev/null)
expect_contains "the page names the commands" "$page" "mlw history list"
expect_contains "the page has each command's options" "$page" "-r,--run RUN_ID (required)"
expect_contains "the page has the examples" "$page" "mlw experiment submit -c local train.py --epochs 10"
expect_contains "the page lists the config variables" "$page" "MLW_DEFAULT_TARGET"
# One source of truth: every option of every command's --help is in the page.
missing=""
for words in "history list" "experiment submit" "computetarget attach remotedocker" "config list"; do
  # shellcheck disable=SC2086
  for option in $("$MLW" $words --help | grep -oE '^  -[-a-zA-Z,]+' | tr ',' ' '); do
    [[ "$option" == -h || "$option" == --help ]] && continue
    [[ "$page" == *"$option"* ]] || missing+=" $words:$option"
  done
done
expect_eq "every option of --help is in the page" "$missing" ""
expect_eq "the installed bash completion is mlw completion bash" \
  "$(cat "$P/share/bash-completion/completions/mlw")" "$("$MLW" completion bash)"
expect_eq "the installed zsh completion is mlw completion zsh" \
  "$(cat "$P/share/zsh/vendor-completions/_mlw")" "$("$MLW" completion zsh)"

# The Debian package.
(cd "$BUILD" && cpack -G DEB -B "$WORK/deb" >"$WORK/cpack.log" 2>&1)
expect_eq "cpack -G DEB exits 0" "$?" 0
deb=$(ls "$WORK"/deb/mlw_*.deb 2>/dev/null | head -1)
check "cpack made mlw_VERSION_ARCH.deb" test -s "$deb"
depends=$(dpkg-deb -f "$deb" Depends)
expect_contains "Depends names libc6 with a version" "$depends" "libc6 (>= "
# Each shared library the binary needs itself (its NEEDED entries; theirs come with them) comes
# from a package that Depends names.
needed=$(readelf -d "$P/bin/mlw" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
libs=$(ldd "$P/bin/mlw" | awk -v needed=" $(echo $needed) " '/=>/ && index(needed, " " $1 " ") {print $3}')
check "the binary needs some shared library" test -n "$libs"
for lib in $libs; do
  # Merged /usr: a package owns its file as /lib/… or as /usr/lib/….
  owner=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1)
  [ -n "$owner" ] || owner=$(dpkg -S "/usr$lib" 2>/dev/null | head -1 | cut -d: -f1)
  expect_contains "Depends covers $lib (${owner:-no package})" "$depends" "${owner:-no package}"
done
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/mlw ./usr/share/man/man1/mlw.1.gz ./usr/share/bash-completion/completions/mlw \
  ./usr/share/zsh/vendor-completions/_mlw ./usr/share/fish/vendor_completions.d/mlw.fish; do
  expect_contains "the package holds $f" "$contents" "$f"
done

# Debian's libssh2 and libcrypto, shared (issue 33: linked in, their security updates never
# reached mlw).
expect_contains "Depends names libssh2-1" "$depends" "libssh2-1"
expect_contains "Depends names libssl3 (libcrypto)" "$depends" "libssl3"
check "mlw links libssh2 from the system" grep -q 'libssh2.so.1 => /' <<<"$(ldd "$P/bin/mlw")"
check "mlw links libcrypto from the system" grep -q 'libcrypto.so.3 => /' <<<"$(ldd "$P/bin/mlw")"
check "no libssh2 symbols inside mlw" bash -c "! nm -D --defined-only '$P/bin/mlw' | grep -q ' libssh2_'"

# The dashboard's server is a package of its own.
dash=$(ls "$WORK"/deb/mlw-dashboard_*.deb 2>/dev/null | head -1)
check "cpack made mlw-dashboard_VERSION_ARCH.deb" test -s "$dash"
expect_contains "mlw-dashboard holds mlw-ui" "$(dpkg-deb -c "$dash")" "./usr/libexec/mlw/mlw-ui"
expect_contains "mlw-dashboard Depends on cpp-httplib" "$(dpkg-deb -f "$dash" Depends)" "libcpp-httplib"
expect_contains "… and on mlw" "$(dpkg-deb -f "$dash" Depends)" "mlw (= "
expect_not_contains "mlw does not hold mlw-ui" "$contents" "mlw-ui"

# Installed with dpkg in a clean Debian 12 root that has never seen mlw (no network: what Depends
# names is there, as apt would have fetched it: libc6, libssl3 and libssh2-1).
out=$(docker run --rm --network none -v "$WORK/deb:/deb:ro" "$MLW_TEST_IMAGE" sh -c '
  command -v mlw && echo "mlw was already there"
  dpkg -i /deb/mlw_*.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }
  mlw --version && man -w mlw && dpkg -s mlw | grep "^Status" &&
  ls /usr/share/bash-completion/completions/mlw' 2>&1)
expect_eq "dpkg -i and the checks exit 0 in the clean root" "$?" 0
expect_not_contains "the root had no mlw before" "$out" "mlw was already there"
expect_contains "mlw --version there" "$out" "$VERSION"
expect_contains "man -w mlw there" "$out" "/usr/share/man/man1/mlw.1.gz"
expect_contains "dpkg says installed" "$out" "Status: install ok installed"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
