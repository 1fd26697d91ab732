"""Echo partners for the two ping-pong floors, each a fresh interpreter that answers what it reads.

The floors are the round trips no framework can beat on this machine: a byte through two raw
pipes (`os.write` / `os.read`), and an object through the standard library's
`multiprocessing.Pipe()` (`conn.send(conn.recv())`, as its documentation shows it). The partners
are started with `subprocess` rather than forked, so a floor can be measured while a framework
runs its threads in this process: the latency case measures both beside each framework's round
trips, in the same phase of this machine, whose speed drifts by up to 2x over a minute.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import subprocess
import sys
import time

F_SETPIPE_SZ = 1031

_PIPE_ECHO = """
import os, sys
inbox, outbox = int(sys.argv[1]), int(sys.argv[2])
while os.read(inbox, 1):
    os.write(outbox, b"o")
"""

_CONNECTION_ECHO = """
import sys
from multiprocessing.connection import Connection
conn = Connection(int(sys.argv[1]))
while (message := conn.recv()) is not None:
    conn.send(message)
"""


def pipe() -> tuple[int, int]:
    """A pipe enlarged to 1 MB where the kernel allows, as Skyward's are."""
    r, w = os.pipe()
    for fd in (r, w):
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
    return r, w


def _start(source: str, *fds: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", source, *map(str, fds)], pass_fds=fds)


class PipeEcho:
    """A child that echoes one byte at a time over two raw pipes."""

    def __init__(self) -> None:
        to_child_r, self._to_child = pipe()
        self._from_child, from_child_w = pipe()
        self._process = _start(_PIPE_ECHO, to_child_r, from_child_w)
        os.close(to_child_r)
        os.close(from_child_w)

    def round_trip(self, _: int) -> None:
        os.write(self._to_child, b"i")
        os.read(self._from_child, 1)

    def close(self) -> None:
        os.close(self._to_child)  # the child reads end of file and exits
        self._process.wait()
        os.close(self._from_child)


class ConnectionEcho:
    """A child that echoes objects over a `multiprocessing.Pipe()` connection (a socket pair)."""

    def __init__(self) -> None:
        self._conn, child = multiprocessing.Pipe()
        self._process = _start(_CONNECTION_ECHO, child.fileno())
        child.close()

    def round_trip(self, i: int) -> None:
        self._conn.send(i)
        self._conn.recv()

    def close(self) -> None:
        with contextlib.suppress(OSError):  # a child that already died has closed its end
            self._conn.send(None)
        self._process.wait()
        self._conn.close()


def round_trips(partner: PipeEcho | ConnectionEcho, rounds: int) -> list[float]:
    """`rounds` timed round trips in seconds, after a tenth as many untimed (the child has slept)."""
    for i in range(rounds // 10):
        partner.round_trip(i)
    clock = time.perf_counter
    samples = []
    for i in range(rounds):
        began = clock()
        partner.round_trip(i)
        samples.append(clock() - began)
    return samples
