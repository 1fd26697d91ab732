"""The worker's ttl watchdog (`Spec.ttl`): a worker whose client has gone silent stops itself.

The worker is started directly (`python -m skyward.worker`) and spoken to frame by frame, so the
client's silence is real: nothing but what the test writes reaches it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from core_support import DirectWorker, local_pool

import skyward as sky
from skyward.messages import Hello
from skyward.task.instance import InstanceInfo
from skyward.wire import Kind


@pytest.fixture
def start_worker() -> Iterator[Any]:
    started: list[DirectWorker] = []

    def start(own_session: bool = False, **fields: Any) -> DirectWorker:
        fields.setdefault("info", InstanceInfo(node=0, total_nodes=1))
        fields.setdefault("concurrency", 1)
        fields.setdefault("executor", "thread")
        fields.setdefault("reuse_processes", True)
        fields.setdefault("env", {})
        worker = DirectWorker(Hello(**fields), own_session=own_session)
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


def _other_threads(pid: int) -> list[int]:
    return sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc to name a thread")
def test_a_sigterm_the_kernel_hands_to_a_thread_other_than_the_main_one_still_ends_the_worker(
    start_worker: Any, tmp_path: Path
) -> None:
    # kill(2) hands a process's signal to any thread that does not block it; under load that is
    # not always the main one, which here sleeps until the channel closes. A thread's id given to
    # kill(2) makes that thread the one the kernel tries first.
    exited = tmp_path / "exited"
    plugin = sky.Plugin.create("marker").with_around_app(lambda info: _marks_exit(str(exited)))
    worker = start_worker(ttl=0, plugins=(plugin,))
    assert worker.run(os.getpid).kind is Kind.RESULT
    threads = _other_threads(worker.proc.pid)
    assert threads, "the worker runs its reader and its tasks on threads of their own"
    os.kill(threads[-1], signal.SIGTERM)
    assert exit_seconds(worker) < 5
    assert exited.read_text() == "around_app exited"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc to see a process")
def test_sigterm_ends_the_subprocesses_a_task_left_when_the_worker_leads_its_group(
    start_worker: Any, tmp_path: Path
) -> None:
    worker = start_worker(ttl=0, own_session=True)

    def start_a_sleeper() -> int:
        import subprocess

        return subprocess.Popen(["sleep", "300"]).pid

    frame = worker.run(start_a_sleeper)
    assert frame.kind is Kind.RESULT
    sleeper = frame.payload
    assert _alive(sleeper)
    worker.proc.send_signal(signal.SIGTERM)
    assert exit_seconds(worker) < 5
    deadline = time.monotonic() + 5
    while _alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(sleeper)


def test_a_sigterm_to_a_process_a_task_forked_leaves_the_worker_running() -> None:
    # multiprocessing forks by default on Linux, and Pool.terminate() sends its children SIGTERM:
    # the worker's own SIGTERM handling must not hear theirs.
    @sky.function
    def fork_and_terminate_a_child() -> int:
        import multiprocessing
        import time as _time

        child = multiprocessing.get_context("fork").Process(target=_time.sleep, args=(30,))
        child.start()
        child.terminate()
        child.join(10)
        _time.sleep(0.5)  # the worker would be leaving by now
        return os.getpid()

    @sky.function
    def pid() -> int:
        return os.getpid()

    with local_pool(1) as compute:
        worker = fork_and_terminate_a_child() >> compute
        time.sleep(0.5)
        assert pid() >> compute == worker
