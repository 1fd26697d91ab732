"""Dispatch: `>>`, `@`, `&`, `>`, `gather`, `>> sky`, `pool.run/map/resize`, the older names, worker slots."""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
import types
from collections.abc import Callable
from typing import Any

import pytest
from core_support import assert_pool_works, local_pool, node_index, pid_alive, worker_pid

import skyward as sky

pytestmark = pytest.mark.timeout(60)


@sky.function
def add(a: int, b: int) -> int:
    return a + b


@sky.function
def nap(seconds: float, label: str) -> str:
    time.sleep(seconds)
    return label


@sky.function
def interval(seconds: float) -> tuple[float, float]:
    start = time.time()
    time.sleep(seconds)
    return start, time.time()


@sky.function
def increment(x: int) -> int:
    return x + 1


def square_after(x: int) -> int:
    """Not decorated: `pool.map` wraps it. Sleeps longest for the first items, so order is earned."""
    time.sleep(0.02 * x)
    return x * x


# --- >>, @, &, >


def test_rshift_round_robin_alternates_nodes(pool: sky.Pool) -> None:
    nodes = [node_index() >> pool for _ in range(6)]
    assert set(nodes) == {0, 1}
    assert all(a != b for a, b in zip(nodes, nodes[1:], strict=False))


def test_rshift_returns_the_functions_value(pool: sky.Pool) -> None:
    assert add(2, 3) >> pool == 5


def test_broadcast_returns_one_result_per_node_in_node_order(pool: sky.Pool) -> None:
    assert node_index() @ pool == [0, 1]


def test_broadcast_runs_on_distinct_worker_processes(pool: sky.Pool) -> None:
    pids = worker_pid() @ pool
    assert len(set(pids)) == 2
    assert os.getpid() not in pids


def test_and_group_returns_a_tuple_in_call_order(pool: sky.Pool) -> None:
    result = (add(1, 2) & add(3, 4) & add(5, 6)) >> pool
    assert result == (3, 7, 11)
    assert isinstance(result, tuple)


def test_and_group_cannot_be_broadcast(pool: sky.Pool) -> None:
    with pytest.raises(TypeError, match="broadcast one call with @"):
        (add(1, 2) & add(3, 4)) @ pool


def test_gt_returns_a_concurrent_future(pool: sky.Pool) -> None:
    future = add(20, 22) > pool
    assert isinstance(future, concurrent.futures.Future)
    assert future.result(timeout=30) == 42


def test_gt_does_not_block_the_caller(pool: sky.Pool) -> None:
    future = nap(0.5, "done") > pool
    assert not future.done()
    assert future.result(timeout=30) == "done"


# --- gather


def test_gather_without_stream_returns_a_tuple(pool: sky.Pool) -> None:
    result = sky.gather(add(1, 1), add(2, 2), add(3, 3)) >> pool
    assert result == (2, 4, 6)
    assert isinstance(result, tuple)


def test_gather_stream_yields_in_submission_order(pool: sky.Pool) -> None:
    results = sky.gather(nap(0.4, "slow"), nap(0.0, "fast"), stream=True) >> pool
    assert isinstance(results, types.GeneratorType)
    assert list(results) == ["slow", "fast"]


def test_gather_stream_unordered_yields_as_completed(pool: sky.Pool) -> None:
    results = sky.gather(nap(0.6, "slow"), nap(0.0, "fast"), stream=True, ordered=False) >> pool
    assert list(results) == ["fast", "slow"]


def test_gather_rejects_what_is_not_a_pending_call() -> None:
    with pytest.raises(TypeError, match="gather"):
        sky.gather(add)  # type: ignore[arg-type]


# --- >> sky: the active pool


def test_rshift_sky_dispatches_to_the_active_pool() -> None:
    with local_pool(1) as compute:
        assert add(1, 2) >> sky == 3
        assert node_index() @ sky == [0]
        assert (add(1, 1) > sky).result(timeout=30) == 2
        assert sky.gather(add(1, 1), add(2, 2)) >> sky == (2, 4)
        assert compute.current_nodes() == 1


