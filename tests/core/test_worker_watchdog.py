"""The worker's ttl watchdog (`Spec.ttl`): a worker whose client has gone silent stops itself.

The worker is started directly (`python -m skyward.worker`) and spoken to frame by frame, so the
client's silence is real: nothing but what the test writes reaches it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from core_support import local_pool

import skyward as sky
from skyward.messages import Hello, TaskMessage, function_key, pickle_function
from skyward.task.instance import InstanceInfo
from skyward.wire import Frame, FrameDecoder, Kind, encode_bytes


class DirectWorker:
    def __init__(self, hello: Hello) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "skyward.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
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


@pytest.fixture
def start_worker() -> Iterator[Any]:
    started: list[DirectWorker] = []

    def start(**fields: Any) -> DirectWorker:
        fields.setdefault("info", InstanceInfo(node=0, total_nodes=1))
        fields.setdefault("concurrency", 1)
        fields.setdefault("executor", "thread")
        fields.setdefault("reuse_processes", True)
        fields.setdefault("env", {})
        worker = DirectWorker(Hello(**fields))
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()


def exit_seconds(worker: DirectWorker, timeout: float = 10.0) -> float:
    started = time.monotonic()
    worker.proc.wait(timeout)
    return time.monotonic() - started


def test_a_silent_client_makes_the_worker_exit_after_ttl(start_worker: Any) -> None:
    worker = start_worker(ttl=1)
    assert exit_seconds(worker) < 2.5
    assert worker.proc.returncode == 0


def test_pings_keep_the_worker_alive_and_silence_then_stops_it(start_worker: Any) -> None:
    worker = start_worker(ttl=1)
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:
        worker.send(Kind.PING)
        assert worker.next_frame().kind is Kind.PONG
        time.sleep(0.3)
    assert worker.proc.poll() is None  # 2.5 s, more than twice the ttl, and still here
    assert exit_seconds(worker) < 2.5


def test_ttl_zero_disables_the_watchdog(start_worker: Any) -> None:
    worker = start_worker(ttl=0)
    time.sleep(1.5)
    assert worker.proc.poll() is None


@contextmanager
def _marks_exit(path: str) -> Iterator[None]:
    yield
    Path(path).write_text("around_app exited")


def test_on_silence_around_app_exits_then_the_shutdown_command_runs(
    start_worker: Any, tmp_path: Path
) -> None:
    exited, shut = tmp_path / "exited", tmp_path / "shutdown"
    plugin = sky.Plugin.create("marker").with_around_app(lambda info: _marks_exit(str(exited)))
    worker = start_worker(ttl=1, plugins=(plugin,), shutdown_command=f"cat {exited} > {shut}")
    assert worker.run(os.getpid).kind is Kind.RESULT  # enters around_app
    assert exit_seconds(worker) < 2.5
    assert shut.read_text() == "around_app exited"  # in that order


def test_a_pool_pings_its_workers_so_an_idle_pool_outlives_its_ttl() -> None:
    @sky.function
    def pid() -> int:
        return os.getpid()

    with local_pool(1, ttl=1) as compute:
        before = pid() >> compute
        time.sleep(2.5)
        assert pid() >> compute == before


def test_sigterm_makes_the_worker_leave_around_app_then_exit(start_worker: Any, tmp_path: Path) -> None:
    # What a node's guardian sends when the pool's lease lapses (skyward.guardian).
    exited = tmp_path / "exited"
    plugin = sky.Plugin.create("marker").with_around_app(lambda info: _marks_exit(str(exited)))
    worker = start_worker(ttl=0, plugins=(plugin,))
    assert worker.run(os.getpid).kind is Kind.RESULT  # enters around_app
    worker.proc.send_signal(signal.SIGTERM)
    assert exit_seconds(worker) < 5
    assert exited.read_text() == "around_app exited"
