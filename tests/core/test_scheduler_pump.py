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


class FakeNode:
    """What the scheduler reads of a worker handle: its key, readiness, free slots and channel."""

    class Channel:
        can_send_now = False  # SSH: written on the loop

    def __init__(self, key: int, free_slots: int = 1) -> None:
        self.key = self.index = key
        self.ready = True
        self.free_slots = free_slots
        self.channel = FakeNode.Channel()
        self.sent: list[TaskState] = []

    def dispatch(self, task: TaskState) -> None:
        self.sent.append(task)
        self.free_slots -= 1


def test_a_lone_task_is_placed_round_robin_on_a_node_with_a_free_slot() -> None:
    scheduler = Scheduler()
    busy, idle, other = FakeNode(0, free_slots=0), FakeNode(1), FakeNode(2)
    for node in (busy, idle, other):
        scheduler.add(node)  # type: ignore[arg-type]
    first, second, third = a_task(1), a_task(2), a_task(3)
    assert scheduler.place_alone(first) and scheduler.place_alone(second)
    assert (idle.sent, other.sent) == ([first], [second])
    assert not scheduler.place_alone(third)  # no free slot anywhere: queued by the caller


def test_a_lone_task_never_overtakes_queued_ones() -> None:
    scheduler = Scheduler()
    node = FakeNode(0)
    scheduler.add(node)  # type: ignore[arg-type]
    scheduler.enqueue(a_task(1))
    assert not scheduler.place_alone(a_task(2))
    assert node.sent == []
