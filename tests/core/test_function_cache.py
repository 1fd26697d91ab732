"""Shipped functions take bounded memory: many distinct large closures run, and neither the client
nor a worker keeps them all (client/shipping.py `FunctionLedger`, worker/functions.py).

The bound is `FUNCTION_CACHE_BYTES`, 256 MiB of pickled functions per worker (and per subprocess
of `executor="process"`); the client keeps none of their bytes once their tasks are done.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest
from core_support import local_pool

import skyward as sky
from skyward.client import shipping
from skyward.client.shipping import FUNCTION_CACHE_BYTES, FunctionLedger, ShippedFunction
from skyward.worker.functions import CHILD_CACHE_BYTES, FunctionStats

pytestmark = pytest.mark.timeout(120)

MB = 1 << 20
#: The bound the tests hold the implementation to: 256 MiB of functions per worker.
BOUND = 256 * MB
#: What a process may hold beyond its functions: the interpreter, its imports, frames in flight.
SLACK = 160 * MB
#: How many distinct 1 MB functions the memory tests send: twice what a worker may hold with its
#: slack (800 MB against 416 MiB), so a cache that kept them all fails, and no more than that.
DISTINCT = 800


def _closure(size: int, seed: int) -> tuple[Callable[[], Any], bytes]:
    """A distinct function capturing `size` random bytes, and the answer it must give."""
    blob = random.Random(seed).randbytes(size)

    def digest() -> tuple[int, bytes]:
        return len(blob), blob[-16:]

    return digest, blob[-16:]


def _function_stats() -> tuple[FunctionStats, int, int]:
    """This worker's functions, and its peak memory and its parent's (kB, from /proc)."""
    from skyward.worker import functions

    return functions.stats(), _peak_kb("self"), _peak_kb(str(os.getppid()))


def _peak_kb(pid: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


stats = sky.function(_function_stats)


def _client_peak_from_now() -> Callable[[], int]:
    """The client's peak memory since this call, in bytes: Linux resets a process's peak when
    told to (`clear_refs`), so a test run earlier in this process does not count."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return lambda: _peak_kb("self") * 1024


