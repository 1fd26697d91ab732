"""`Worker(executor="process")`: a task whose subprocess dies fails with a `TaskProcessError` saying
how it died (exit code or signal), the node keeps serving, and a timeout is still a `TimeoutError`."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future

import cloudpickle
import pytest
from core_support import local_pool, wait_until

import skyward as sky
from skyward.errors import SkywardError, TaskProcessError
from skyward.messages import function_key
from skyward.worker.processes import ProcessSlots, TaskCancelled

pytestmark = pytest.mark.timeout(60)


@sky.function
def exit_hard(code: int) -> None:
    os._exit(code)


@sky.function
def kill_self(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(30)  # the signal arrives first; never reached


@sky.function
def pids() -> tuple[int, int]:
    return os.getpid(), os.getppid()


@sky.function
def sleep_for(seconds: float) -> str:
    time.sleep(seconds)
    return "woke"


@pytest.fixture(scope="module", params=[True, False], ids=["reused", "fresh-per-task"])
def process_pool(request: pytest.FixtureRequest) -> Iterator[sky.Pool]:
    compute = local_pool(1, worker=sky.Worker(executor="process", reuse_processes=request.param))
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()


def test_a_subprocess_that_exits_fails_its_task_with_the_exit_code(process_pool: sky.Pool) -> None:
    with pytest.raises(TaskProcessError, match="exited with code 7") as caught:
        exit_hard(7) >> process_pool
    assert caught.value.exitcode == 7
    assert isinstance(caught.value, SkywardError) and isinstance(caught.value, Exception)
    assert sky.TaskProcessError is TaskProcessError


def test_a_subprocess_killed_by_a_signal_names_the_signal(process_pool: sky.Pool) -> None:
    with pytest.raises(TaskProcessError, match=r"killed by signal SIGKILL \(9\)") as caught:
        kill_self(signal.SIGKILL) >> process_pool
    assert caught.value.exitcode == -signal.SIGKILL
    assert "out-of-memory" in str(caught.value)


def test_a_segfault_is_reported_as_a_crash_in_native_code(process_pool: sky.Pool) -> None:
    with pytest.raises(TaskProcessError, match="SIGSEGV.*native code"):
        kill_self(signal.SIGSEGV) >> process_pool


def test_the_node_keeps_serving_after_a_subprocess_dies(process_pool: sky.Pool) -> None:
    _, worker_before = pids() >> process_pool
    with pytest.raises(TaskProcessError):
        exit_hard(3) >> process_pool
    task, worker_after = pids() >> process_pool
    assert worker_after == worker_before  # the node's worker stayed; only the subprocess went
    assert task != worker_after


def test_a_crash_among_other_tasks_fails_only_its_own() -> None:
    with local_pool(1, worker=sky.Worker(executor="process", concurrency=2)) as compute:
        futures = [exit_hard(5) > compute, pids() > compute, pids() > compute]
        with pytest.raises(TaskProcessError, match="code 5"):
            futures[0].result()
        assert all(isinstance(f.result(), tuple) for f in futures[1:])


def test_a_timeout_is_still_a_timeout_not_a_crash(fresh_pool: Callable[..., sky.Pool]) -> None:
    compute = fresh_pool(1, worker=sky.Worker(executor="process"))
    with pytest.raises(TimeoutError):
        sleep_for(30).with_timeout(0.5) >> compute
    assert sleep_for(0) >> compute == "woke"


# -- the slots themselves: a cancel (this worker killing the child) is not a crash -----------------


def _sleep_forever() -> None:
    time.sleep(60)


def _exit_nine() -> None:
    os._exit(9)


def _run_in_slot(slots: ProcessSlots, task_id: int, fn: Callable[[], None]) -> Future[tuple[bool, object]]:
    data = cloudpickle.dumps(fn)
    work = cloudpickle.dumps((function_key(data), data, (), {}, None), protocol=5)
    future: Future[tuple[bool, object]] = Future()

    def run() -> None:
        try:
            future.set_result(slots.run(task_id, work))
        except BaseException as exc:  # noqa: BLE001 - TaskCancelled is a BaseException
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


@pytest.fixture
def slots() -> Iterator[ProcessSlots]:
    created = ProcessSlots(1, True, cloudpickle.dumps(({}, None, (), list(sys.path), ())))
    try:
        yield created
    finally:
        created.close()


def test_a_cancelled_subprocess_still_stops_its_task_with_task_cancelled(slots: ProcessSlots) -> None:
    future = _run_in_slot(slots, 1, _sleep_forever)
    assert wait_until(lambda: slots.cancel(1), timeout=30)  # once the slot has the task
    with pytest.raises(TaskCancelled):
        future.result(timeout=30)


def test_a_subprocess_dying_on_its_own_is_a_task_process_error(slots: ProcessSlots) -> None:
    with pytest.raises(TaskProcessError, match="exited with code 9"):
        _run_in_slot(slots, 2, _exit_nine).result(timeout=30)
