#!/usr/bin/env bash
# A project you cloned, and your own ~/.ssh/config, against the real sshd of
# tests/fixtures/servers.sh (issue 33): names that are shell syntax never reach a shell (as
# OpenSSH refuses them, CVE-2023-51385), a stored password goes only to the endpoint it was
# given for, and ~/.ssh/config is read as OpenSSH reads it (User without -u, ProxyCommand's
# quotes, a missing IdentityFile skipped, %-tokens in IdentityFile).
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD
export HOME="$WORK/home"
mkdir -p "$HOME/.ssh"
chmod 700 "$HOME/.ssh"
export MLW_SSH_LINGER=0 # every command logs in itself: the login is what is checked
PORT=$MLW_TEST_SSH_PORT
ADDR="127.0.0.1:$PORT"
USER_HOME=$(getent passwd mlwtest | cut -d: -f6)
SSHD_LOG=$MLW_TEST_SERVERS/sshd.log
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
# on_terminal ANSWER COMMAND: runs COMMAND under a pseudo-terminal, typing ANSWER when asked.
on_terminal() {
  (sleep 3; printf '%s\n' "$1") | timeout 60 script -qec "$2" /dev/null 2>&1 | tr -d '\r'
}
# nothing_ran: no PWNED marker where a shell started by mlw (in the project) or the control made it.
nothing_ran() { test ! -e "$WORK/PWNED" -a ! -e "$WORK/cloned/PWNED"; }
accepted_passwords() { grep -c "Accepted password for mlwtest" "$SSHD_LOG"; }

new_project cloned
printf 'import sys\nprint("HELLO", sys.argv[1:], flush=True)\n' >hello.py

# --- 1. names with shell syntax never reach a ProxyCommand's shell --------------------------
# A common ~/.ssh/config: every host through a ProxyCommand that names %h, %p and %r.
cat >"$HOME/.ssh/config" <<CFG
Host *
  ProxyCommand printf '%%s\\n' %r >>$WORK/proxy-users; exec bash -c 'exec 3<>/dev/tcp/%h/%p; cat <&3 & exec cat >&3'
  StrictHostKeyChecking accept-new
CFG
shell_would_run "1: the address as the ProxyCommand's shell text" \
  "cd '$WORK' && echo 127.0.0.1 >/dev/null;touch\${IFS}PWNED" "$WORK/PWNED"
# The cloned project's compute files, as a collaborator committed them.
cat >aml_config/evilhost.compute <<'C'
type: remote
address: "127.0.0.1;touch${IFS}PWNED;"
username: mlwtest
C
cat >aml_config/eviluser.compute <<C
type: remote
address: $ADDR
username: "m\$(touch\${IFS}PWNED)"
C
for name in evilhost eviluser; do
  sed "s/^Target:.*/Target: $name/" aml_config/local.runconfig >"aml_config/$name.runconfig"
  timeout 60 "$MLW" experiment submit -c "$name" hello.py >"$WORK/o" 2>"$WORK/e" </dev/null
  code=$?
  check "1: submit -c $name is refused" test "$code" -ne 0 -a "$code" -ne 124
  check "1: $name: nothing ran in a shell" nothing_ran
  expect_contains "1: $name: the file, line and column" "$(cat "$WORK/e")" "aml_config/$name.compute:"
  expect_contains "1: $name: as OpenSSH says it" "$(cat "$WORK/e")" "contains invalid characters"
  run_mlw computetarget doctor -n "$name"
  check "1: doctor -n $name is refused too" test "$CODE" -ne 0
  check "1: doctor $name: nothing ran" nothing_ran
done
expect_error "1: attach -a with shell syntax" 2 "host name contains invalid characters" \
  computetarget attach remote -n x -a '127.0.0.1;touch${IFS}PWNED;' -u mlwtest --no-connect
expect_error "1: attach -u with shell syntax" 2 "username \"m\$(touch X)\" contains invalid" \
  computetarget attach remote -n x -a "$ADDR" -u 'm$(touch X)' --no-connect
USER='m$(touch${IFS}PWNED)' LOGNAME=x run_mlw computetarget attach remote -n x -a "$ADDR" --no-connect
expect_eq "1: attach without -u, a local user name with shell syntax: refused" "$CODE" 2
check "1: attach: nothing ran" nothing_ran
check "1: attach: nothing written" test ! -e aml_config/x.compute
# A user name OpenSSH allows ($ and a backslash) arrives at the proxy as written, not expanded
# (where %r stands as a word of its own: within quotes of the user's, no quoting can hold).
"$MLW" computetarget attach remote -n odd -a "$ADDR" -u 'no$HOME\x' --no-connect >/dev/null 2>&1
timeout 60 "$MLW" computetarget doctor -n odd >/dev/null 2>&1 </dev/null
expect_eq "1: %r reaches the ProxyCommand's shell as one quoted word" \
  "$(tail -1 "$WORK/proxy-users" 2>/dev/null)" 'no$HOME\x'