def test_rshift_sky_outside_a_pool_raises_no_active_pool_error() -> None:
    with pytest.raises(sky.NoActivePoolError, match=r"inside `with sky.Compute\(...\) as pool:`"):
        add(1, 2) >> sky


def test_rshift_sky_after_the_pool_block_raises_no_active_pool_error() -> None:
    with local_pool(1):
        pass
    with pytest.raises(sky.NoActivePoolError):
        add(1, 2) >> sky


def test_active_pool_is_visible_from_threads_started_in_the_block() -> None:
    results: list[int] = []
    with local_pool(1):
        thread = threading.Thread(target=lambda: results.append(add(2, 2) >> sky))
        thread.start()
        thread.join(timeout=30)
    assert results == [4]


def test_pool_decorator_opens_a_pool_for_the_call() -> None:
    @sky.pool(provider=sky.Local(), nodes=2, console=False, logging=False)
    def job(x: int) -> tuple[int, list[int]]:
        return add(x, 1) >> sky, node_index() @ sky

    assert job(41) == (42, [0, 1])
    with pytest.raises(sky.NoActivePoolError):
        add(1, 2) >> sky


def test_rshift_to_something_that_is_not_a_pool_says_what_is_expected() -> None:
    with pytest.raises(TypeError, match="right-hand side of >>"):
        add(1, 2) >> 42


def undecorated(x: int) -> int:
    """Not marked @sky.function: calling it runs it here and returns its result."""
    return x * 2


@pytest.mark.parametrize(
    ("op", "dispatch"),
    [
        (">>", lambda pool: undecorated(1) >> pool),
        ("@", lambda pool: undecorated(1) @ pool),
        (">", lambda pool: undecorated(1) > pool),
    ],
)
def test_dispatching_the_result_of_an_undecorated_function_says_to_mark_it(
    pool: sky.Pool, op: str, dispatch: Callable[[sky.Pool], Any]
) -> None:
    with pytest.raises(TypeError) as caught:
        dispatch(pool)
    message = str(caught.value)
    assert "unsupported operand" not in message
    assert "its left side is 2 (int), not such a call" in message
    assert f"decorate it with @sky.function, and f(...) {op} pool then dispatches the call" in message


def test_dispatching_none_says_to_mark_the_function(pool: sky.Pool) -> None:
    with pytest.raises(TypeError, match=r"left side is None \(NoneType\).*@sky\.function"):
        print("ran here") >> pool  # type: ignore[operator]


def test_dispatching_a_list_of_calls_says_to_gather_them(pool: sky.Pool) -> None:
    with pytest.raises(TypeError, match=r"not a list of calls: .*sky\.gather\(\*calls\) >> pool"):
        [add(1, 2), add(3, 4)] >> pool  # type: ignore[operator]


def test_pools_still_compare_by_identity(pool: sky.Pool) -> None:
    other = local_pool(1)
    assert pool == pool and pool != other and len({pool, other}) == 2


# --- pool methods


def test_run_with_target_head_runs_on_node_zero(pool: sky.Pool) -> None:
    assert [pool.run(node_index(), target="head") for _ in range(3)] == [0, 0, 0]


def test_run_with_a_node_index_runs_on_that_node(pool: sky.Pool) -> None:
    assert [pool.run(node_index(), target=1) for _ in range(3)] == [1, 1, 1]


def test_run_async_with_target_returns_a_future_from_that_node(pool: sky.Pool) -> None:
    assert pool.run_async(node_index(), target=1).result(timeout=30) == 1


def test_run_with_an_unknown_node_index_names_the_nodes(pool: sky.Pool) -> None:
    with pytest.raises(sky.ConfigurationError, match=r"target=5: this pool has nodes \[0, 1\]"):
        pool.run(node_index(), target=5)


