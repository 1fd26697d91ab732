"""Many tasks on many nodes at once: no update is lost, a lock excludes, a barrier gathers every
node, a queue keeps its order across nodes, and waiting never holds up the client."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from collection_pools import EXECUTORS, wait_until
from collections_support import (
    acquire_within,
    critical_section,
    get_n,
    hold_lock_and_sleep,
    increment_many,
    meet_at_barrier,
    put_all,
    read_counter,
)

import skyward as sky

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_no_strong_increment_is_lost_across_many_tasks_and_nodes(
    fresh_pool, name: str, executor: str
) -> None:
    pool = fresh_pool(4, executor, worker=sky.Worker(executor=executor, concurrency=2))
    sky.gather(*(increment_many(name, 50) for _ in range(16))) >> pool
    assert pool.run(read_counter(name)) == 16 * 50


@pytest.mark.parametrize("executor", EXECUTORS)
def test_eventual_increments_all_arrive_once_their_tasks_returned(
    fresh_pool, name: str, executor: str
) -> None:
    pool = fresh_pool(2, executor, worker=sky.Worker(executor=executor, concurrency=2))
    sky.gather(*(increment_many(name, 300, "eventual") for _ in range(4))) >> pool
    assert pool.run(read_counter(name)) == 4 * 300


def test_a_lock_lets_one_task_at_a_time_into_its_critical_section(fresh_pool, name: str) -> None:
    pool = fresh_pool(3, worker=sky.Worker(concurrency=2))
    overlaps = sky.gather(*(critical_section(name, 5, 0.002) for _ in range(6))) >> pool
    assert max(overlaps) == 0


def test_the_overlap_detector_sees_overlaps_without_the_lock(fresh_pool, name: str) -> None:
    pool = fresh_pool(3, worker=sky.Worker(concurrency=2))
    overlaps = sky.gather(*(critical_section(name, 5, 0.01, False) for _ in range(6))) >> pool
    assert max(overlaps) > 0  # the detector works: what the test above proves is the lock's doing


def test_a_barrier_gathers_every_node_before_any_goes_on(fresh_pool, name: str) -> None:
    pool = fresh_pool(4)
    seen = meet_at_barrier(name, 4) @ pool
    assert sorted(node for node, _, _ in seen) == [0, 1, 2, 3]
    assert sorted(index for _, index, _ in seen) == [0, 1, 2, 3]
    assert all(arrived == 4 for _, _, arrived in seen)


def test_a_queue_is_first_in_first_out_across_nodes(pool: sky.Pool, name: str) -> None:
    items = [("item", i) for i in range(40)]
    assert pool.run(put_all(name, items), target=0) == 0
    assert pool.run(get_n(name, 40, 5), target=1) == (1, items)


def test_a_get_waits_for_an_item_another_node_puts_later(pool: sky.Pool, name: str) -> None:
    waiting = pool.run_async(get_n(name, 1, 30), target=0)
    time.sleep(0.3)
    assert not waiting.done()
    assert pool.run(put_all(name, ["late"]), target=1) == 1  # the client's loop serves others meanwhile
    assert waiting.result(timeout=10) == (0, ["late"])


def test_a_lock_acquire_times_out_naming_the_holder(fresh_pool, name: str, tmp_path: Path) -> None:
    pool = fresh_pool(2)
    marker = tmp_path / "holder"
    holder = pool.run_async(hold_lock_and_sleep(name, str(marker), 3), target=0)
    assert wait_until(marker.exists)
    with pytest.raises(sky.LockTimeoutError, match=r"within 0.3s: it is held by node 0"):
        pool.run(acquire_within(name, 0.3), target=1)
    holder.cancel()
