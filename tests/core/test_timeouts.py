"""Task time limits: where they come from, that they fire on time, and that the slot comes back."""

from __future__ import annotations

import os
import time

import pytest
from core_support import assert_pool_works, busy_loop, pid_alive, wait_until, worker_pid

import skyward as sky

pytestmark = pytest.mark.timeout(60)

#: How late a TimeoutError may be raised after its limit.
SLACK = 2.0


@sky.function
def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@sky.function(timeout=1)
def sleeps_with_a_limit(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@sky.function
def pids() -> tuple[int, int]:
    return os.getpid(), os.getppid()


def timed(call):
    started = time.monotonic()
    try:
        call()
    except TimeoutError as exc:
        return time.monotonic() - started, exc
    raise AssertionError("no TimeoutError")


def test_function_timeout_raises_on_time(fresh_pool) -> None:
    compute = fresh_pool(1)
    elapsed, error = timed(lambda: sleeps_with_a_limit(30) >> compute)
    assert 1 <= elapsed < 1 + SLACK
    assert "sleeps_with_a_limit() did not finish within 1s on node 0" in str(error)
    assert "@sky.function(timeout=...)" in str(error)


def test_per_call_timeout_raises_on_time(fresh_pool) -> None:
    compute = fresh_pool(1)
    elapsed, error = timed(lambda: sleep_for(30).with_timeout(1) >> compute)
    assert 1 <= elapsed < 1 + SLACK
    assert "sleep_for() did not finish within 1s" in str(error)


def test_per_call_timeout_overrides_the_function_timeout(fresh_pool) -> None:
    compute = fresh_pool(1)
    assert sleeps_with_a_limit(1.5).with_timeout(10) >> compute == 1.5


def test_task_within_its_timeout_returns_normally(pool: sky.Pool) -> None:
    assert sleep_for(0.1).with_timeout(5) >> pool == 0.1


def test_default_compute_timeout_shortcut_applies_to_every_task(fresh_pool) -> None:
    compute = fresh_pool(1, default_compute_timeout=1)
    elapsed, _ = timed(lambda: sleep_for(30) >> compute)
    assert 1 <= elapsed < 1 + SLACK


def test_default_compute_timeout_from_options_applies_to_every_task(fresh_pool) -> None:
    compute = fresh_pool(1, options=sky.Options(default_compute_timeout=1, console=False, logging=False))
    elapsed, _ = timed(lambda: (sleep_for(30) > compute).result(timeout=30))
    assert 1 <= elapsed < 1 + SLACK


def test_timeout_fails_a_future_from_gt(pool: sky.Pool) -> None:
    future = busy_loop(30).with_timeout(0.5) > pool
    with pytest.raises(TimeoutError):
        future.result(timeout=30)


def test_task_blocked_in_c_gets_its_worker_replaced_and_later_tasks_run(fresh_pool) -> None:
    compute = fresh_pool(1)
    events: list[sky.Event] = []
    compute.on(sky.NodeLost, events.append)
    before = worker_pid() >> compute
    with pytest.raises(TimeoutError):
        sleep_for(60).with_timeout(1) >> compute
    started = time.monotonic()
    after = worker_pid() >> compute  # waits for the slot: the stuck worker is replaced
    assert time.monotonic() - started < 10
    assert after != before
    assert wait_until(lambda: not pid_alive(before), timeout=5)
    assert [e.node for e in events] == [0]
    assert_pool_works(compute)


@sky.function
def record_then_sleep(path: str, seconds: float) -> str:
    with open(path, "a") as log:
        log.write("run\n")
    time.sleep(seconds)
    return "finished"


def test_stuck_task_lets_the_tasks_beside_it_finish_before_its_worker_is_replaced(
    fresh_pool, tmp_path
) -> None:
    compute = fresh_pool(1, worker=sky.Worker(concurrency=2))
    before = worker_pid() >> compute
    runs = tmp_path / "runs"
    healthy = record_then_sleep(str(runs), 5) > compute  # outlives the timeout and the stuck grace
    with pytest.raises(TimeoutError):
        sleep_for(60).with_timeout(1) >> compute
    assert healthy.result(timeout=30) == "finished"
    assert runs.read_text().split() == ["run"]  # not killed with the worker halfway and run again
    assert worker_pid() >> compute != before  # the stuck worker was replaced once it was drained
    assert wait_until(lambda: not pid_alive(before), timeout=5)
    assert_pool_works(compute)


def test_timed_out_task_that_stops_late_lifts_the_drain_without_a_new_worker(fresh_pool) -> None:
    compute = fresh_pool(1, worker=sky.Worker(concurrency=2))
    before = worker_pid() >> compute
    healthy = sleep_for(6) > compute
    with pytest.raises(TimeoutError):
        sleep_for(4).with_timeout(1) >> compute  # blocked in C past the grace, then returns on its own
    assert healthy.result(timeout=30) == 6
    assert worker_pid() >> compute == before


def test_busy_python_loop_is_cancelled_in_place(fresh_pool) -> None:
    compute = fresh_pool(1)
    before = worker_pid() >> compute
    with pytest.raises(TimeoutError):
        busy_loop(60).with_timeout(1) >> compute
    started = time.monotonic()
    assert worker_pid() >> compute == before  # same worker: the loop was stopped, not the process
    assert time.monotonic() - started < 1.5  # sooner than the grace before a stuck worker is replaced


def test_timeout_with_process_executor_kills_the_task_subprocess(fresh_pool) -> None:
    compute = fresh_pool(1, worker=sky.Worker(executor="process"))
    task_pid, worker = pids() >> compute
    with pytest.raises(TimeoutError):
        sleep_for(60).with_timeout(1) >> compute
    assert wait_until(lambda: not pid_alive(task_pid), timeout=5)
    new_task_pid, same_worker = pids() >> compute
    assert new_task_pid != task_pid
    assert same_worker == worker  # only the subprocess went, not the node's worker


def test_a_long_limit_is_enforced_by_the_once_a_second_sweep(
    fresh_pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skyward.client import deadlines

    # Limits from 1 s up are "long" here, so no per-task timer exists: only the sweep can fire.
    monkeypatch.setattr(deadlines, "COARSE_TIMEOUT", 1.0)
    compute = fresh_pool(1)
    elapsed, error = timed(lambda: sleep_for(30).with_timeout(1) >> compute)
    assert 1 <= elapsed < 1 + deadlines.SWEEP_INTERVAL + SLACK
    assert "sleep_for() did not finish within 1s" in str(error)
    assert_pool_works(compute)
