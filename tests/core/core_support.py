"""Helpers for the pipeline tests: real pools of real worker processes on this machine (`sky.Local()`).

A module of its own, not the conftest: `from core_support import ...` finds whichever `conftest` was
imported last, which is another folder's when several test folders are collected together.
The helpers run on workers too, so this module is shipped by value.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle

import skyward as sky
from skyward.messages import Hello, TaskMessage, function_key, pickle_function
from skyward.wire import Frame, FrameDecoder, Kind, encode_bytes

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def local_pool(nodes: int = 2, **kwargs: Any) -> sky.Pool:
    """A Local pool that is not entered with `with`, so `>> sky` stays unbound in the tests using it."""
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=sky.Local(), nodes=nodes, **kwargs)


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, dead but not reaped yet, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, it was read
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode()


def is_worker_of_this_process(pid: int) -> bool:
    """Whether `pid` is a worker a Local pool of this process started: its child, or a child of
    the pool's fork server (`skyward.worker.forkserver`), which is its child."""
    parent = parent_pid(pid)
    if parent == os.getpid():
        return True
    return parent_pid(parent) == os.getpid() and "skyward.worker.forkserver" in cmdline(parent)


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


@sky.function
def worker_pid() -> int:
    return os.getpid()


@sky.function
def node_index() -> int:
    return sky.instance_info().node


def assert_pool_works(compute: sky.Pool) -> None:
    """Every node of `compute` still takes and finishes a task."""
    assert node_index() @ compute == list(range(compute.current_nodes()))


@sky.function
def write_pid_then_sleep(path: str, seconds: float) -> int:
    """Write this worker's pid to `path` (atomically: a reader never sees half of it), then stay in
    flight for `seconds`; answers the pid."""
    Path(path + ".tmp").write_text(str(os.getpid()))
    os.replace(path + ".tmp", path)
    time.sleep(seconds)
    return os.getpid()


@sky.function
def busy_loop(seconds: float) -> int:
    """Pure Python, never blocking in C: the kind of task a cancel can stop in place."""
    deadline = time.monotonic() + seconds
    spins = 0
    while time.monotonic() < deadline:
        spins += 1
    return spins


class DirectWorker:
    """A worker started directly (`python -m skyward.worker`) and spoken to frame by frame."""

    def __init__(self, hello: Hello, own_session: bool = False) -> None:
        # own_session: the worker leads a process group, as Local and SSH start it.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "skyward.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=own_session,
        )
        self.frames: list[Frame] = []
        self.decoder = FrameDecoder(self.frames.append)
        self.send(Kind.HELLO, 0, hello)
        assert self.next_frame().kind is Kind.READY

    def send(self, kind: Kind, id: int = 0, payload: Any = None) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode_bytes(kind, id, payload))
        self.proc.stdin.flush()

    def next_frame(self) -> Frame:
        assert self.proc.stdout is not None
        while not self.frames:
            data = os.read(self.proc.stdout.fileno(), 65536)
            assert data, "the worker closed its stdout"
            self.decoder.feed(data)
        return self.frames.pop(0)

    def run(self, fn: Any) -> Frame:
        data = pickle_function(fn, fn.__name__)
        key = function_key(data)
        self.send(Kind.FUNCTION, 0, (key, data))
        self.send(Kind.TASK, 1, TaskMessage(key, (), {}, fn.__name__).to_wire())
        while True:
            frame = self.next_frame()
            if frame.kind in (Kind.RESULT, Kind.ERROR):
                return frame

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                pipe.close()  # type: ignore[union-attr]
