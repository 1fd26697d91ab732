"""The Waiter: one caller waits for the tasks of one call while the loop completes them."""

from __future__ import annotations

import threading

import pytest

from skyward.client.shipping import ShippedFunction
from skyward.client.tasks import TaskState, Waiter


def _task(waiter: Waiter) -> TaskState:
    return TaskState(
        name="t", function=ShippedFunction(b"k", b"", False), parts=[], task_id=TaskState.next_id(),
        target=None, timeout=None, window=1, inputs={}, waiter=waiter,
    )


def test_tasks_sharing_a_waiter_have_no_future() -> None:
    assert _task(Waiter()).future is None


def test_result_waits_for_a_task_completed_by_another_thread() -> None:
    waiter = Waiter()
    first, second = _task(waiter), _task(waiter)
    threading.Timer(0.05, second.resolve, args=("b",)).start()
    threading.Timer(0.1, first.resolve, args=("a",)).start()
    assert (first.result(), second.result()) == ("a", "b")


def test_result_raises_the_task_error() -> None:
    task = _task(Waiter())
    threading.Timer(0.02, task.fail, args=(ValueError("boom"),)).start()
    with pytest.raises(ValueError, match="boom"):
        task.result()


def test_a_completed_task_returns_without_waiting() -> None:
    task = _task(Waiter())
    task.resolve(7)
    assert task.result() == 7  # no other thread exists that could wake it


def test_many_completions_from_another_thread_all_arrive() -> None:
    waiter = Waiter()
    tasks = [_task(waiter) for _ in range(2000)]

    def complete() -> None:
        for i, task in enumerate(reversed(tasks)):
            task.resolve(len(tasks) - 1 - i)

    threading.Thread(target=complete).start()
    assert [t.result() for t in tasks] == list(range(2000))
