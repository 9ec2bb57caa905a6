#!/usr/bin/env bash
# `mlw experiment forward` and `submit --forward` (issue 48, point 3) against real parts: a run on
# this machine (local), in a container of the servers' Docker engine (docker: no bridge, so only a
# relay inside the container reaches the run's port), over the real sshd as mlwtest in a container
# (remotedocker) and as a process (remote: direct-tcpip), and the remote one again through a
# ProxyCommand. Each run serves a page and a reversing echo on ports of its own; through the
# forward: the page, 2 MiB intact, eight connections at once, fourteen held open at once (past
# sshd's MaxSessions on rd), a half-closed 1 MiB upload, a port nothing listens on; 127.0.0.1
# only; the dashboard shows the URL; forwarding ends with the run.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_IMAGE DOCKER_HOST
for tool in curl ss; do
  command -v "$tool" >/dev/null || {
    echo "$tool is required (scripts/setup installs it)"
    exit 1
  }
done
export HOME="$WORK/home"
mkdir -p "$HOME/.ssh"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
PAGE_PORT=$(free_port)
ECHO_PORT=$(free_port)
DEAD_PORT=$(free_port)

# A ProxyCommand that leaves a mark when it carries a login (what ProxyJump becomes in mlw).
cat >"$HOME/.ssh/config" <<EOF
Host viacmd
  HostName 127.0.0.1
  Port $MLW_TEST_SSH_PORT
  ProxyCommand bash -c 'echo used >>$WORK/proxy-used; exec 3<>/dev/tcp/%h/%p; cat <&3 & exec cat >&3'
EOF

new_project fwdp
"$MLW" -q computetarget attach docker -n d --base-image "$MLW_TEST_IMAGE" >/dev/null
"$MLW" -q computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin \
  --accept-host-key --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null
"$MLW" -q computetarget attach remote -n rm -a "$ADDR" -u mlwtest --password-stdin \
  --accept-host-key <"$WORK/pw" >/dev/null
"$MLW" -q computetarget attach remote -n rp -a viacmd -u mlwtest --password-stdin \
  --accept-host-key <"$WORK/pw" >/dev/null
check "the four targets are attached" test -f aml_config/rp.compute -a -f aml_config/rm.compute

# serve.py PAGE ECHO: a page (www/page.txt names the run; www/big.bin 2 MiB) and an echo that
# answers, once its client has half-closed, with what came reversed; until `release` appears
# (300 s at most).
cat >serve.py <<'PY'
import http.server, os, socketserver, sys, threading, time
os.makedirs("www", exist_ok=True)
open("www/page.txt", "w").write("page of %s\n" % os.environ["MLW_RUN_ID"])
open("www/big.bin", "wb").write(bytes(range(256)) * 8192)
class Page(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory="www", **kwargs)
    def log_message(self, *args):
        pass
    def do_GET(self):
        if self.path != "/huge":
            return super().do_GET()
        # 64 MiB, made as it is sent: a download long enough to outrun every buffer on the way.
        self.send_response(200)
        self.send_header("Content-Length", str(64 << 20))
        self.end_headers()
        block = bytes(range(256)) * 4096
        for _ in range(64):
            self.wfile.write(block)
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while True:
            got = self.request.recv(65536)
            if not got:
                break
            data += got
        self.request.sendall(data[::-1])
socketserver.ThreadingTCPServer.allow_reuse_address = True
# A queue for the connections that arrive at once (socketserver's default, 5, overflows when
# fourteen come together; a real server's, TensorBoard's, is longer).
socketserver.ThreadingTCPServer.request_queue_size = 64
socketserver.ThreadingTCPServer.daemon_threads = True
for port, handler in ((int(sys.argv[1]), Page), (int(sys.argv[2]), Echo)):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
print("serving", flush=True)
for _ in range(3000):
    if os.path.exists("release"):
        break
    time.sleep(0.1)
print("released", flush=True)
PY
BIG_SUM=$(python3 -c 'import hashlib; print(hashlib.sha256(bytes(range(256)) * 8192).hexdigest())')
HUGE_SUM=$(python3 -c 'import hashlib; print(hashlib.sha256(bytes(range(256)) * 4096 * 64).hexdigest())')

