"""A wide-area network in user space: a TCP proxy on 127.0.0.1 in front of each server that
delivers every chunk a fixed one-way delay after it arrived, in order, optionally through a
token-bucket bandwidth cap.

These kernels have no netem (`tc qdisc ... netem delay` needs a module they lack), so the WAN case
(`case_wan.py`) puts this in front of each loopback sshd instead. A chunk read on one side is
stamped with the time it may leave (its arrival plus the delay, later if the cap holds it back)
and written to the other side at that time; a direction's chunks leave in the order they came.
A delay of 25 ms each way makes a 50 ms round trip. Both sockets have TCP_NODELAY, so the
kernel adds no wait of its own (Nagle's, against the peer's delayed ACK) to the one asked for.

It runs in a process of its own (`WanProxy`), so the client under test shares no GIL with it: a
thread of the client's process would deliver late whenever the client's threads held the GIL
(up to the 5 ms switch interval).

    python benchmarks/wan_proxy.py --delay-ms 25 [--rate-mbit 100] HOST:PORT [HOST:PORT ...]

prints `LISTEN 127.0.0.1:<port>` per upstream, in order, then `READY`, and serves until its stdin
closes (or SIGTERM).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections import deque
from pathlib import Path

#: How much one read takes off a socket.
READ = 256 * 1024


class TokenBucket:
    """A bandwidth cap: `rate` bytes a second, up to `burst` bytes at once after a pause.

    `release(n, now)` is when `n` bytes may leave: now if the bucket holds that many tokens, else
    once the rate has refilled the debt. Tokens may go below zero (a debt later chunks wait out),
    so release times never go backwards: a direction's order is kept.
    """

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp: float | None = None

    def release(self, n: int, now: float) -> float:
        if self.stamp is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.tokens -= n
        return now if self.tokens >= 0 else now - self.tokens / self.rate


class Direction:
    """One way of one connection: chunks stamped on arrival, written when due, in order."""

    def __init__(self, delay: float, bucket: TokenBucket | None) -> None:
        self.delay = delay
        self.bucket = bucket
        self.queue: deque[tuple[float, bytes | None]] = deque()
        self.wake = asyncio.Event()

    async def read(self, reader: asyncio.StreamReader) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                data = await reader.read(READ)
                now = loop.time()
                if not data:
                    break
                leave = self.bucket.release(len(data), now) if self.bucket is not None else now
                self.queue.append((leave + self.delay, data))
                self.wake.set()
        except (ConnectionError, OSError):
            pass
        self.queue.append((loop.time() + self.delay, None))  # the end travels with the same delay
        self.wake.set()

    async def write(self, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue = self.queue
        try:
            while True:
                if not queue:
                    self.wake.clear()
                    await self.wake.wait()
                    continue
                due = queue[0][0]
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                now = loop.time()
                chunks: list[bytes] = []
                end = False
                while queue and queue[0][0] <= now:
                    data = queue.popleft()[1]
                    if data is None:
                        end = True
                        break
                    chunks.append(data)
                if chunks:
                    writer.write(b"".join(chunks))
                    await writer.drain()
                if end:
                    with contextlib.suppress(OSError):
                        if writer.can_write_eof():
                            writer.write_eof()
                    return
        except (ConnectionError, OSError):
            return


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Route:
    """One listener on 127.0.0.1 in front of one upstream server, with one bucket per direction
    (the link of that host, shared by all its connections)."""

    def __init__(
        self, upstream: tuple[str, int], delay: float, rate: float | None, burst: float,
        shared: tuple[TokenBucket, TokenBucket] | None = None,
    ) -> None:
        self.upstream = upstream
        self.delay = delay
        self.up = TokenBucket(rate, burst) if rate else None
        self.down = TokenBucket(rate, burst) if rate else None
        if shared is not None:  # one link for every route: the client's own uplink and downlink
            self.up, self.down = shared

    async def serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        _nodelay(client_writer)
        _nodelay(server_writer)
        up, down = Direction(self.delay, self.up), Direction(self.delay, self.down)
        try:
            await asyncio.gather(
                up.read(client_reader), up.write(server_writer),
                down.read(server_reader), down.write(client_writer),
            )
        finally:
            for writer in (client_writer, server_writer):
                writer.close()


async def serve(
    upstreams: list[tuple[str, int]], delay: float, rate: float | None, burst: float, shared: bool = False
) -> None:
    servers = []
    buckets = (TokenBucket(rate, burst), TokenBucket(rate, burst)) if shared and rate else None
    for upstream in upstreams:
        route = Route(upstream, delay, rate, burst, buckets)
        server = await asyncio.start_server(route.serve, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        print(f"LISTEN 127.0.0.1:{port}", flush=True)
    print("READY", flush=True)
    loop = asyncio.get_running_loop()
    # Serve until stdin closes: the parent (WanProxy) went away or stopped us.
    await loop.run_in_executor(None, sys.stdin.buffer.read)
    os._exit(0)  # connections still open end with the process, without asyncio's cancel noise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--delay-ms", type=float, required=True, help="one-way delay, each direction")
    parser.add_argument("--rate-mbit", type=float, default=None, help="bandwidth cap per host and direction")
    parser.add_argument("--burst-kb", type=float, default=64.0, help="the cap's bucket size")
    parser.add_argument("--shared", action="store_true", help="one cap for all hosts: the client's link")
    parser.add_argument("upstreams", nargs="+", metavar="HOST:PORT")
    args = parser.parse_args(argv)
    upstreams = []
    for text in args.upstreams:
        host, _, port = text.rpartition(":")
        upstreams.append((host, int(port)))
    rate = args.rate_mbit * 1e6 / 8 if args.rate_mbit else None
    asyncio.run(serve(upstreams, args.delay_ms / 1e3, rate, args.burst_kb * 1024, args.shared))
    return 0


class WanProxy:
    """The proxy in a subprocess: `ports[i]` on 127.0.0.1 reaches `upstreams[i]`.

    `delay`: one-way seconds (half the round trip it adds); `rate_mbit`: the token-bucket cap per
    host and direction (None: no cap); `shared`: the cap is one for all hosts together, per
    direction, as the client's own link is."""

    def __init__(
        self, upstreams: list[tuple[str, int]], delay: float, rate_mbit: float | None = None,
        burst_kb: float = 64.0, shared: bool = False,
    ) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--delay-ms", repr(delay * 1e3),
                   "--burst-kb", repr(burst_kb)]
        if rate_mbit:
            command += ["--rate-mbit", repr(rate_mbit)]
        if shared:
            command += ["--shared"]
        command += [f"{host}:{port}" for host, port in upstreams]
        self.delay = delay
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ports: list[int] = []
        assert self.process.stdout is not None
        for line in self.process.stdout:
            text = line.decode().strip()
            if text == "READY":
                break
            if text.startswith("LISTEN "):
                self.ports.append(int(text.rsplit(":", 1)[1]))
        if len(self.ports) != len(upstreams):
            self.stop()
            raise RuntimeError("the WAN proxy did not start")

    @property
    def rtt(self) -> float:
        return 2 * self.delay

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                assert self.process.stdin is not None
                self.process.stdin.close()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> WanProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    sys.exit(main())
