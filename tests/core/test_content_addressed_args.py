"""A large argument crosses to a worker once, by content key (client/blobs.py, worker/blobs.py).

An argument of `BLOB_MIN` bytes or more leaves its task: the worker is sent it once, and every
later task naming the same bytes finds it there. A worker that no longer holds it (dropped to stay
within its bound, or a new worker) is sent it again: a task never fails for it.

Local pools pass large arguments through shared memory unless `LOCAL_POOLS` says otherwise, as
these tests do: the worker's side is the same on every pool.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from core_support import local_pool

import skyward as sky
from skyward.client import blobs
from skyward.client.blobs import BLOB_MIN, as_blobs, make_blob
from skyward.worker.blobs import BlobRef, BlobStats

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def content_addressed_on_local_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blobs, "LOCAL_POOLS", True)


MB = 1 << 20


@sky.function
def checksum(data: Any, tag: int = 0) -> tuple[float, int, BlobStats]:
    """What the worker got, the tag it was called with, and what it holds now."""
    from skyward.worker import blobs as held

    return float(np.asarray(data, dtype=np.float64).sum()), tag, held.stats()


@sky.function
def change(data: np.ndarray) -> float:
    data[:] = 42
    return float(data.sum())


@sky.function
def worker_pid() -> int:
    return os.getpid()


@sky.function
def exit_worker() -> None:
    os._exit(3)


def test_a_large_argument_reused_by_many_tasks_crosses_to_a_node_once() -> None:
    weights = np.arange(2 * MB // 8, dtype=np.float64)
    with local_pool(nodes=1) as pool:
        answers = [checksum(weights, i) >> pool for i in range(5)]
    assert [tag for _, tag, _ in answers] == list(range(5))
    assert {total for total, _, _ in answers} == {float(weights.sum())}
    assert answers[-1][2].sent == 1  # the worker was sent the bytes once, for five tasks
    assert answers[-1][2].blobs == 1


def test_a_broadcast_pickles_its_large_argument_once_and_each_worker_gets_it_once() -> None:
    data = np.ones(3 * MB // 8)
    with local_pool(nodes=2) as pool:
        first = checksum(data) @ pool
        second = checksum(data, 1) @ pool
    assert [total for total, _, _ in first + second] == [float(data.sum())] * 4
    assert [stats.sent for _, _, stats in second] == [1, 1]


def test_a_task_may_change_its_copy_and_the_next_task_gets_the_argument_as_sent() -> None:
    data = np.zeros(2 * MB // 8)
    with local_pool(nodes=1) as pool:
        changed = change(data) >> pool
        total, _, stats = checksum(data) >> pool
    assert changed == 42 * data.size
    assert total == 0.0 and stats.sent == 1


def test_a_worker_that_dropped_an_argument_is_sent_it_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blobs, "BLOB_CACHE_BYTES", 3 * MB)  # read as each node joins: room for one
    a = np.full(2 * MB // 8, 1.0)
    b = np.full(2 * MB // 8, 2.0)
    with local_pool(nodes=1) as pool:
        answers = [checksum(x) >> pool for x in (a, b, a)]
    assert [total for total, _, _ in answers] == [a.sum(), b.sum(), a.sum()]
    assert answers[-1][2].sent == 3
    assert answers[-1][2].blobs == 1


def test_a_new_worker_in_a_lost_ones_place_is_sent_the_argument_again() -> None:
    data = np.full(2 * MB // 8, 3.0)
    with local_pool(nodes=1) as pool:
        before = checksum(data) >> pool
        first_pid = worker_pid() >> pool
        with pytest.raises(Exception):  # noqa: B017 - how the loss is reported is not this test's
            exit_worker() >> pool
        after = checksum(data) >> pool
        assert (worker_pid() >> pool) != first_pid
    assert before[0] == after[0] == data.sum()
    assert after[2].sent == 1  # the new worker's own first copy


def test_local_pools_pass_large_arguments_through_shared_memory_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(blobs, "LOCAL_POOLS", False)
    with local_pool(nodes=1) as pool:
        _, _, stats = checksum(np.ones(2 * MB // 8)) >> pool
    assert stats.sent == 0


def test_small_arguments_stay_in_their_task() -> None:
    args, kwargs, found = as_blobs((b"x" * (BLOB_MIN - 1),), {"n": 3}, None)
    assert found == ()
    assert args == (b"x" * (BLOB_MIN - 1),) and kwargs == {"n": 3}


def test_equal_bytes_have_one_key_and_different_bytes_another() -> None:
    a = make_blob(np.zeros(BLOB_MIN))
    assert make_blob(np.zeros(BLOB_MIN)).key == a.key
    assert make_blob(np.ones(BLOB_MIN)).key != a.key


def test_an_argument_of_unknown_size_is_measured_when_the_task_is_large() -> None:
    nested = {"layers": [np.ones(BLOB_MIN // 8) for _ in range(2)]}
    args, _, found = as_blobs((nested, 1), {}, None, measure=True)
    assert len(found) == 1 and type(args[0]) is BlobRef and args[1] == 1
