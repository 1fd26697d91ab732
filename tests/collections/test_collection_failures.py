"""A node lost while it holds a lock, or takes part in a barrier: the lock is released and the
barrier fails its waiters naming the node, instead of everyone waiting for ever."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from collection_pools import EXECUTORS, wait_until
from collections_support import (
    acquire_within,
    get_n,
    hold_lock_and_return,
    hold_lock_and_sleep,
    join_barrier_and_sleep,
    put_all,
    wait_at_barrier,
)

import skyward as sky

pytestmark = pytest.mark.timeout(120)


def kill_the_worker_running(marker: Path) -> int:
    """Wait until the task wrote its process id, then SIGKILL that process (the node's worker, or
    with executor="process" its task subprocess's worker: the parent of the subprocess)."""
    assert wait_until(marker.exists), "the task never started"
    pid = int(marker.read_text())
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        if b"multiprocessing" in f.read():  # a task subprocess: kill the worker that runs it
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    os.kill(pid, signal.SIGKILL)
    return pid


def replacements(pool: sky.Pool) -> list[sky.InstanceReplaced]:
    """The nodes the pool replaced (a test waits for it, so the pool never stops mid-replacement)."""
    replaced: list[sky.InstanceReplaced] = []
    pool.on(sky.InstanceReplaced, replaced.append)
    return replaced


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_lock_held_by_a_lost_node_is_released(fresh_pool, name: str, tmp_path: Path, executor: str) -> None:
    pool = fresh_pool(2, executor, retry_on_interruption=0)
    replaced = replacements(pool)
    marker = tmp_path / "holder"
    holder = pool.run_async(hold_lock_and_sleep(name, str(marker), 60), target=1)
    kill_the_worker_running(marker)
    got, waited = pool.run(acquire_within(name, 30), target=0)
    assert got and waited < 10
    with pytest.raises(sky.NodeLostError):
        holder.result(timeout=10)
    assert wait_until(lambda: replaced, timeout=30)  # the pool is whole again before it stops


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_barrier_whose_participant_is_lost_fails_the_others_naming_it(
    fresh_pool, name: str, tmp_path: Path, executor: str
) -> None:
    pool = fresh_pool(2, executor, retry_on_interruption=0)
    replaced = replacements(pool)
    marker = tmp_path / "participant"
    pool.run_async(join_barrier_and_sleep(name, 2, str(marker), 60), target=1)
    waiter = pool.run_async(wait_at_barrier(name, 2), target=0)
    kill_the_worker_running(marker)
    message = waiter.result(timeout=30)
    assert "node 1" in message and "lost" in message and name in message
    assert pool.run(wait_at_barrier(name, 2), target=0) == message  # broken for good: no one waits
    assert wait_until(lambda: replaced, timeout=30)


def test_a_lock_its_task_left_held_is_released_when_the_task_ends(fresh_pool, name: str) -> None:
    pool = fresh_pool(2)
    assert pool.run(hold_lock_and_return(name), target=1)
    got, waited = pool.run(acquire_within(name, 5), target=0)
    assert got and waited < 2


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_get_given_up_by_a_timed_out_task_takes_no_item(fresh_pool, name: str, executor: str) -> None:
    pool = fresh_pool(2, executor)
    with pytest.raises(TimeoutError):
        pool.run(get_n(name, 1).with_timeout(0.5), target=0)
    time.sleep(0.5)  # the task's wait is interrupted, and the store told, within a poll
    pool.run(put_all(name, ["kept"]), target=1)
    assert pool.run(get_n(name, 1, 5), target=1) == (1, ["kept"])


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_lock_wait_given_up_by_a_timed_out_task_is_not_granted(
    fresh_pool, name: str, tmp_path: Path, executor: str
) -> None:
    pool = fresh_pool(2, executor, worker=sky.Worker(executor=executor, concurrency=2))
    marker = tmp_path / "holder"
    pool.run_async(hold_lock_and_sleep(name, str(marker), 1.5), target=0)
    assert wait_until(marker.exists)
    with pytest.raises(TimeoutError):
        pool.run(acquire_within(name, 30).with_timeout(0.5), target=1)
    got, waited = pool.run(acquire_within(name, 10), target=1)  # the holder's task ends: it is freed
    assert got and waited < 5
