# shellcheck shell=sh
# `mlw experiment forward` inside a run's container (src/exec/forward.cpp): one connection to the
# run's port, carried over this program's stdin and stdout (docker exec -i, on this machine or
# over SSH), or on a batch job's node (src/kinds/*/forward.sh). Run as the program of `sh -c`
# with the port as $1 and the hosts as $2 (default localhost; several: comma-separated, tried in
# order). A container has no address the machine can reach (no bridge, or a network of its own),
# so the run's own Python connects from inside it: every address of each host is tried. The
# client's end (stdin's) is passed on as a half-close; the run's end ends the relay. Nothing
# listening: one line and 111.

# shellcheck disable=SC2016 # Python's program, not the shell's
program='
import os, select, socket, sys
port, hosts = int(sys.argv[1]), sys.argv[2].split(",")
conn, why = None, "no address"
for host in hosts:
    try:
        addresses = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except OSError as e:
        addresses, why = [], e.strerror
    for family, kind, proto, _, address in addresses:
        conn = socket.socket(family, kind, proto)
        try:
            conn.connect(address)
            break
        except OSError as e:
            why = e.strerror
            conn.close()
            conn = None
    if conn is not None:
        break
if conn is None:
    sys.stderr.write("mlw: warning: nothing listens on port %d of %s in the run (%s): this connection is closed\n" % (port, " or ".join(hosts), why))
    sys.exit(111)
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small messages go at once
reading = True
try:
    while True:
        ready = select.select([0, conn] if reading else [conn], [], [])[0]
        if reading and 0 in ready:
            data = os.read(0, 65536)
            if data:
                conn.sendall(data)
            else:
                reading = False
                conn.shutdown(socket.SHUT_WR)
        if conn in ready:
            data = conn.recv(65536)
            if not data:
                break
            while data:
                data = data[os.write(1, data):]
except OSError:
    sys.exit(1)
'
for python in python3 python; do
  command -v "$python" >/dev/null 2>&1 && exec "$python" -c "$program" "$1" "${2:-localhost}"
done
echo "mlw: warning: no python on $(hostname) to carry port $1: this connection is closed" >&2
exit 111