def test_run_with_an_unknown_target_name_lists_the_choices(pool: sky.Pool) -> None:
    with pytest.raises(sky.ConfigurationError, match=r"'tail'.*'head' or a node index"):
        pool.run(node_index(), target="tail")


def test_map_takes_an_undecorated_function_and_keeps_input_order(pool: sky.Pool) -> None:
    items = [5, 4, 3, 2, 1, 0]
    assert pool.map(square_after, items) == [25, 16, 9, 4, 1, 0]


def test_map_spreads_items_over_the_nodes(pool: sky.Pool) -> None:
    def where(_: int) -> int:
        return sky.instance_info().node

    assert set(pool.map(where, range(6))) == {0, 1}


def test_map_accepts_a_decorated_function(pool: sky.Pool) -> None:
    assert pool.map(increment, [1, 2, 3]) == [2, 3, 4]


def test_current_nodes_counts_ready_nodes(pool: sky.Pool) -> None:
    assert pool.current_nodes() == 2


def test_run_rejects_a_function_that_was_not_called(pool: sky.Pool) -> None:
    with pytest.raises(TypeError, match=r"call it, e.g. `train\(data\) >> pool`"):
        pool.run(add)  # type: ignore[arg-type]


# --- running locally


def test_function_local_runs_in_this_process() -> None:
    assert worker_pid.local() == os.getpid()
    assert add.local(2, 5) == 7


def test_pending_local_runs_the_snapshot_in_this_process() -> None:
    pending = add(3, 4)
    assert pending.local() == 7
    assert worker_pid().local() == os.getpid()


def test_calling_a_function_runs_nothing() -> None:
    ran: list[int] = []

    @sky.function
    def record() -> None:
        ran.append(1)

    pending = record()
    assert isinstance(pending, sky.PendingFunction)
    assert ran == []


# --- timeouts on the pending value (their effect is in test_timeouts.py)


def test_function_timeout_is_carried_by_each_call() -> None:
    @sky.function(timeout=5)
    def limited() -> None: ...

    assert limited().timeout == 5


def test_with_timeout_returns_a_new_pending_and_leaves_the_original() -> None:
    pending = add(1, 2)
    limited = pending.with_timeout(7)
    assert (pending.timeout, limited.timeout) == (None, 7)
    assert (limited.args, limited.fn) == (pending.args, pending.fn)


@pytest.mark.parametrize("timeout", [0, -1, "10"])
def test_a_non_positive_timeout_is_rejected(timeout: object) -> None:
    with pytest.raises(sky.ConfigurationError, match="positive number of seconds"):
        sky.function(timeout=timeout)(lambda: None)  # type: ignore[arg-type]


# --- older names and other pool shapes


def test_compute_is_the_older_name_of_function(pool: sky.Pool) -> None:
    @sky.compute
    def double(x: int) -> int:
        return 2 * x

    pending = double(21)
    assert isinstance(pending, sky.PendingCompute)
    assert sky.PendingCompute is sky.PendingFunction
    assert pending >> pool == 42


def test_compute_pool_takes_worker_and_on_event() -> None:
    events: list[sky.Event] = []
    with sky.ComputePool(
        provider=sky.Local(),
        nodes=1,
        console=False,
        logging=False,
        worker=sky.Worker(concurrency=2),
        on_event=events.append,
    ) as compute:
        assert compute.worker.concurrency == 2
        assert add(1, 2) >> compute == 3
    kinds = {type(e) for e in events}
    expected = {sky.ClusterReady, sky.NodeReady, sky.TaskStarted, sky.TaskCompleted, sky.ClusterDestroyed}
    assert expected <= kinds
    completed = [e for e in events if isinstance(e, sky.TaskCompleted)]
    assert [(e.name, e.success) for e in completed] == [("add", True)]


def test_worker_concurrency_two_runs_two_tasks_at_once_on_one_node() -> None:
    with local_pool(1, worker=sky.Worker(concurrency=2)) as compute:
        (a_start, a_end), (b_start, b_end) = (interval(0.5) & interval(0.5)) >> compute
    assert max(a_start, b_start) < min(a_end, b_end)


