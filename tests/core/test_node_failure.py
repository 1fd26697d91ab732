"""A worker process that dies mid-task: the task is retried on a replacement, or fails by name."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from core_support import assert_pool_works, node_index, pid_alive, wait_until, worker_pid

import skyward as sky

pytestmark = pytest.mark.timeout(60)


def announce_pid(path: str) -> None:
    """Write this process's pid to `path` atomically: a reader never sees a half-written file."""
    Path(path + ".tmp").write_text(str(os.getpid()))
    os.replace(path + ".tmp", path)


@sky.function
def write_pid_then_sleep(path: str, seconds: float) -> int:
    """Announce which worker runs this attempt, then stay in flight for a while."""
    announce_pid(path)
    time.sleep(seconds)
    return os.getpid()


def kill_the_worker_running(path: Path) -> int:
    """Wait until the task has started, then SIGKILL the worker process that runs it."""
    assert wait_until(path.exists, timeout=10), "the task never started"
    pid = int(path.read_text())
    os.kill(pid, signal.SIGKILL)
    return pid


def test_task_on_a_killed_worker_is_retried_and_succeeds(fresh_pool, tmp_path: Path) -> None:
    compute = fresh_pool(2)
    lost: list[sky.NodeLost] = []
    retried: list[sky.TaskRetried] = []
    compute.on(sky.NodeLost, lost.append)
    compute.on(sky.TaskRetried, retried.append)
    marker = tmp_path / "pid"
    future = compute.run_async(write_pid_then_sleep(str(marker), 1.0), target=0)
    killed = kill_the_worker_running(marker)
    started = time.monotonic()
    finished_on = future.result(timeout=30)
    assert time.monotonic() - started < 10
    assert finished_on != killed
    assert not pid_alive(killed)
    assert [e.node for e in lost] == [0]
    assert [(e.name, e.node, e.attempt) for e in retried] == [("write_pid_then_sleep", 0, 1)]


def test_killed_worker_is_replaced_with_a_new_process(fresh_pool, tmp_path: Path) -> None:
    compute = fresh_pool(2)
    replaced: list[sky.InstanceReplaced] = []
    compute.on(sky.InstanceReplaced, replaced.append)
    before = worker_pid() @ compute
    os.kill(before[0], signal.SIGKILL)
    assert wait_until(lambda: replaced, timeout=10), "node 0 was not replaced"
    assert compute.current_nodes() == 2
    after = worker_pid() @ compute
    assert after[0] not in before
    assert after[1] == before[1]  # the healthy node was left alone
    assert_pool_works(compute)


def test_idle_worker_killed_is_replaced_before_the_next_task_needs_it(fresh_pool) -> None:
    compute = fresh_pool(1)
    ready: list[sky.NodeReady] = []
    compute.on(sky.NodeReady, ready.append)
    before = worker_pid() >> compute
    os.kill(before, signal.SIGKILL)
    assert wait_until(lambda: ready, timeout=10)
    assert worker_pid() >> compute != before


def test_without_retries_a_lost_task_fails_with_node_lost_error(fresh_pool, tmp_path: Path) -> None:
    compute = fresh_pool(2, retry_on_interruption=0)
    marker = tmp_path / "pid"
    future = compute.run_async(write_pid_then_sleep(str(marker), 5.0), target=1)
    kill_the_worker_running(marker)
    with pytest.raises(sky.NodeLostError) as caught:
        future.result(timeout=30)
    message = str(caught.value)
    assert "Node 1 was lost while running write_pid_then_sleep()" in message
    assert "(task " in message
    assert "retry_on_interruption" in message
    assert wait_until(lambda: compute.current_nodes() == 2, timeout=10)
    assert_pool_works(compute)


def test_streaming_task_on_a_killed_worker_is_not_replayed(fresh_pool, tmp_path: Path) -> None:
    compute = fresh_pool(1)
    marker = tmp_path / "pid"

    @sky.function
    def announce_then_stream(path: str):
        yield 0
        announce_pid(path)
        time.sleep(30)
        yield 1

    items = announce_then_stream(str(marker)) >> compute
    assert next(items) == 0
    kill_the_worker_running(marker)
    with pytest.raises(sky.NodeLostError, match="it streams data, so it cannot be replayed"):
        next(items)
    assert_pool_works(compute)


class _FailsToReconnect(sky.Local):
    """Local nodes that start once; a replacement for a lost node cannot be had."""

    def create(self, options=None):  # type: ignore[override]
        from skyward.providers.local import LocalProvider

        class Provider(LocalProvider):
            started: set[int] = set()

            async def connect(self, cluster, instance, setup):  # type: ignore[override]
                if instance.node in self.started:
                    raise RuntimeError("no capacity for a replacement")
                self.started.add(instance.node)
                return await super().connect(cluster, instance, setup)

        return Provider(options)


def test_a_node_that_cannot_be_replaced_leaves_the_pool_and_broadcasts_skip_it() -> None:
    with sky.Compute(provider=_FailsToReconnect(), nodes=2, console=False) as pool:
        pids = worker_pid() @ pool
        os.kill(pids[1], signal.SIGKILL)
        wait_until(lambda: pool.current_nodes() == 1 and len(pool._fleet.node_indices()) == 1, timeout=10)
        assert node_index() @ pool == [0]
