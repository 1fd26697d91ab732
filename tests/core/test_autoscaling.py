"""Elastic pools: `nodes=(low, high)` grows while tasks wait and gives idle nodes back."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from core_support import local_pool, pid_alive, wait_until, worker_pid

import skyward as sky
from skyward.client.autoscaler import Autoscaler, Load

pytestmark = pytest.mark.timeout(90)

#: Options that make an elastic pool react within a fraction of a second.
QUICK = {"autoscale_cooldown": 0.2, "autoscale_idle_timeout": 0.5}


def load(
    nodes: int = 1, waiting: int = 0, queued: int | None = None, idle_tail: int = 0, slots: int = 1
) -> Load:
    return Load(
        nodes=nodes, waiting=waiting, queued=waiting if queued is None else queued,
        slots_per_node=slots, idle_tail=idle_tail,
    )


# --- the decision -----------------------------------------------------------------------------------


def test_waiting_tasks_add_a_node_per_slot_of_work_up_to_the_ceiling() -> None:
    scaler = Autoscaler(floor=1, ceiling=8, cooldown=30)
    assert scaler.target(load(nodes=2, waiting=3), now=0) == 5
    assert scaler.target(load(nodes=2, waiting=100), now=0) == 8


def test_waiting_tasks_count_every_slot_of_a_new_node() -> None:
    scaler = Autoscaler(floor=1, ceiling=8, cooldown=30)
    assert scaler.target(load(nodes=1, waiting=5, slots=4), now=0) == 3


def test_idle_highest_nodes_are_given_back_down_to_the_floor() -> None:
    scaler = Autoscaler(floor=2, ceiling=8, cooldown=30)
    assert scaler.target(load(nodes=6, idle_tail=1), now=0) == 5
    assert scaler.target(load(nodes=6, idle_tail=6), now=0) == 2


def test_a_pool_with_queued_tasks_does_not_shrink() -> None:
    scaler = Autoscaler(floor=1, ceiling=8, cooldown=30)
    assert scaler.target(load(nodes=4, waiting=0, queued=1, idle_tail=2), now=0) == 4


def test_nothing_changes_within_the_cooldown_of_the_last_change() -> None:
    scaler = Autoscaler(floor=1, ceiling=8, cooldown=30)
    scaler.changed(100)
    assert scaler.target(load(nodes=2, waiting=5), now=120) == 2
    assert scaler.target(load(nodes=2, waiting=5), now=130) == 7


# --- a real elastic pool ------------------------------------------------------------------------------


@sky.function
def wait_for(path: str) -> tuple[int, int]:
    deadline = time.monotonic() + 60
    while not Path(path).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return sky.instance_info().node, os.getpid()


def test_elastic_pool_grows_while_tasks_wait_and_shrinks_back_when_idle(tmp_path: Path) -> None:
    go = tmp_path / "go"
    resized: list[sky.PoolResized] = []
    with local_pool(nodes=(1, 3), options=sky.Options(console=False, logging=False, **QUICK)) as pool:
        pool.on(sky.PoolResized, resized.append)
        assert pool.current_nodes() == 1
        futures = [wait_for(str(go)) > pool for _ in range(6)]
        assert wait_until(lambda: pool.current_nodes() == 3, timeout=30)
        go.touch()
        pids = dict(f.result(timeout=30) for f in futures)
        assert sorted(pids) == [0, 1, 2]  # the waiting tasks ran on the nodes added for them
        assert wait_until(lambda: pool.current_nodes() == 1, timeout=30)
        assert wait_until(lambda: not pid_alive(pids[1]) and not pid_alive(pids[2]), timeout=10)
        assert worker_pid() @ pool == [pids[0]]
        # The shrink is announced once its machines are released, after the workers left the
        # scheduler: a pool closed before that would cancel the announcement with the resize.
        assert wait_until(lambda: bool(resized) and resized[-1].nodes == 1, timeout=30)
    assert resized[0].previous == 1
    assert max(e.nodes for e in resized) == 3
    assert resized[-1].nodes == 1
    assert "waiting" in resized[0].reason and "idle" in resized[-1].reason


def test_a_shrink_cut_off_by_the_pools_exit_still_announces_the_size_it_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skyward.client.fleet import Fleet

    released = asyncio.Event()

    async def slow_release(self: Fleet, instances: list[object]) -> None:
        await released.wait()  # machines that take long to go: the pool exits meanwhile

    monkeypatch.setattr(Fleet, "_give_back", slow_release)
    go = tmp_path / "go"
    resized: list[sky.PoolResized] = []
    with local_pool(nodes=(1, 3), options=sky.Options(console=False, logging=False, **QUICK)) as pool:
        pool.on(sky.PoolResized, resized.append)
        futures = [wait_for(str(go)) > pool for _ in range(6)]
        assert wait_until(lambda: pool.current_nodes() == 3, timeout=30)
        go.touch()
        for future in futures:
            future.result(timeout=30)
        assert wait_until(lambda: pool.current_nodes() < 3, timeout=30)  # the shrink is under way
        assert resized[-1].nodes == 3  # and not announced yet: its first machine is still going
    assert (resized[-1].previous, resized[-1].nodes) == (3, 2)
    assert "idle" in resized[-1].reason


def test_fixed_pool_never_changes_size_under_load(tmp_path: Path) -> None:
    go = tmp_path / "go"
    resized: list[sky.PoolResized] = []
    with local_pool(nodes=1, options=sky.Options(console=False, logging=False, **QUICK)) as pool:
        pool.on(sky.PoolResized, resized.append)
        futures = [wait_for(str(go)) > pool for _ in range(3)]
        time.sleep(1)  # several ticks of a would-be autoscaler
        assert pool.current_nodes() == 1
        go.touch()
        assert [f.result(timeout=30)[0] for f in futures] == [0, 0, 0]
    assert resized == []


def test_manual_resize_is_reported_as_an_event() -> None:
    resized: list[sky.PoolResized] = []
    with local_pool(1) as pool:
        pool.on(sky.PoolResized, resized.append)
        pool.resize(2)
        pool.resize(1)
    changes = [(e.previous, e.nodes, e.reason) for e in resized]
    assert changes == [(1, 2, "pool.resize()"), (2, 1, "pool.resize()")]


def test_tasks_pinned_to_a_node_that_a_resize_removes_fail_at_once_naming_why(tmp_path: Path) -> None:
    never = str(tmp_path / "never")
    started: list[sky.TaskStarted] = []
    options = sky.Options(console=False, logging=False, default_compute_timeout=120)
    with local_pool(2, options=options) as pool:
        pool.on(sky.TaskStarted, started.append)
        running = pool.run_async(wait_for(never), target=1)
        assert wait_until(lambda: [e.node for e in started] == [1], timeout=30)
        queued = pool.run_async(wait_for(never), target=1)  # waits for the busy node
        pool.resize(1)
        for future in (running, queued):
            why = "pinned to node 1, which left the pool when it was resized to 1 node"
            with pytest.raises(sky.NodeLostError, match=why):
                future.result(timeout=30)  # not after the two-minute time limit
        assert worker_pid() @ pool == [worker_pid() >> pool]  # the pool keeps working