# echo_check PORT [N]: N connections (default 1) to the echo open together, each sending its
# data (1 MiB; with N > 1, 64 KiB each and 2 s for every one to be accepted and its peer asked
# for before any ends), then each half-closed and answered with the same reversed, whole.
echo_check() {
  python3 - "$1" "${2:-1}" <<'PY'
import os, socket, sys, time
count = int(sys.argv[2])
socks = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=90) for _ in range(count)]
sent = [os.urandom(1 << 20 if count == 1 else 1 << 16) for _ in socks]
for s, data in zip(socks, sent):
    s.sendall(data)
if count > 1:
    time.sleep(2)
bad = 0
for i, (s, data) in enumerate(zip(socks, sent)):
    s.shutdown(socket.SHUT_WR)
    back = b""
    while True:
        got = s.recv(65536)
        if not got:
            break
        back += got
    if back != data[::-1]:
        print("connection %d: %d bytes back, not its %d reversed" % (i, len(back), len(data)),
              file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
}
# many_at_once URL: eight fetches at once, each whole.
many_at_once() {
  local i pids=() ok=0
  for i in 1 2 3 4 5 6 7 8; do
    curl -sf --max-time 60 "$1" -o "$WORK/many.$i" &
    pids+=("$!")
  done
  for i in "${pids[@]}"; do wait "$i" || ok=1; done
  for i in 1 2 3 4 5 6 7 8; do
    [ "$(sha256sum <"$WORK/many.$i" | cut -d' ' -f1)" = "$BIG_SUM" ] || ok=1
  done
  return "$ok"
}
# local_port N: the port here that forward's Nth line names.
local_port() { sed -n "${1}s#^http://127.0.0.1:\([0-9]*\)/ .*#\1#p" "$WORK/fwd.out"; }