def test_worker_concurrency_one_runs_tasks_one_after_another_on_one_node() -> None:
    with local_pool(1) as compute:
        first, second = sorted((interval(0.2) & interval(0.2)) >> compute)
    assert second[0] >= first[1]


def test_multipool_starts_pools_that_each_run_tasks() -> None:
    one, two = local_pool(1), local_pool(2)
    with sky.MultiPool(one, two) as (a, b):
        assert (a, b) == (one, two)
        assert node_index() @ a == [0]
        assert node_index() @ b == [0, 1]
        assert set(worker_pid() @ a).isdisjoint(worker_pid() @ b)
    with pytest.raises(sky.PoolClosedError):
        add(1, 2) >> a


def test_session_runs_several_pools_on_one_loop_and_closes_them() -> None:
    with sky.Session() as session:
        a = session.compute(provider=sky.Local(), nodes=1, console=False, logging=False)
        b = session.compute(provider=sky.Local(), nodes=1, console=False, logging=False)
        assert (add(1, 2) >> a, add(3, 4) >> b) == (3, 7)
        assert worker_pid() >> a != worker_pid() >> b
    for closed in (a, b):
        with pytest.raises(sky.PoolClosedError):
            add(1, 2) >> closed


def test_resize_grows_and_shrinks_the_pool(fresh_pool) -> None:
    compute = fresh_pool(1)
    compute.resize(3)
    assert compute.current_nodes() == 3
    assert node_index() @ compute == [0, 1, 2]
    pids = worker_pid() @ compute
    compute.resize(sky.Nodes(desired=1))
    assert compute.current_nodes() == 1
    assert node_index() @ compute == [0]
    assert_pool_works(compute)
    assert [pid_alive(p) for p in pids] == [True, False, False]


@sky.function
def place_and_shard(data: list[int]) -> tuple[int, int, int, list[int]]:
    info = sky.instance_info()
    return info.node, info.total_nodes, len(info.peers), sky.shard(data)


@pytest.mark.parametrize(
    ("before", "after", "executor"), [(2, 4, "thread"), (4, 2, "thread"), (2, 3, "process")]
)
def test_after_a_resize_every_node_knows_its_new_place_and_shards_do_not_overlap(
    fresh_pool, before: int, after: int, executor: str
) -> None:
    compute = fresh_pool(before, worker=sky.Worker(executor=executor))
    place_and_shard([0]) @ compute  # the workers have run a task in their first place
    compute.resize(after)
    places = place_and_shard(list(range(8))) @ compute
    seen = [(node, total, peers) for node, total, peers, _ in places]
    assert seen == [(i, after, after) for i in range(after)]
    assert sorted(item for *_, part in places for item in part) == list(range(8))


def test_cancelling_an_async_future_leaves_its_node_and_the_other_tasks_alone() -> None:
    with local_pool(1) as pool:
        before = worker_pid() >> pool
        running = nap(1.0, "kept") > pool
        queued = nap(0.1, "dropped") > pool  # waits behind the first on the one node
        assert queued.cancel()
        assert running.result(timeout=30) == "kept"
        assert queued.cancelled()
        assert worker_pid() >> pool == before  # the node was not lost over it


def test_waiting_for_a_task_on_the_pools_own_loop_is_refused_with_the_fix() -> None:
    refused: list[str] = []

    def handler(event: sky.TaskCompleted) -> None:
        if not refused:
            try:
                add(1, 1) >> pool
            except RuntimeError as exc:
                refused.append(str(exc))

    with local_pool(1) as pool:
        pool.on(sky.TaskCompleted, handler)
        assert (add(1, 2) > pool).result(timeout=30) == 3  # its answer, and the event, come on the loop
        assert add(2, 2) >> pool == 4  # the pool goes on
    assert refused and "own event loop" in refused[0] and "pool.run_async" in refused[0]
