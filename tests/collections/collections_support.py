"""Tasks that use the collections, shared by the collection tests (and shipped by value, as the
workers cannot import this folder). Each returns what it saw, for the test to compare."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import cloudpickle

import skyward as sky

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Point:
    """A user class with no module on the workers: travels by value, stored opaque by the store."""

    def __init__(self, x: int) -> None:
        self.x = x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and other.x == self.x


def raises(fn: Any, *args: Any) -> str:
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - the type is what the test compares
        return type(exc).__name__
    return "nothing"


@sky.function
def dict_methods(name: str, consistency: str | None = None) -> list[Any]:
    d = sky.dict(name, consistency=consistency)
    d["a"] = 1
    d.set("b", Point(2))
    d.update({"c": 3}, e=5)
    d.update([("f", 6)])
    seen: list[Any] = [d["a"], d.get("b"), d.get("zz"), d.get("zz", 7), "a" in d, "zz" in d, len(d)]
    seen += [sorted(d.keys()), sorted(d), sorted(v for v in d.values() if isinstance(v, int))]
    seen += [sorted((k, v) for k, v in d.items() if isinstance(v, int))]
    del d["a"]
    seen += ["a" in d, raises(d.__delitem__, "a"), raises(d.__getitem__, "a")]
    seen += [d.pop("c"), d.pop("c"), d.pop("c", "gone"), d.setdefault("g", 8), d.setdefault("g", 9)]
    d.clear()
    seen += [len(d), d.len()]
    return seen


DICT_SEEN = [
    1, Point(2), None, 7, True, False, 5,
    ["a", "b", "c", "e", "f"], ["a", "b", "c", "e", "f"], [1, 3, 5, 6],
    [("a", 1), ("c", 3), ("e", 5), ("f", 6)],
    False, "KeyError", "KeyError", 3, None, "gone", 8, 8, 0, 0,
]


@sky.function
def set_methods(name: str, consistency: str | None = None) -> list[Any]:
    s = sky.set(name, consistency=consistency)
    s.add("x")
    s.add("y")
    s.add("x")
    seen: list[Any] = ["x" in s, "z" in s, len(s), sorted(s), sorted(s.members())]
    s.discard("x")
    s.discard("nope")
    seen += ["x" in s, raises(s.remove, "nope")]
    s.remove("y")
    seen += [len(s)]
    s.add((1, 2))
    seen += [s.contains((1, 2))]
    s.clear()
    seen += [s.len()]
    return seen


SET_SEEN = [True, False, 2, ["x", "y"], ["x", "y"], False, "KeyError", 0, True, 0]


@sky.function
def counter_methods(name: str, consistency: str | None = None) -> list[Any]:
    c = sky.counter(name, consistency=consistency)
    seen: list[Any] = [c.value, c.increment(), c.increment(5), c.decrement(2), int(c), c.value]
    c.reset()
    seen += [c.value]
    c.reset(10)
    seen += [c.get(), raises(c.increment, 1.5)]
    return seen


COUNTER_SEEN = [0, 1, 6, 4, 4, 4, 0, 10, "TypeError"]
#: Under eventual consistency a write answers nothing: increment returns None.
COUNTER_SEEN_EVENTUAL = [0, None, None, None, 4, 4, 0, 10, "TypeError"]


@sky.function
def queue_methods(name: str) -> list[Any]:
    q = sky.queue(name)
    seen: list[Any] = [q.empty(), len(q), q.qsize()]
    q.put("first")
    q.put(Point(2))
    q.put({"third": [3]})
    seen += [q.empty(), len(q), q.qsize(), q.get(), q.get(timeout=1), q.get(timeout=0)]
    seen += [raises(q.get, 0), raises(q.get, 0.05), q.empty()]
    return seen


QUEUE_SEEN = [
    True, 0, 0, False, 3, 3, "first", Point(2), {"third": [3]}, "QueueEmptyError", "QueueEmptyError", True,
]


@sky.function
def lock_methods(name: str) -> list[Any]:
    lock = sky.lock(name, timeout=5)
    seen: list[Any] = [lock.locked(), lock.acquire(), lock.locked(), raises(lock.acquire)]
    lock.release()
    seen += [lock.locked(), raises(lock.release)]
    with lock:
        seen += [lock.locked()]
    seen += [lock.locked()]
    return seen


LOCK_SEEN = [False, True, True, "RuntimeError", False, "RuntimeError", True, False]


@sky.function
def barrier_alone(name: str) -> list[int]:
    b = sky.barrier(name, 1)
    return [b.wait(), b.wait(), b.n]


@sky.function
def async_methods(name: str) -> list[Any]:
    """Every kind through its `_async` methods, awaited on an event loop inside the task."""

    async def main() -> list[Any]:
        d, s, c = sky.dict(name), sky.set(name), sky.counter(name)
        q, lock, b = sky.queue(name), sky.lock(name), sky.barrier(name, 1)
        await d.set_async("k", 1)
        await d.update_async({"j": 2})
        seen: list[Any] = [await d.get_async("k"), await d.contains_async("j"), await d.len_async()]
        seen += [await d.pop_async("j"), await d.setdefault_async("m", 3), sorted(await d.keys_async())]
        await d.delete_async("m")
        seen += [sorted(await d.items_async()), await d.values_async()]
        await d.clear_async()
        await s.add_async("a")
        seen += [await s.contains_async("a"), await s.len_async(), await s.members_async()]
        await s.discard_async("a")
        await s.add_async("b")
        await s.remove_async("b")
        await s.clear_async()
        seen += [await c.increment_async(3), await c.decrement_async(), await c.value_async()]
        await c.reset_async(7)
        seen += [await c.get_async()]
        await q.put_async("x")
        seen += [await q.qsize_async(), await q.get_async(timeout=1), await q.empty_async()]
        async with lock:
            seen += [await lock.locked_async()]
        await lock.acquire_async()
        await lock.release_async()
        seen += [await b.wait_async()]
        return seen

    return asyncio.run(main())


ASYNC_SEEN = [
    1, True, 2, 2, 3, ["k", "m"], [("k", 1)], [1], True, 1, ["a"], 3, 2, 2, 7, 1, "x", True, True, 0,
]


# -- concurrency ---------------------------------------------------------------------------------


@sky.function
def increment_many(name: str, times: int, consistency: str | None = None) -> int:
    counter = sky.counter(name, consistency=consistency)
    for _ in range(times):
        counter.increment()
    return os.getpid()


@sky.function
def read_counter(name: str) -> int:
    return sky.counter(name).value


@sky.function
def critical_section(lock_name: str, rounds: int, hold: float, use_lock: bool = True) -> int:
    """Enter the critical section `rounds` times; count every time another task was inside too."""
    inside, overlaps = sky.counter(f"{lock_name}-inside"), sky.counter(f"{lock_name}-overlaps")
    lock = sky.lock(lock_name, timeout=60)
    for _ in range(rounds):
        if use_lock:
            lock.acquire()
        try:
            if inside.increment() != 1:
                overlaps.increment()
            time.sleep(hold)
            inside.decrement()
        finally:
            if use_lock:
                lock.release()
    return overlaps.value


@sky.function
def meet_at_barrier(name: str, n: int) -> tuple[int, int, int]:
    """Arrive, wait for everyone, then report how many had arrived: all n, on every node."""
    arrived = sky.counter(f"{name}-arrived")
    barrier = sky.barrier(name, n)
    arrived.increment()
    index = barrier.wait()
    return sky.instance_info().node, index, arrived.value


@sky.function
def put_all(name: str, items: list[Any]) -> int:
    queue = sky.queue(name)
    for item in items:
        queue.put(item)
    return sky.instance_info().node


@sky.function
def get_n(name: str, n: int, timeout: float | None = None) -> tuple[int, list[Any]]:
    queue = sky.queue(name)
    return sky.instance_info().node, [queue.get(timeout=timeout) for _ in range(n)]


# -- failures ------------------------------------------------------------------------------------


def announce_pid(path: str) -> None:
    Path(path + ".tmp").write_text(str(os.getpid()))
    os.replace(path + ".tmp", path)


@sky.function
def hold_lock_and_sleep(name: str, path: str, seconds: float) -> None:
    lock = sky.lock(name)
    lock.acquire()
    announce_pid(path)
    time.sleep(seconds)


@sky.function
def hold_lock_and_return(name: str) -> bool:
    sky.lock(name).acquire()
    return True


@sky.function
def acquire_within(name: str, timeout: float) -> tuple[bool, float]:
    began = time.monotonic()
    lock = sky.lock(name, timeout=timeout)
    got = lock.acquire()
    lock.release()
    return got, time.monotonic() - began


@sky.function
def join_barrier_and_sleep(name: str, n: int, path: str, seconds: float) -> None:
    sky.barrier(name, n)
    announce_pid(path)
    time.sleep(seconds)


@sky.function
def wait_at_barrier(name: str, n: int) -> str:
    try:
        sky.barrier(name, n).wait()
    except sky.BarrierBrokenError as exc:
        return str(exc)
    return "passed"
