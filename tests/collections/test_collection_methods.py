"""Every method of every collection, in a task on each node of a Local pool, under the thread and
the process executor: what it returns and what it raises."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from collection_pools import local_pool
from collections_support import (
    ASYNC_SEEN,
    COUNTER_SEEN,
    COUNTER_SEEN_EVENTUAL,
    DICT_SEEN,
    LOCK_SEEN,
    QUEUE_SEEN,
    SET_SEEN,
    Point,
    async_methods,
    barrier_alone,
    counter_methods,
    dict_methods,
    lock_methods,
    queue_methods,
    set_methods,
)

import skyward as sky
from skyward.collections import proxies

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("consistency", [None, "strong", "eventual"])
def test_dict_methods(pool: sky.Pool, name: str, consistency: str | None) -> None:
    assert pool.run(dict_methods(name, consistency), target=1) == DICT_SEEN


@pytest.mark.parametrize("consistency", [None, "eventual"])
def test_set_methods(pool: sky.Pool, name: str, consistency: str | None) -> None:
    assert pool.run(set_methods(name, consistency), target=0) == SET_SEEN


def test_counter_methods(pool: sky.Pool, name: str) -> None:
    assert pool.run(counter_methods(name), target=1) == COUNTER_SEEN


def test_counter_methods_under_eventual_consistency(pool: sky.Pool, name: str) -> None:
    assert pool.run(counter_methods(name, "eventual"), target=1) == COUNTER_SEEN_EVENTUAL


def test_queue_methods(pool: sky.Pool, name: str) -> None:
    assert pool.run(queue_methods(name), target=0) == QUEUE_SEEN


def test_lock_methods(pool: sky.Pool, name: str) -> None:
    assert pool.run(lock_methods(name), target=1) == LOCK_SEEN


def test_a_barrier_of_one_lets_its_participant_through_every_round(pool: sky.Pool, name: str) -> None:
    assert barrier_alone(name) >> pool == [0, 0, 1]


def test_every_method_has_an_async_twin_that_works(pool: sky.Pool, name: str) -> None:
    assert pool.run(async_methods(name), target=0) == ASYNC_SEEN


def test_state_written_on_one_node_is_read_on_the_other(pool: sky.Pool, name: str) -> None:
    @sky.function
    def write() -> None:
        sky.dict(name)["where"] = Point(sky.instance_info().node)

    @sky.function
    def read() -> Point:
        return sky.dict(name)["where"]

    pool.run(write(), target=0)
    assert pool.run(read(), target=1) == Point(0)


def test_a_proxy_passed_to_a_task_names_the_same_collection(name: str) -> None:
    @sky.function
    def bump(counter):
        return counter.increment(2)

    with local_pool(1) as pool:
        counter = sky.counter(name)
        assert bump(counter) >> pool == 2
        assert counter.value == 2


def test_the_client_reads_and_writes_inside_the_pool_block(name: str) -> None:
    @sky.function
    def read() -> tuple[str, list[int]]:
        return sky.queue(name).get(timeout=5), sky.dict(name)["k"]

    with local_pool(1) as pool:
        sky.queue(name).put("from the client")
        sky.dict(name)["k"] = [1, 2]
        assert read() >> pool == ("from the client", [1, 2])


def test_the_state_is_dropped_when_the_pool_ends(name: str) -> None:
    with local_pool(1):
        sky.counter(name).increment(5)
    with local_pool(1):
        assert sky.counter(name).value == 0
    with pytest.raises(sky.NoActivePoolError):
        sky.counter(name)


def test_every_public_method_has_an_async_variant() -> None:
    for cls in (proxies.Dict, proxies.Set, proxies.Counter, proxies.Queue, proxies.Barrier, proxies.Lock):
        public = [n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")]
        public = [n for n in public if not n.endswith("_async")]
        for method in public:
            twin = getattr(cls, f"{method}_async", None)
            assert twin is not None and inspect.iscoroutinefunction(twin), f"{cls.__name__}.{method}_async"
    assert asyncio.iscoroutinefunction(proxies.Counter.value_async)


@pytest.mark.parametrize("factory", ["dict", "set", "counter", "queue", "lock"])
def test_factories_off_a_pool_raise_saying_so(factory: str) -> None:
    with pytest.raises(sky.NoActivePoolError, match="No active pool"):
        getattr(sky, factory)("anything")
    with pytest.raises(sky.NoActivePoolError, match="No active pool"):
        sky.barrier("anything", 2)


def test_bad_arguments_are_refused_with_the_fix() -> None:
    with pytest.raises(sky.ConfigurationError, match="'strong'"):
        sky.counter("x", consistency="linear")
    with pytest.raises(sky.ConfigurationError, match="n is how many participants"):
        sky.barrier("x", 0)
    with pytest.raises(sky.ConfigurationError, match="timeout"):
        sky.lock("x", timeout=-1)


def test_sky_dict_and_sky_set_leave_the_builtins_alone() -> None:
    assert sky.dict is not dict and sky.set is not set
    assert "counter" in dir(sky)  # dir() still works once sky.set is bound in the package
    namespace: dict[str, object] = {}
    exec("from skyward import *", namespace)
    assert "dict" not in namespace and "set" not in namespace and "counter" in namespace


def test_a_pool_with_cluster_false_refuses_collections_saying_why() -> None:
    @sky.function
    def use_a_counter() -> str:
        try:
            sky.counter("off").increment()
        except Exception as exc:  # noqa: BLE001 - what the task saw
            return f"{type(exc).__name__}: {exc}"
        return "no error"

    with local_pool(1, options=sky.Options(cluster=False)) as pool:
        seen = use_a_counter() >> pool
    assert seen.startswith("ConfigurationError") and "Options(cluster=False)" in seen, seen
