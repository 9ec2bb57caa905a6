#!/usr/bin/env bash
# `mlw history ui` (issue 13): the dashboard in Debian's chromium (tests/integration/
# ui_browser.cjs through playwright-core) over real runs made by `mlw experiment submit` —
# filter, sort by a metric, a run's charts (their data and their pixels), zoom, the log followed
# live, an output, compare, cancel from the page — and, with curl and Python, what the server
# refuses: no token, a foreign Host, a cancel without the CSRF token, paths out of outputs/,
# links, huge headers, malformed requests, clients that send slowly.
source "$(dirname "$0")/lib.sh"
export MLW_SOURCE_DIR
for tool in node curl /usr/bin/chromium; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is required (scripts/setup installs it)"; exit 1; }
done
[ -f "$MLW_SOURCE_DIR/web/node_modules/playwright-core/package.json" ] ||
  { echo "FAIL: web/node_modules/playwright-core is missing (scripts/setup runs npm ci)"; exit 1; }

cd "$WORK" && "$MLW" -q project create -n dash >/dev/null && cd "$WORK/dash" || exit 1
cat >train.py <<'PY'
import math, os, sys
import mlw
n = int(sys.argv[1])
for i in range(n):
    mlw.log_metric("loss", math.exp(-i / 30) + 0.01 * math.sin(i) + 1.0 / n, step=i)
    mlw.log_metric("acc", 1 - math.exp(-i / 40), step=i)
if n == 120:  # names an object inherits in JavaScript, logged by the second run only
    for name in ("constructor", "toString", "__proto__"):
        mlw.log_metric(name, 7)
with open(os.path.join(os.environ["MLW_OUTPUTS_DIR"], "model.txt"), "w") as f:
    f.write("weights of run %d\n" % n)
