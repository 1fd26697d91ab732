"""The scheduler after an answer: a freed slot is refilled by one pump when tasks wait, and costs
no loop iteration when none does; the finished task is not kept by the scheduler either way."""

from __future__ import annotations

import asyncio
import gc
import weakref

from skyward.client.preparation import build_task, shipped
from skyward.client.scheduler import Scheduler
from skyward.client.tasks import TaskState


def double(x: int) -> int:
    return 2 * x


class Result:
    """A task's result that can be watched for its release."""


def a_task(x: int = 1) -> TaskState:
    return build_task(double, "double", shipped(double, "double", "thread"), (x,), {}, None, None, None)


def test_a_finished_task_with_nothing_queued_schedules_no_pump_and_is_not_kept() -> None:
    async def scenario() -> tuple[int, weakref.ref[Result]]:
        scheduler = Scheduler()
        task = a_task()
        scheduler.placed(task)  # a lone `>>`: it holds maps back while it runs
        result = Result()
        ref = weakref.ref(result)
        scheduler.pump_soon(task)
        task.resolve(result)  # as the node does next
        ready = len(asyncio.get_running_loop()._ready)  # type: ignore[attr-defined]
        del task, result  # the caller dropped its result: nothing else may hold it
        return ready, ref

    ready, ref = asyncio.run(scenario())
    gc.collect()
    assert ready == 0
    assert ref() is None


def test_a_finished_task_with_tasks_queued_schedules_one_pump() -> None:
    async def scenario() -> tuple[int, int]:
        scheduler = Scheduler()
        pumps: list[int] = []
        scheduler.pump = lambda: pumps.append(1)  # type: ignore[method-assign]
        scheduler.enqueue(a_task(2))
        for _ in range(3):  # three answers read at once
            scheduler.pump_soon(a_task())
        ready = len(asyncio.get_running_loop()._ready)  # type: ignore[attr-defined]
        await asyncio.sleep(0)
        return ready, len(pumps)

    assert asyncio.run(scenario()) == (1, 1)