# --- 11. ProxyCommand's double quotes are kept (OpenSSH passes the line as written) ----------
cat >"$HOME/.ssh/config" <<CFG
Host quoted
  HostName 127.0.0.1
  Port $PORT
  ProxyCommand bash -c "echo used >$WORK/quoted-used; exec 3<>/dev/tcp/%h/%p; cat <&3 & exec cat >&3"
  StrictHostKeyChecking accept-new
CFG
"$MLW" computetarget attach remote -n quoted -a quoted -u mlwtest --password-stdin <"$WORK/pw" \
  >"$WORK/o" 2>"$WORK/e"
expect_eq "11: attach through a ProxyCommand in double quotes" "$?" 0
check "11: the proxy command ran as written" test -s "$WORK/quoted-used"

# --- 10. User from ~/.ssh/config when attach has no -u; 12. IdentityFile as OpenSSH reads it ---
ssh-keygen -q -t ed25519 -N '' -f "$HOME/.ssh/id_127.0.0.1_mlwtest" >/dev/null
mkdir -p "$USER_HOME/.ssh"
cat "$HOME/.ssh/id_127.0.0.1_mlwtest.pub" >>"$USER_HOME/.ssh/authorized_keys"
chown -R mlwtest "$USER_HOME/.ssh" && chmod 700 "$USER_HOME/.ssh" && chmod 600 "$USER_HOME/.ssh/authorized_keys"
cat >"$HOME/.ssh/config" <<CFG
Host byconfig
  HostName 127.0.0.1
  Port $PORT
  User mlwtest
  StrictHostKeyChecking accept-new
Host bykey
  HostName 127.0.0.1
  Port $PORT
  User mlwtest
  IdentityFile ~/.ssh/not-there
  IdentityFile ~/.ssh/id_%h_%r
  IdentitiesOnly yes
  StrictHostKeyChecking accept-new
CFG
"$MLW" computetarget attach remote -n byconfig -a byconfig --password-stdin <"$WORK/pw" \
  >"$WORK/o" 2>"$WORK/e"
expect_eq "10: attach without -u logs in as ~/.ssh/config's User" "$?" 0
expect_eq "10: … and records that user" "$(grep '^username' aml_config/byconfig.compute)" 'username: "mlwtest"'
"$MLW" computetarget attach remote -n bykey -a bykey >"$WORK/o" 2>"$WORK/e" </dev/null
expect_eq "12: a missing IdentityFile is skipped, ~/.ssh/id_%h_%r logs in" "$?" 0
expect_contains "12: … by that key" "$(cat "$WORK/o")" "id_127.0.0.1_mlwtest"

# --- 2. a stored password goes only to the endpoint it was given for --------------------------
rm -f "$HOME/.ssh/config"
"$MLW" computetarget attach remote -n pw -a "$ADDR" -u mlwtest --password-stdin --accept-host-key \
  <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"
expect_eq "2: attach with a password" "$?" 0
run_mlw experiment submit -c pw hello.py same
expect_eq "2: a run on the endpoint the password was given for" "$CODE" 0
# A collaborator's commit points the target elsewhere (here: the same sshd under another name,
# whose new host key ~/.ssh/config accepts, so only the password binding can stop it).
printf 'Host *\n  StrictHostKeyChecking accept-new\n' >"$HOME/.ssh/config"
sed -i "s#^address:.*#address: \"localhost:$PORT\"#" aml_config/pw.compute
before=$(accepted_passwords)
run_mlw experiment submit -c pw hello.py moved
check "2: without a terminal the password is not sent to another host" test "$CODE" -ne 0
expect_contains "2: the refusal names where it was stored for" "$ERR" "mlwtest@127.0.0.1:$PORT"
expect_contains "2: … and where it would go" "$ERR" "mlwtest@localhost:$PORT"
expect_eq "2: sshd saw no password" "$(accepted_passwords)" "$before"
expect_contains "2: no run was recorded as started" "$("$MLW" history list -o tsv)" ""
said=$(on_terminal no "'$MLW' experiment submit -c pw hello.py asked-no")
expect_contains "2: at a terminal mlw asks, naming both" "$said" \
  "was given for mlwtest@127.0.0.1:$PORT; send it to mlwtest@localhost:$PORT?"
expect_eq "2: 'no' sends nothing" "$(accepted_passwords)" "$before"
said=$(on_terminal yes "'$MLW' experiment submit -c pw hello.py asked-yes")
expect_contains "2: 'yes' sends it and the run goes on" "$said" "HELLO ['asked-yes']"
check "2: … sshd saw it" test "$(accepted_passwords)" -gt "$before"
sed -i "s#^username:.*#username: \"root\"#; s#^address:.*#address: \"$ADDR\"#" aml_config/pw.compute
before=$(accepted_passwords)
run_mlw experiment submit -c pw hello.py other-user
check "2: nor to another user on the same host" test "$CODE" -ne 0
expect_contains "2: … named" "$ERR" "root@127.0.0.1:$PORT"
check "2: the password is kept nowhere in the project" bash -c "! grep -rq -- \"$MLW_TEST_SSH_PASSWORD\" ."

finish
