"""`sky.Worker(executor="process")`: tasks run in subprocesses of the node's worker."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from core_support import is_worker_of_this_process, local_pool, pid_alive

import skyward as sky

pytestmark = pytest.mark.timeout(60)


@sky.function
def pids() -> tuple[int, int]:
    return os.getpid(), os.getppid()


@sky.function
def where() -> tuple[int, int, str | None]:
    info = sky.instance_info()
    return info.node, info.total_nodes, os.environ.get("PROCESS_EXECUTOR_MARK")


@sky.function
def fail() -> None:
    raise LookupError("from a subprocess")


@sky.function
def counter() -> Iterator[int]:
    yield 1


@pytest.fixture(scope="module")
def process_pool() -> Iterator[sky.Pool]:
    compute = local_pool(
        1, worker=sky.Worker(executor="process"), image=sky.Image(env={"PROCESS_EXECUTOR_MARK": "set"})
    )
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()


def test_process_executor_runs_tasks_in_a_subprocess_of_the_worker(process_pool: sky.Pool) -> None:
    task, worker = pids() >> process_pool
    assert task != worker
    assert worker != os.getpid()
    assert is_worker_of_this_process(worker)  # the task is the worker's child


def test_thread_executor_runs_tasks_in_the_worker_itself(pool: sky.Pool) -> None:
    task, _ = pids() >> pool
    assert is_worker_of_this_process(task)


def test_process_executor_reuses_its_subprocess_by_default(process_pool: sky.Pool) -> None:
    first, _ = pids() >> process_pool
    second, _ = pids() >> process_pool
    assert first == second


def test_process_executor_without_reuse_starts_a_fresh_subprocess_per_task() -> None:
    with local_pool(1, worker=sky.Worker(executor="process", reuse_processes=False)) as compute:
        seen = [pids() >> compute for _ in range(3)]
    task_pids = [task for task, _ in seen]
    assert len(set(task_pids)) == 3
    assert len({worker for _, worker in seen}) == 1
    assert not any(pid_alive(p) for p in task_pids)


def test_process_executor_subprocess_sees_instance_info_and_env(process_pool: sky.Pool) -> None:
    assert where() >> process_pool == (0, 1, "set")


def test_process_executor_reports_remote_errors(process_pool: sky.Pool) -> None:
    with pytest.raises(LookupError) as caught:
        fail() >> process_pool
    assert str(caught.value) == "from a subprocess"
    assert "in fail" in caught.value.__notes__[0]


def test_generator_with_process_executor_fails_before_dispatch(process_pool: sky.Pool) -> None:
    started: list[str] = []
    unsubscribe = process_pool.on(sky.TaskStarted, lambda event: started.append(event.name))
    try:
        with pytest.raises(sky.ConfigurationError, match=r"counter\(\) is a generator.*executor='thread'"):
            counter() >> process_pool
        pids() >> process_pool  # any event of the bad call would have come before this one's
    finally:
        unsubscribe()
    assert started == ["pids"]