def _run_distinct_closures(pool: sky.Pool, count: int) -> None:
    """`count` distinct 1 MB closures: half one by one from the caller's thread (`>>`), half in
    groups through the loop and scheduler (`&`), each checked."""
    for i in range(count // 2):
        fn, tail = _closure(MB, i)
        assert (sky.function(fn)() >> pool) == (MB, tail)
    for start in range(count // 2, count, 8):
        made = [_closure(MB, i) for i in range(start, min(start + 8, count))]
        group = sky.gather(*(sky.function(fn)() for fn, _ in made))
        assert list(group >> pool) == [(MB, tail) for _, tail in made]


def test_the_default_bound_is_256_mib() -> None:
    assert FUNCTION_CACHE_BYTES == BOUND
    assert CHILD_CACHE_BYTES == BOUND


def test_the_ledger_drops_the_least_recently_used_function_first() -> None:
    ledger = FunctionLedger(limit=3 * MB)
    a, b, c, d = (ShippedFunction(bytes([n]) * 16, bytes(MB), False) for n in range(4))
    task = [b"task"]
    for function in (a, b, c):
        assert ledger.parts(function, task) != task  # sent: the FUNCTION frame comes first
    assert ledger.parts(a, task) == task  # held, and now the most recently used
    ledger.parts(d, task)  # 4 MB: one must go, and `b` was used longest ago
    assert ledger.parts(a, task) == task
    assert ledger.parts(b, task) != task
    assert ledger.held_bytes <= 3 * MB
    assert ledger.shipped == 5


def test_distinct_1_mb_closures_past_the_bound_run_in_bounded_memory() -> None:
    client_peak = _client_peak_from_now()
    baseline = client_peak()  # what the client held as the test began
    with local_pool(2) as pool:
        _run_distinct_closures(pool, DISTINCT)
        held = stats() @ pool
    assert client_peak() - baseline < SLACK  # the client keeps none of them
    assert sum(functions.received for functions, _, _ in held) >= DISTINCT  # each one was sent
    for functions, peak_kb, _ in held:
        assert functions.bytes <= BOUND
        assert peak_kb * 1024 < BOUND + SLACK


def test_distinct_1_mb_closures_past_the_bound_run_in_bounded_memory_in_subprocesses() -> None:
    with local_pool(2, worker=sky.Worker(executor="process")) as pool:
        _run_distinct_closures(pool, DISTINCT)
        held = stats() @ pool
    for functions, child_peak_kb, worker_peak_kb in held:
        assert functions.bytes <= BOUND  # the subprocess's loaded functions
        assert child_peak_kb * 1024 < BOUND + SLACK
        assert worker_peak_kb * 1024 < BOUND + SLACK


def test_a_function_dropped_from_the_worker_is_sent_again_when_needed() -> None:
    first, tail = _closure(MB, -1)
    first_remote = sky.function(first)
    with local_pool(1) as pool:
        assert (first_remote() >> pool) == (MB, tail)
        for i in range(300):  # 300 MB of other functions: `first` is the least recently used
            fn, other = _closure(MB, i)
            assert (sky.function(fn)() >> pool) == (MB, other)
        before = (stats() >> pool)[0]
        assert (first_remote() >> pool) == (MB, tail)
        after = (stats() >> pool)[0]
    assert after.received - before.received == 1  # its FUNCTION frame, a second time
    assert after.bytes <= BOUND


def test_a_function_still_held_is_not_sent_again() -> None:
    first, tail = _closure(MB, -1)
    first_remote = sky.function(first)
    with local_pool(1) as pool:
        assert (first_remote() >> pool) == (MB, tail)
        for i in range(10):
            fn, other = _closure(MB, i)
            assert (sky.function(fn)() >> pool) == (MB, other)
        before = (stats() >> pool)[0]
        assert (first_remote() >> pool) == (MB, tail)
        after = (stats() >> pool)[0]
    assert after.received == before.received


def test_a_function_larger_than_the_bound_runs_and_is_dropped_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shipping, "FUNCTION_CACHE_BYTES", 2 * MB)  # read as each node joins
    big, tail = _closure(3 * MB, 7)
    with local_pool(1) as pool:
        assert (sky.function(big)() >> pool) == (3 * MB, tail)
        assert (sky.function(big)() >> pool) == (3 * MB, tail)  # kept alone: not sent again
        held = (stats() >> pool)[0]  # a second function: the big one makes room
    assert held.received == 2
    assert held.functions == 1
    assert held.bytes <= 2 * MB


def test_threads_dispatching_while_functions_are_dropped_all_find_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Callers' threads (each writing a lone task to an idle node itself) and the loop (placing
    the rest) write to the same workers while the bound drops functions at almost every step."""
    monkeypatch.setattr(shipping, "FUNCTION_CACHE_BYTES", 1 * MB)
    made = [_closure(MB // 4, i) for i in range(24)]  # 6 MB of functions: 4 fit
    remote = [(sky.function(fn), tail) for fn, tail in made]
    failures: list[BaseException] = []

    def caller(pool: sky.Pool, seed: int) -> None:
        pick = random.Random(seed)
        try:
            for _ in range(400):
                fn, tail = pick.choice(remote)
                assert (fn() >> pool) == (MB // 4, tail)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads interleave as finely as they can
    try:
        with local_pool(2, worker=sky.Worker(concurrency=2)) as pool:
            threads = [threading.Thread(target=caller, args=(pool, seed)) for seed in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            held = stats() @ pool
    finally:
        sys.setswitchinterval(switch)
    assert failures == []
    assert all(functions.bytes <= 1 * MB for functions, _, _ in held)
