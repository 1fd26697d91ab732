"""`instance_info()` is the worker's place in the pool: set once per process, overridable per context."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from skyward.errors import NoActivePoolError
from skyward.task import runtime
from skyward.task.instance import InstanceInfo


@pytest.fixture(autouse=True)
def _no_instance_info() -> Iterator[None]:
    """Every test starts and ends off a pool, so no test sees another's node."""
    runtime.set_instance_info(None)
    yield
    runtime.set_instance_info(None)


def test_instance_info_off_a_pool_raises_no_active_pool_error() -> None:
    with pytest.raises(NoActivePoolError, match=r"@sky\.function"):
        runtime.instance_info()


def test_instance_info_returns_what_the_worker_set() -> None:
    info = InstanceInfo(node=2, total_nodes=4)
    runtime.set_instance_info(info)
    assert runtime.instance_info() is info


def test_set_instance_info_none_forgets_it() -> None:
    runtime.set_instance_info(InstanceInfo(node=0, total_nodes=1))
    runtime.set_instance_info(None)
    assert runtime.current_instance_info() is None


def test_set_instance_info_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="InstanceInfo"):
        runtime.set_instance_info({"node": 0})  # type: ignore[arg-type]


def test_instance_info_is_shared_by_every_thread_of_the_worker() -> None:
    info = InstanceInfo(node=1, total_nodes=2)
    runtime.set_instance_info(info)
    seen: list[InstanceInfo] = []
    thread = threading.Thread(target=lambda: seen.append(runtime.instance_info()))
    thread.start()
    thread.join()
    assert seen == [info]


def test_is_head_defaults_to_the_current_instance() -> None:
    runtime.set_instance_info(InstanceInfo(node=0, total_nodes=2))
    assert runtime.is_head() is True
    runtime.set_instance_info(InstanceInfo(node=1, total_nodes=2))
    assert runtime.is_head() is False


def test_is_head_uses_the_info_it_is_given() -> None:
    assert runtime.is_head(InstanceInfo(node=0, total_nodes=3)) is True
    assert runtime.is_head(InstanceInfo(node=2, total_nodes=3)) is False


def test_is_head_is_false_for_a_second_worker_on_the_head_node() -> None:
    assert runtime.is_head(InstanceInfo(node=0, total_nodes=1, worker=1, workers_per_node=2)) is False


def test_is_head_off_a_pool_raises() -> None:
    with pytest.raises(NoActivePoolError):
        runtime.is_head()


def test_use_worker_index_sets_the_worker_for_the_block() -> None:
    runtime.set_instance_info(InstanceInfo(node=1, total_nodes=2, workers_per_node=2))
    with runtime.use_worker_index(1) as info:
        assert info.worker == 1
        assert runtime.instance_info() == info
        assert runtime.instance_info().global_worker_index == 3
    assert runtime.instance_info().worker == 0


def test_use_worker_index_out_of_range_raises_value_error() -> None:
    runtime.set_instance_info(InstanceInfo(node=0, total_nodes=1, workers_per_node=2))
    with pytest.raises(ValueError, match=r"0\.\.1"), runtime.use_worker_index(2):
        pass


def test_use_worker_index_off_a_pool_raises() -> None:
    with pytest.raises(NoActivePoolError), runtime.use_worker_index(0):
        pass


def test_use_worker_index_does_not_reach_threads_outside_the_context() -> None:
    runtime.set_instance_info(InstanceInfo(node=0, total_nodes=1, workers_per_node=2))
    seen: list[int] = []
    with runtime.use_worker_index(1):
        thread = threading.Thread(target=lambda: seen.append(runtime.instance_info().worker))
        thread.start()
        thread.join()
    assert seen == [0]


def test_logical_workers_on_concurrent_threads_each_see_their_own_index() -> None:
    runtime.set_instance_info(InstanceInfo(node=1, total_nodes=2, workers_per_node=4))
    barrier = threading.Barrier(4)

    def task(worker: int) -> int:
        with runtime.use_worker_index(worker):
            barrier.wait(timeout=5)  # all four overrides are live at once
            return runtime.instance_info().global_worker_index

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(contextvars.copy_context().run, task, w) for w in range(4)]
        assert [f.result() for f in futures] == [4, 5, 6, 7]


def test_use_instance_info_restores_the_outer_info_when_nested() -> None:
    outer = InstanceInfo(node=0, total_nodes=2)
    inner = InstanceInfo(node=1, total_nodes=2)
    with runtime.use_instance_info(outer):
        with runtime.use_instance_info(inner):
            assert runtime.instance_info() is inner
        assert runtime.instance_info() is outer
    assert runtime.current_instance_info() is None
