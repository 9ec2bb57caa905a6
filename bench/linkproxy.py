#!/usr/bin/env python3
"""A link emulator for mlw's benchmarks and fault tests: a TCP proxy on loopback that makes
the path to a server look like a real network link. Every chunk that crosses it, in each
direction, leaves at the link's rate (a chunk of N bytes occupies the link for N*8/rate
seconds, in order) and arrives the one-way delay later. With the default 12.5 ms and
100 Mbit/s, a round trip costs 25 ms, as from a laptop to a cloud machine.

Usage: linkproxy.py --listen PORT --to HOST:PORT [--delay-ms 12.5] [--rate-mbit 100]
                    [--ready FILE]
  --listen 0 picks a free port; the port is written to --ready FILE (and stdout) once it
  listens. Runs until killed (SIGTERM). Loopback only: it listens on 127.0.0.1.
"""

import argparse
import asyncio
import os
import signal
import sys
import time


class Direction:
    """One direction of one connection: chunks in, the same chunks out, delayed and paced."""

    def __init__(self, reader, writer, delay_s, rate_bps):
        self.reader = reader
        self.writer = writer
        self.delay_s = delay_s
        self.rate_bps = rate_bps
        self.queue = asyncio.Queue()
        self.link_free = 0.0  # when the link has sent everything queued so far
        # A router's queue: at most this much sending time is accepted ahead, so that a fast
        # sender meets back-pressure (TCP's window) instead of an endless buffer.
        self.queue_s = max(0.05, 2 * delay_s)

    async def receive(self):
        """Reads chunks and stamps each with the time it arrives at the far end."""
        try:
            while True:
                ahead = self.link_free - time.monotonic()
                if ahead > self.queue_s:
                    await asyncio.sleep(ahead - self.queue_s)
                chunk = await self.reader.read(65536)
                now = time.monotonic()
                if not chunk:
                    break
                start = max(now, self.link_free)
                self.link_free = start + len(chunk) * 8 / self.rate_bps
                await self.queue.put((self.link_free + self.delay_s, chunk))
        except (ConnectionError, OSError):
            pass
        await self.queue.put((time.monotonic() + self.delay_s, None))

    async def deliver(self):
        """Writes each chunk at its arrival time; the end (EOF) arrives after the last one."""
        try:
            while True:
                due, chunk = await self.queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if chunk is None:
                    if self.writer.can_write_eof():
                        self.writer.write_eof()
                    break
                self.writer.write(chunk)
                await self.writer.drain()
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass


async def relay(client_reader, client_writer, target, delay_s, rate_bps):
    host, port = target
    try:
        server_reader, server_writer = await asyncio.open_connection(host, port)
    except OSError:
        client_writer.close()
        return
    directions = [Direction(client_reader, server_writer, delay_s, rate_bps),
                  Direction(server_reader, client_writer, delay_s, rate_bps)]
    tasks = [asyncio.create_task(d.receive()) for d in directions]
    tasks += [asyncio.create_task(d.deliver()) for d in directions]
    try:
        await asyncio.gather(*tasks, return_exceptions=True)
    except asyncio.CancelledError:
        pass
    for writer in (client_writer, server_writer):
        writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--to", required=True, help="HOST:PORT of the server")
    parser.add_argument("--delay-ms", type=float, default=12.5, help="one-way delay")
    parser.add_argument("--rate-mbit", type=float, default=100.0, help="link rate, each way")
    parser.add_argument("--ready", help="file to write the listening port to")
    args = parser.parse_args()
    host, _, port = args.to.rpartition(":")
    target = (host or "127.0.0.1", int(port))
    delay_s = args.delay_ms / 1000.0
    rate_bps = args.rate_mbit * 1e6
    server = await asyncio.start_server(
        lambda r, w: relay(r, w, target, delay_s, rate_bps), "127.0.0.1", args.listen)
    listening = server.sockets[0].getsockname()[1]
    if args.ready:
        with open(args.ready + ".tmp", "w") as f:
            f.write(f"{listening}\n")
        os.replace(args.ready + ".tmp", args.ready)
    print(listening, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