print("done", n)
PY
printf 'import sys\nprint("failing")\nsys.exit(3)\n' >fail.py
printf 'print("hello")\n' >hello.py
printf 'import time\nfor i in range(2400):\n    print("tick", i, flush=True)\n    time.sleep(0.25)\n' >slow.py
mkdir -p "$WORK/tinyds" && printf 'a\n' >"$WORK/tinyds/a.txt"
"$MLW" -q data add tiny "$WORK/tinyds" >/dev/null
HOME="$WORK/home" "$MLW" -q experiment submit -c local --data tiny train.py 200 >/dev/null
RUN_A=$("$MLW" history last -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
"$MLW" -q experiment submit -c local train.py 120 >/dev/null
RUN_B=$("$MLW" history last -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
"$MLW" -q experiment submit -c local fail.py >/dev/null
"$MLW" -q experiment submit -c local hello.py >/dev/null
"$MLW" -q experiment submit -a -c local slow.py >/dev/null
RUN_LIVE=$("$MLW" history last -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')

## Dashboards, each started by start_ui ARGS… (URL in $UI_URL, pid in $UI_PID, its stdout and
## stderr in $WORK/ui.out and ui.err) and stopped by stop_ui (Ctrl-C)
start_ui() {
  local out="$WORK/ui.out" err="$WORK/ui.err"
  : >"$out"
  "$@" >"$out" 2>"$err" &
  UI_PID=$!
  STARTED_PIDS+=("$UI_PID")
  for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
  UI_URL=$(head -1 "$out")
  UI_ERR=$(cat "$err")
}
stop_ui() {
  kill -INT "$UI_PID"
  for _ in $(seq 50); do kill -0 "$UI_PID" 2>/dev/null || break; sleep 0.1; done
}

## The server: its URL on stdout
start_ui "$MLW" history ui --port 0
URL=$UI_URL
expect_contains "the URL is printed with its token" "$URL" "http://127.0.0.1:"
BASE=${URL%%/?token=*}
TOKEN=${URL##*token=}
PORT=${BASE#http://*:}
PORT=${PORT%%/*}
BASE_PATH=/${BASE#http://*/}
COOKIE="Cookie: mlw_token_$PORT=$TOKEN"
expect_contains "stderr says what is served and how to stop" "$(cat "$WORK/ui.err")" "Ctrl-C to stop"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

## Refusals
expect_eq "no token: refused" "$(code "$BASE/api/runs")" 403
expect_eq "a wrong token: refused" "$(code -H "Cookie: mlw_token_$PORT=${TOKEN%?}x" "$BASE/api/runs")" 403
expect_eq "the token in a cookie: served" "$(code -H "$COOKIE" "$BASE/api/runs")" 200
expect_eq "a foreign Host (DNS rebinding): refused" "$(code -H "$COOKIE" -H "Host: attacker.example:$PORT" "$BASE/api/runs")" 403
expect_eq "localhost as Host: served" "$(code -H "$COOKIE" -H "Host: localhost:$PORT" "$BASE/api/runs")" 200
HEADERS=$(curl -s -D - -o /dev/null "$URL")
expect_contains "the token URL sets an HttpOnly, SameSite cookie" "$HEADERS" "HttpOnly; SameSite=Strict"
expect_contains "… scoped to the URL's random path (cookies are not port-scoped)" "$HEADERS" \
  "Path=$BASE_PATH/; HttpOnly"
expect_contains "… and sends the browser to that path without it" "$HEADERS" "Location: $BASE_PATH/"
check "the random path is 32 hex digits" grep -Eq '^/[0-9a-f]{32}$' <<<"$BASE_PATH"
expect_eq "the API at / (outside the random path): not served" "$(code -H "$COOKIE" "http://127.0.0.1:$PORT/api/runs")" 404
expect_eq "cancel without the CSRF token: refused" "$(code -d '' -H "$COOKIE" "$BASE/api/runs/$RUN_LIVE/cancel")" 403
expect_eq "… and the run goes on" "$("$MLW" history info -r "$RUN_LIVE" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" Running
RUN_DIR="$WORK/dash/.mlw/runs/$RUN_A"
ln -s "$RUN_DIR/run.json" "$RUN_DIR/outputs/link.txt"
mkdir -p "$RUN_DIR/outputs/sub" && ln -s /etc "$RUN_DIR/outputs/sub/etc"
expect_eq "an output: served" "$(code -H "$COOKIE" "$BASE/api/runs/$RUN_A/outputs/model.txt")" 200
expect_eq "../ out of outputs/: refused" "$(code --path-as-is -H "$COOKIE" "$BASE/api/runs/$RUN_A/outputs/../run.json")" 400
expect_eq "%2e%2e out of outputs/: refused" "$(code --path-as-is -H "$COOKIE" "$BASE/api/runs/$RUN_A/outputs/%2e%2e/run.json")" 400
expect_eq "an absolute path: refused" "$(code --path-as-is -H "$COOKIE" "$BASE/api/runs/$RUN_A/outputs//etc/passwd")" 400
expect_eq "a link to a file: not followed" "$(code -H "$COOKIE" "$BASE/api/runs/$RUN_A/outputs/link.txt")" 404
expect_eq "a link to a folder: not followed" "$(code -H "$COOKIE" "$BASE/api/runs/$RUN_A/outputs/sub/etc/passwd")" 404
expect_eq "an unknown run: 404" "$(code -H "$COOKIE" "$BASE/api/runs/nope_1")" 404
expect_eq "a bad sort column: 400" "$(code -H "$COOKIE" "$BASE/api/runs?sort=bogus")" 400

## Hostile clients: the server answers the next request, and stays up
cat >"$WORK/hostile.py" <<'PY'
import socket, sys, time
port, token, base = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
def request(raw, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(raw)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    return data
ok = lambda raw: request(b"GET %s/api/facets HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nCookie: mlw_token_%d=%s\r\nConnection: close\r\n\r\n" % (base, port, port, token.encode()))
print("huge-header", request(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Big: %s\r\n\r\n" % (port, b"a" * 200000)).split(b"\r\n")[0].decode(errors="replace") or "closed")
print("malformed", request(b"\x00\xff garbage\r\n\r\n").split(b"\r\n")[0].decode(errors="replace") or "closed")
# 200 clients that send a byte a second (another local user's): once they held every thread the
# server has, and a normal request waited for tens of seconds (issue 33); now they wait without
# one, and the normal request is answered at once.
slow = []
for _ in range(200):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\n")
    slow.append(s)
start = time.time()
deadline = start + 30
for tick in range(30):
    for s in slow:
        try:
            s.sendall(b"X")
        except OSError:
            pass
    answer = b""
    try:
        answer = request(b"GET %s/api/facets HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nCookie: mlw_token_%d=%s\r\nConnection: close\r\n\r\n" % (base, port, port, token.encode()), timeout=1)
    except OSError:
        pass
    if answer.startswith(b"HTTP/1.1 200"):
        break
    time.sleep(0.5)
print("answered-beside-slow-clients-after", round(time.time() - start))
print("after", ok(None).split(b"\r\n")[0].decode())
PY
HOSTILE=$(python3 "$WORK/hostile.py" "$PORT" "$TOKEN" "$BASE_PATH" 2>&1)
echo "$HOSTILE"
HUGE=$(grep '^huge-header' <<<"$HOSTILE")
check "a 200 kB header is refused, not served [$HUGE]" grep -Eq '^huge-header (HTTP/1.1 4[0-9][0-9]|closed)' <<<"$HUGE"
check "a malformed request is refused [$(grep '^malformed' <<<"$HOSTILE")]" grep -Eq '^malformed (HTTP/1.1 400|closed)' <<<"$HOSTILE"
WAITED=$(sed -n 's/^answered-beside-slow-clients-after //p' <<<"$HOSTILE")
check "200 slow clients do not keep others out (waited ${WAITED:-?} s)" test "${WAITED:-99}" -le 2
expect_contains "the server is up after all of it" "$HOSTILE" "after HTTP/1.1 200"
kill -0 "$UI_PID" 2>/dev/null
check "the server process is still running" test $? -eq 0

## Kept-alive connections, as browsers keep them (issue 45): the Keep-Alive header promises 2 s,
## and a connection reused after half a second is answered (it was closed after 2 ms, so a reuse
## raced the close: resets); 500 such clients, 5 requests each, are all answered.
cat >"$WORK/kept.py" <<'PY'
import http.client, sys, threading, time
from collections import Counter
port, token, base, clients = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
results = []
def client():
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for _ in range(5):
            c.request("GET", base + "api/facets", headers={"Cookie": f"mlw_token_{port}={token}"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                results.append(f"status {r.status}")
                return
            time.sleep(0.5)
        results.append("ok")
    except Exception as e:
        results.append(type(e).__name__)
threads = [threading.Thread(target=client) for _ in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(" ".join(f"{k}:{v}" for k, v in sorted(Counter(results).items())))
PY
expect_eq "one kept-alive connection, reused after 0.5 s, answered each time" \
  "$(timeout 60 python3 "$WORK/kept.py" "$PORT" "$TOKEN" "$BASE_PATH/" 1 2>&1)" "ok:1"
expect_eq "500 kept-alive clients, 5 requests each: every one answered" \
  "$(timeout 180 python3 "$WORK/kept.py" "$PORT" "$TOKEN" "$BASE_PATH/" 500 2>&1)" "ok:500"
kill -0 "$UI_PID" 2>/dev/null
check "the server process is still running after them" test $? -eq 0

## The browser
SHOTS=${MLW_UI_SHOTS:-}
BROWSER=$(cd "$MLW_SOURCE_DIR/tests/integration" &&
  timeout 180 node ui_browser.cjs "$URL" "$RUN_A" "$RUN_B" "$RUN_LIVE" $SHOTS 2>&1)
count_browser_checks "$BROWSER"
check "the browser checks ran (19 of them)" test "$(grep -c '^ok \|^not ok ' <<<"$BROWSER")" -ge 19
for _ in $(seq 100); do
  [ "$("$MLW" history info -r "$RUN_LIVE" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = Canceled ] && break
  sleep 0.2
done
run_mlw history list
"$MLW" -q experiment cancel -r "$RUN_LIVE" >/dev/null 2>&1  # when the page could not
expect_contains "history list shows the run canceled from the page" "$(grep "$RUN_LIVE" <<<"$OUT")" "Canceled"

## A second dashboard on the same port is refused (no SO_REUSEPORT sharing of connections)
expect_error "a busy port" 1 "cannot listen on 127.0.0.1 port $PORT" history ui --port "$PORT"

## A FIFO where a run's metrics.jsonl should be (issue 33: the series request hung, and the
## server then ignored SIGTERM): answered at once
HELLO_RUN=$("$MLW" history list -o json | python3 -c 'import json,sys; print([r["run_id"] for r in json.load(sys.stdin) if r["script"] == "hello.py"][0])')
rm -f "$WORK/dash/.mlw/runs/$HELLO_RUN/metrics.jsonl"
mkfifo "$WORK/dash/.mlw/runs/$HELLO_RUN/metrics.jsonl"
expect_eq "a FIFO as metrics.jsonl: the series is answered" \
  "$(code --max-time 5 -H "$COOKIE" "$BASE/api/runs/$HELLO_RUN/series")" 200

## Ctrl-C stops it
stop_ui
kill -0 "$UI_PID" 2>/dev/null
check "SIGINT stops the server" test $? -ne 0
expect_contains "… saying so" "$(cat "$WORK/ui.err")" "Dashboard stopped"
wait "$UI_PID"
expect_eq "… and exits 0 (under ASan: no leak, no error in all it served)" "$?" 0
check "no sanitizer report from the server" test "$(grep -c Sanitizer "$WORK/ui.err")" -eq 0

## --open hands xdg-open (the first on PATH) a private page that leads to the URL: the token is
## on no command line, where every local user reads it in /proc (issue 33)
mkdir -p "$WORK/fakebin" "$WORK/emptybin"
cat >"$WORK/fakebin/xdg-open" <<SH
#!/bin/sh
tr '\\0' ' ' </proc/\$\$/cmdline >"$WORK/opened.cmdline"
f=\${1#file://}
stat -c '%a %U' "\$f" "\${f%/*}" >"$WORK/opened.modes"
cat "\$f" >"$WORK/opened.page"
printf '%s\\n' "\$*" >"$WORK/opened"
SH
chmod +x "$WORK/fakebin/xdg-open"
start_ui env PATH="$WORK/fakebin:$PATH" "$MLW" history ui --port 0 --open
for _ in $(seq 50); do [ -s "$WORK/opened" ] && break; sleep 0.1; done
OPENED=$(cat "$WORK/opened" 2>/dev/null)
expect_contains "--open gives xdg-open a file" "$OPENED" "file://$XDG_CONFIG_HOME/mlw/ui/open-"
expect_not_contains "--open: the token is not on xdg-open's command line" "$(cat "$WORK/opened.cmdline" 2>/dev/null)" "${UI_URL##*token=}"
expect_eq "--open: the page is yours alone, in a folder only you open" "$(cat "$WORK/opened.modes" 2>/dev/null | tr '\n' ' ')" "600 $(id -un) 700 $(id -un) "
expect_contains "--open: the page leads to the printed URL" "$(cat "$WORK/opened.page" 2>/dev/null)" "url=$UI_URL"
stop_ui
check "--open: the page is removed when the dashboard stops" test ! -e "${OPENED#file://}"
## … and without a browser to open, says so and serves all the same
start_ui env PATH="$WORK/emptybin" "$MLW" history ui --port 0 --open
for _ in $(seq 50); do grep -q "could not open" "$WORK/ui.err" && break; sleep 0.1; done
UI_ERR=$(cat "$WORK/ui.err")
expect_contains "--open without xdg-open: a warning" "$UI_ERR" "could not open a browser"
expect_eq "--open without xdg-open: still served" "$(code "$UI_URL" -L -c "$WORK/jar" -b "$WORK/jar")" 200
stop_ui

## A project folder whose name has a space, a non-ASCII letter and punctuation (docs/cli.md
## says such folders work): its runs open in the dashboard (issue 33)
ODD="$WORK/my proj é!"
mkdir -p "$ODD" && cp -r aml_config .amlignore hello.py "$ODD/"
(cd "$ODD" && "$MLW" -q experiment submit -c local hello.py >/dev/null)
ODD_RUN=$(cd "$ODD" && "$MLW" history last -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
ODD_ENC=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$ODD_RUN")
cd "$ODD" || exit 1
start_ui "$MLW" history ui --port 0
B=${UI_URL%%/?token=*}
T=${UI_URL##*token=}
P=${B#http://*:}
P=${P%%/*}
for what in "" /log /series; do
  expect_eq "a run of \"my proj é!\": api/runs/ID$what served" \
    "$(code -H "Cookie: mlw_token_$P=$T" "$B/api/runs/$ODD_ENC$what")" 200
done
expect_eq "… a path out of the runs through the id: refused" \
  "$(code --path-as-is -H "Cookie: mlw_token_$P=$T" "$B/api/runs/%2e%2e")" 404
stop_ui
cd "$WORK/dash" || exit 1

## --host: the address to listen on (another loopback address here), and the Host it answers to
start_ui "$MLW" history ui --host 127.0.0.2 --port 0
expect_contains "--host 127.0.0.2: the URL names it" "$UI_URL" "http://127.0.0.2:"
B=${UI_URL%%/?token=*}
T=${UI_URL##*token=}
P=${B#http://*:}
P=${P%%/*}
BP=/${B#http://*/}
expect_eq "--host 127.0.0.2: served there" "$(code -H "Cookie: mlw_token_$P=$T" "$B/api/runs")" 200
expect_eq "--host 127.0.0.2: not on 127.0.0.1" "$(code -H "Cookie: mlw_token_$P=$T" "http://127.0.0.1:$P$BP/api/runs")" 000
expect_eq "--host 127.0.0.2: a Host of localhost is refused (not what it listens on)" \
  "$(code -H "Cookie: mlw_token_$P=$T" -H "Host: localhost:$P" "$B/api/runs")" 403
stop_ui
## --host 0.0.0.0 (every address) in a network namespace of this test's own with only loopback
if ! unshare --net true 2>/dev/null; then
  fail "--host 0.0.0.0: unshare --net is refused here (the suite needs root)"
else
  cat >"$WORK/wild.sh" <<'SH'
ip link set lo up
"$MLW" history ui --host 0.0.0.0 --port 0 >"$WORK/wild.out" 2>"$WORK/wild.err" &
pid=$!
for _ in $(seq 100); do [ -s "$WORK/wild.out" ] && break; sleep 0.1; done
url=$(head -1 "$WORK/wild.out")
base=${url%%/?token=*}
port=${base#http://*:}; port=${port%%/*}
path=/${base#http://*/}
token=${url##*token=}
c() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Cookie: mlw_token_$port=$token" "$@"; }
echo "url $url"
echo "ip $(c "http://127.0.0.1:$port$path/api/runs")"
echo "name $(c -H "Host: $(hostname):$port" "http://127.0.0.1:$port$path/api/runs")"
echo "foreign $(c -H "Host: attacker.example:$port" "http://127.0.0.1:$port$path/api/runs")"
kill -INT $pid
for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
SH
  WILD=$(MLW="$MLW" WORK="$WORK" timeout 60 unshare --net bash "$WORK/wild.sh")
  expect_contains "--host 0.0.0.0: a warning that every network can reach it" "$(cat "$WORK/wild.err")" "serves the dashboard to every network"
  expect_contains "--host 0.0.0.0: the URL names this machine" "$(grep '^url ' <<<"$WILD")" "http://$(hostname):"
  expect_eq "--host 0.0.0.0: served at an IP address" "$(grep '^ip ' <<<"$WILD")" "ip 200"
  expect_eq "--host 0.0.0.0: served as this machine's name" "$(grep '^name ' <<<"$WILD")" "name 200"
  expect_eq "--host 0.0.0.0: another name is refused (DNS rebinding)" "$(grep '^foreign ' <<<"$WILD")" "foreign 403"
fi

## Bad input
expect_error "a port out of range" 2 "--port must be" history ui --port 70000
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
