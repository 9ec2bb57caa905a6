"""A notebook's client for the integration suites: runs cells in a Jupyter kernel with
jupyter_client, as a notebook page does, and prints one JSON line per cell (its status and
output).

    python3 kernel_cells.py CONNECTION_FILE [--shutdown] CODE...

--shutdown: asks the kernel to shut down after the cells, as Jupyter does when a notebook closes.
"""

import json
import sys
import time

from jupyter_client import BlockingKernelClient


def ready_client(connection_file):
    """A client whose kernel answered. A kernel on another machine answers once its run has
    started there (an image to build, a container or a batch job to start); this asks it, as a
    notebook's page does, for up to 150 s. Without the heartbeat channel: its one second to answer
    is shorter than a loaded machine takes to carry a new connection into a container, and a
    client that gave up on it each time came back with five new connections while the last five
    were still being carried (a CI run saw ten open at once on one SSH login)."""
    deadline = time.time() + 150
    while True:
        client = BlockingKernelClient()
        client.load_connection_file(connection_file)
        client.start_channels(hb=False)
        try:
            client.wait_for_ready(timeout=60)
            return client
        except RuntimeError:
            client.stop_channels()
            if time.time() > deadline:
                raise
            time.sleep(1)


def main():
    args = sys.argv[2:]
    shutdown = "--shutdown" in args
    client = ready_client(sys.argv[1])
    for code in (arg for arg in args if arg != "--shutdown"):
        out = []

        def keep(message):
            content = message["content"]
            out.append(content.get("text") or content.get("data", {}).get("text/plain")
                       or content.get("ename") or "")

        reply = client.execute_interactive(code, timeout=60, output_hook=keep)
        print(json.dumps({"status": reply["content"]["status"], "out": "".join(out)}), flush=True)
    if shutdown:
        client.shutdown()
    client.stop_channels()


if __name__ == "__main__":
    main()