for t in local d rd rm rp; do
  run_mlw experiment submit -c "$t" -a serve.py "$PAGE_PORT" "$ECHO_PORT"
  RID=$(sed -n 's/^RunId: //p' <<<"$OUT")
  check "$t: the run started (-a)" test -n "$RID"
  check "$t: … and serves" wait_for 120 bash -c "'$MLW' history logs -r '$RID' | grep -q serving"

  rm -f "$WORK/fwd.out" # the shell truncates it in the background: an old one could be read
  "$MLW" experiment forward -r "$RID" "$PAGE_PORT:0" "$ECHO_PORT:0" "$DEAD_PORT:0" \
    >"$WORK/fwd.out" 2>"$WORK/fwd.err" &
  FPID=$!
  STARTED_PIDS+=("$FPID")
  check "$t: forward prints a URL for each port" wait_for 30 bash -c "[ \$(wc -l <'$WORK/fwd.out') -ge 3 ]"
  PAGE=$(local_port 1) ECHO=$(local_port 2) DEAD=$(local_port 3)
  expect_contains "$t: … naming the run's port and target" "$(cat "$WORK/fwd.out")" \
    "port $PAGE_PORT of run $RID on $t"
  got=$(curl -s --max-time 30 "http://127.0.0.1:$PAGE/page.txt")
  expect_eq "$t: the run's page through it" "$got" "page of $RID"
  [ "$got" = "page of $RID" ] || cat "$WORK/fwd.err" >&2
  expect_eq "$t: 2 MiB through it, intact" \
    "$(curl -s --max-time 60 "http://127.0.0.1:$PAGE/big.bin" | sha256sum | cut -d' ' -f1)" "$BIG_SUM"
  check "$t: eight connections at once, each whole" many_at_once "http://127.0.0.1:$PAGE/big.bin"
  # A stream that outlasts the buffers (SSH's window, libssh2's queue, the relay's) is carried on
  # without waiting for the socket to wake the relay: seconds, not minutes (ssh -L: under 1 s).
  expect_eq "$t: 64 MiB through it within 30 s, intact" \
    "$(curl -s --max-time 30 "http://127.0.0.1:$PAGE/huge" | sha256sum | cut -d' ' -f1)" "$HUGE_SUM"
  check "$t: 1 MiB up, half-closed, answered whole (the end passed on)" echo_check "$ECHO"
  # More than the 10 sessions OpenSSH allows on one connection by default (each a relay channel
  # on rd: those past the limit wait for one to end).
  check "$t: fourteen connections held open at once, each answered" echo_check "$ECHO" 14
  if [ "$t" = rd ]; then
    expect_eq "rd: … those past the server's limit waited for a channel, said once" \
      "$(grep -c 'MaxSessions' "$WORK/fwd.err")" 1
  fi
  listening=$(ss -Hltn "sport = :$PAGE")
  expect_contains "$t: listens on 127.0.0.1 only" "$listening" "127.0.0.1:$PAGE "
  check "$t: … on no other address" test "$(wc -l <<<"$listening")" -eq 1
  curl -s --max-time 30 "http://127.0.0.1:$DEAD/" >/dev/null
  check "$t: a port nothing listens on: the connection is closed, saying why" \
    wait_for 10 grep -q "nothing .* port $DEAD_PORT" "$WORK/fwd.err"
  [ "$(curl -s --max-time 30 "http://127.0.0.1:$PAGE/page.txt")" = "page of $RID" ]
  check "$t: … and forwarding goes on" test $? -eq 0

  if [ "$t" = local ]; then
    # The dashboard's run page has the URL while forward serves it.
    "$MLW" history ui --port 0 >"$WORK/ui.out" 2>"$WORK/ui.err" &
    UI=$!
    STARTED_PIDS+=("$UI")
    for _ in $(seq 100); do [ -s "$WORK/ui.out" ] && break; sleep 0.1; done
    URL=$(head -1 "$WORK/ui.out")
    BASE=${URL%%/?token=*}
    UPORT=${BASE#http://*:}
    UPORT=${UPORT%%/*}
    json=$(curl -s --max-time 30 -H "Cookie: mlw_token_$UPORT=${URL##*token=}" "$BASE/api/runs/$RID")
    expect_eq "dashboard: the run's page names the forwarded URLs" \
      "$(json_get "$json" '[f["url"] for f in d["forwards"]]')" \
      "['http://127.0.0.1:$PAGE/', 'http://127.0.0.1:$ECHO/', 'http://127.0.0.1:$DEAD/']"
    kill "$UI"
  fi
  if [ "$t" = rp ]; then
    check "rp: the logins went through the ProxyCommand" test -s "$WORK/proxy-used"
  fi

  run_mlw experiment shell -r "$RID" -- touch release
  check "$t: the run ends" wait_for 90 run_is "$RID" Completed
  check "$t: … and forwarding with it" wait_for 20 bash -c "! kill -0 $FPID 2>/dev/null"
  reap "$FPID"
  expect_eq "$t: … exit 0" "$REAPED" 0
  expect_contains "$t: … saying why" "$(cat "$WORK/fwd.err")" "run $RID is Completed: forwarding stopped"
  check "$t: … its port closed" bash -c "! curl -s --max-time 5 http://127.0.0.1:$PAGE/page.txt"
  check "$t: … and its dashboard entry gone" test ! -e ".mlw/runs/$RID/forwards/$FPID.json"
done

# Ctrl-C during a forward: it stops at once (exit 0), its port closed, its entry gone; the run
# goes on.
run_mlw experiment submit -c rm -a serve.py "$PAGE_PORT" "$ECHO_PORT"
RID=$(sed -n 's/^RunId: //p' <<<"$OUT")
check "Ctrl-C: a run serves" wait_for 120 bash -c "'$MLW' history logs -r '$RID' | grep -q serving"
rm -f "$WORK/fwd.out"
"$MLW" -vv experiment forward -r "$RID" "$PAGE_PORT:0" >"$WORK/fwd.out" 2>"$WORK/fwd.err" &
FPID=$!
STARTED_PIDS+=("$FPID")
check "Ctrl-C: forward serves" wait_for 30 test -s "$WORK/fwd.out"
PAGE=$(local_port 1)
got=$(curl -s --max-time 30 "http://127.0.0.1:$PAGE/page.txt")
expect_eq "Ctrl-C: … the page" "$got" "page of $RID"
[ "$got" = "page of $RID" ] || { cat "$WORK/fwd.out" "$WORK/fwd.err" >&2; curl -v --max-time 30 "http://127.0.0.1:$PAGE/page.txt" >&2; ss -ltnp >&2; }
kill -INT "$FPID"
check "Ctrl-C: forward ends" wait_for 10 bash -c "! kill -0 $FPID 2>/dev/null"
kill -KILL "$FPID" 2>/dev/null
wait "$FPID"
expect_eq "Ctrl-C: … exit 0" "$?" 0
check "Ctrl-C: … its port closed" bash -c "! curl -s --max-time 5 http://127.0.0.1:$PAGE/page.txt"
check "Ctrl-C: … its dashboard entry gone" test ! -e ".mlw/runs/$RID/forwards/$FPID.json"
check "Ctrl-C: … the run goes on" run_is "$RID" Running
run_mlw experiment shell -r "$RID" -- touch release
check "Ctrl-C: … to its end" wait_for 90 run_is "$RID" Completed

# submit --forward: the port for the run's life, while submit follows it (docker).
LOCAL=$(free_port)
"$MLW" experiment submit -c d --forward "$PAGE_PORT:$LOCAL" serve.py "$PAGE_PORT" "$ECHO_PORT" \
  >"$WORK/sub.out" 2>"$WORK/sub.err" &
SPID=$!
STARTED_PIDS+=("$SPID")
check "submit --forward: the page while the run runs" wait_for 120 bash -c \
  "curl -s --max-time 5 http://127.0.0.1:$LOCAL/page.txt | grep -q 'page of '"
RID=$(sed -n 's/^RunId: //p' "$WORK/sub.out")
expect_contains "submit --forward: … prints the URL" "$(cat "$WORK/sub.out")" "http://127.0.0.1:$LOCAL/"
run_mlw experiment shell -r "$RID" -- touch release
check "submit --forward: submit ends with the run" wait_for 90 bash -c "! kill -0 $SPID 2>/dev/null"
reap "$SPID"
expect_eq "submit --forward: … exit 0" "$REAPED" 0
check "submit --forward: … the port closed" bash -c "! curl -s --max-time 5 http://127.0.0.1:$LOCAL/"

# Bad input and refusals: one line each, nothing started.
run_mlw experiment submit -c d -a --forward 6006 serve.py 1 2
expect_eq "submit -a --forward: refused as submit's usage errors are (125)" "$CODE" 125
expect_contains "… saying what to do" "$ERR" "mlw experiment forward -r RUN PORT"
python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(120)' >"$WORK/busy" &
STARTED_PIDS+=("$!")
wait_for 10 test -s "$WORK/busy"
BUSY=$(cat "$WORK/busy")
before=$(ls .mlw/runs | wc -l)
run_mlw experiment submit -c d --forward "6006:$BUSY" serve.py 1 2
expect_eq "submit --forward to a port in use here: refused (125)" "$CODE" 125
expect_contains "… naming the port and another" "$ERR" "port $BUSY is already in use on this machine"
expect_eq "… before any run started" "$(ls .mlw/runs | wc -l)" "$before"
run_mlw experiment forward -r "$RID" 6006
expect_eq "forward to an ended run: refused (1)" "$CODE" 1
expect_contains "… saying it ended, and how" "$ERR" "run $RID has ended (Completed, exit 0) at "
for bad in 0 70000 abc 6006:x 6006:-1; do
  run_mlw experiment forward -r "$RID" "$bad"
  expect_eq "forward $bad: a usage error (2)" "$CODE" 2
done
run_mlw experiment forward -r "$RID" 6006 6006:7000
expect_eq "a port named twice: a usage error (2)" "$CODE" 2

# Another user's run in a shared project is refused before anything is reached.
run_mlw experiment submit -c local -a serve.py "$PAGE_PORT" "$ECHO_PORT"
RID=$(sed -n 's/^RunId: //p' <<<"$OUT")
check "another user's run: started" wait_for 30 run_is "$RID" Running
as_someone_else "$RID"
run_mlw experiment forward -r "$RID" "$PAGE_PORT:0"
expect_eq "another user's run is refused (1)" "$CODE" 1
expect_contains "… saying whose it is" "$ERR" "run $RID is someone-else's: experiment forward reaches only your own runs"
touch ".mlw/runs/$RID/snapshot/release"
wait_for 30 bash -c "! '$MLW' -o json history info -r '$RID' | grep -q '\"Running\"'"

finish
