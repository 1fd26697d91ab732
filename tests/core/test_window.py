"""The adaptive window (client/window.py, client/node.py, client/scheduler.py): how many tasks a
node holds beyond the ones it runs, so it never idles for a round trip between them. Nothing here
is timed against a target: the window's size from its inputs, its bounds, and what it must never
do (run more than `concurrency` at once, keep an idle node from work, override `Worker(buffer=)`)."""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from core_support import local_pool

import skyward as sky
from skyward.client.node import NodeHandle
from skyward.client.preparation import build_task, shipped
from skyward.client.scheduler import Scheduler
from skyward.client.tasks import TaskState
from skyward.client.window import WINDOW_MAX, WINDOW_MIN_RATIO, window_size
from skyward.wire import Frame, Kind

pytestmark = pytest.mark.timeout(60)


# --- window_size: the formula


def test_the_window_grows_with_the_round_trip_over_the_service_time() -> None:
    rtt = 0.05
    sizes = [window_size(1, rtt, rtt / ratio) for ratio in (0.5, 1, 2, 5, 10, 40)]
    assert sizes == [2, 2, 3, 6, 11, 41]  # concurrency + ceil(rtt / pace)
    assert sizes == sorted(sizes)
    assert window_size(4, 0.05, 0.005) == 4 + 10  # on top of what runs at once


def test_the_window_never_exceeds_its_maximum_beyond_concurrency() -> None:
    for rtt in (0.02, 0.15, 1.0):
        for pace in (1e-4, 1e-5, 1e-9, 0.0):
            assert window_size(1, rtt, pace) == 1 + WINDOW_MAX
            assert window_size(8, rtt, pace) == 8 + WINDOW_MAX
    assert window_size(2, 0.15, 1e-6, maximum=16) == 2 + 16


def test_without_both_estimates_or_for_long_tasks_the_window_is_concurrency() -> None:
    assert window_size(3, None, 0.001) == 3
    assert window_size(3, 0.05, None) == 3
    # A round trip under WINDOW_MIN_RATIO of a task: nothing is sent ahead.
    assert window_size(3, 0.05, 0.05 / WINDOW_MIN_RATIO * 1.01) == 3
    assert window_size(3, 0.05, 0.05 / WINDOW_MIN_RATIO * 0.99) == 4


# --- NodeHandle: the window from measured round trips and answers


def double(x: int) -> int:
    return 2 * x


def halve(x: int) -> int:
    return x // 2


def a_task(fn: Any = double, x: int = 1, timeout: float | None = None) -> TaskState:
    name = fn.__name__
    return build_task(fn, name, shipped(fn, name, "thread"), (x,), {}, None, timeout, None)


class Clock:
    """The node's loop clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now


class Channel:
    can_send_now = False

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send_parts(self, parts: Any) -> None:
        self.sent.append(parts)

    def send(self, kind: Kind, task_id: int = 0, payload: Any = None) -> None:
        self.sent.append((kind, task_id))


def a_node(capacity: int = 1, fixed_window: int | None = None) -> tuple[NodeHandle, Clock]:
    node = NodeHandle(
        0, None, None, Channel(), capacity, lambda event: None, lambda node, exc: None,  # type: ignore[arg-type]
        lambda task: None, fixed_window=fixed_window,
    )
    clock = Clock()
    node._loop = clock  # type: ignore[assignment]
    node.ready = True
    return node, clock


def measure_rtt(node: NodeHandle, clock: Clock, rtt: float) -> None:
    """A PING answered a round trip later, as the handshake's is."""
    node.ping()
    clock.now += rtt
    node._on_frame(Frame(Kind.PONG, 0, None))


def run_tasks(
    node: NodeHandle, clock: Clock, rtt: float, service: float, count: int, fn: Any = double
) -> None:
    """`count` tasks, each sent on its own and answered a round trip plus its service time later."""
    for _ in range(count):
        task = a_task(fn)
        node.dispatch(task)
        clock.now += rtt + service
        node._on_frame(Frame(Kind.RESULT, task.id, 2))
        clock.now += 0.01


def window_after(rtt: float, service: float, capacity: int = 1) -> int:
    async def scenario() -> int:
        node, clock = a_node(capacity)
        measure_rtt(node, clock, rtt)
        run_tasks(node, clock, rtt, service, 8)
        return node.window(a_task().function.key)

    return asyncio.run(scenario())


def test_a_nodes_window_follows_its_measured_round_trip_and_service_time() -> None:
    assert window_after(0.05, 0.01) == 1 + 5
    assert window_after(0.05, 0.001) == 1 + 50
    assert window_after(0.15, 0.001) == 1 + WINDOW_MAX
    assert window_after(0.0005, 0.001) == 1 + 1  # loopback: one ahead covers it
    assert window_after(0.05, 2.0) == 1  # the round trip is nothing beside the task: none ahead
    assert window_after(0.05, 0.001, capacity=4) == 4 + 50


def test_a_nodes_window_is_its_pace_on_the_tasks_own_function() -> None:
    async def scenario() -> tuple[int, int, int]:
        node, clock = a_node()
        measure_rtt(node, clock, 0.05)
        run_tasks(node, clock, 0.05, 0.001, 8)
        measured = node.window(a_task(double).function.key)
        unknown = node.window(a_task(halve).function.key)  # nothing seen of it yet
        run_tasks(node, clock, 0.05, 0.025, 1, fn=halve)  # another function: measured afresh
        return measured, unknown, node.window(a_task(halve).function.key)

    assert asyncio.run(scenario()) == (51, 1, 3)


def test_the_round_trip_is_measured_by_pings_sent_while_the_node_is_idle() -> None:
    async def scenario() -> tuple[float | None, float | None, float | None, float | None]:
        node, clock = a_node()
        assert node.rtt is None and node.window(a_task().function.key) == 1
        measure_rtt(node, clock, 0.04)
        first = node.rtt
        task = a_task()
        node.dispatch(task)
        measure_rtt(node, clock, 0.5)  # behind a task: its PONG waits for it, not a sample
        busy = node.rtt
        clock.now += 1.0
        node._on_frame(Frame(Kind.RESULT, task.id, 2))
        measure_rtt(node, clock, 0.06)  # a slower one: the least of two periods is kept...
        slower = node.rtt
        for _ in range(2):  # ...until the faster one's period is two periods old
            clock.now += 11.0
            measure_rtt(node, clock, 0.06)
        return first, busy, slower, node.rtt

    first, busy, slower, later = asyncio.run(scenario())
    assert first == busy == slower == pytest.approx(0.04)
    assert later == pytest.approx(0.06)


def test_a_task_sent_ahead_starts_its_time_limit_when_a_slot_frees_for_it() -> None:
    async def scenario() -> tuple[bool, bool, float, float, list[int]]:
        node, clock = a_node(capacity=1, fixed_window=3)
        armed: list[int] = []
        node.on_start = lambda task: armed.append(task.id)
        first, second, third = a_task(timeout=10), a_task(timeout=10), a_task(timeout=10)
        node.dispatch(first)
        node.dispatch(second, waits=True)  # as the scheduler says: no running slot free
        node.dispatch(third, waits=True)
        sent_at = second.started_at
        clock.now += 5.0
        node._on_frame(Frame(Kind.RESULT, first.id, 2))
        return first.waits, second.waits, sent_at, second.started_at, armed

    first_waits, second_waits, sent_at, started_at, armed = asyncio.run(scenario())
    assert not first_waits and not second_waits
    assert started_at == sent_at + 5.0  # its limit runs from the slot's freeing, not its sending
    assert len(armed) == 1  # the second task's timer, armed then; the third still waits


def test_a_stuck_tasks_slot_once_freed_starts_the_task_waiting_behind_it() -> None:
    async def scenario() -> tuple[bool, bool, float]:
        node, clock = a_node(capacity=1, fixed_window=2)
        stuck, behind = a_task(timeout=10), a_task(timeout=10)
        node.dispatch(stuck)
        node.dispatch(behind, waits=True)
        clock.now += 10.0
        node.abandon(stuck.id)  # past its limit, told to stop: it keeps its slot meanwhile
        still = behind.waits
        clock.now += 1.0
        node._on_frame(Frame(Kind.ERROR, stuck.id, None))  # it stopped at last
        return still, behind.waits, behind.started_at - behind.sent_at

    still, waits, waited = asyncio.run(scenario())
    assert still and not waits
    assert waited == pytest.approx(11.0)


# --- the scheduler: fair share


class FakeNode:
    """What the scheduler reads of a worker handle, with a window of its own."""

    class Channel:
        can_send_now = False

    def __init__(self, key: int, window: int, running: int = 0, waiting: int = 0) -> None:
        self.key = self.index = key
        self.ready = True
        self.capacity = 1
        self.fixed_window = None
        self._window = window
        self.running = running
        self.waiting: deque[Any] = deque([object()] * waiting)
        self.channel = FakeNode.Channel()
        self.sent: list[TaskState] = []

    @property
    def held(self) -> int:
        return self.running + len(self.waiting) + len(self.sent)

    @property
    def free_slots(self) -> int:
        return self.capacity - self.held

    def window(self, key: bytes) -> int:
        return self._window

    def prefetch(self, key: bytes | None = None) -> int:
        return 0

    def dispatch(self, task: TaskState, waits: bool = False) -> None:
        assert waits == (self.held >= self.capacity)
        self.sent.append(task)


def pump(nodes: list[FakeNode], tasks: int) -> None:
    scheduler = Scheduler()
    for node in nodes:
        scheduler.add(node)  # type: ignore[arg-type]
    for i in range(tasks):
        task = a_task(x=i)
        task.prefetch = True  # a map's
        scheduler.enqueue(task)
    scheduler.pump()


def test_a_node_holds_no_more_than_its_fair_share_of_the_work_left() -> None:
    fast, busy = FakeNode(0, window=65), FakeNode(1, window=65, running=1)
    pump([fast, busy], 10)
    # 10 to place over 2 nodes: each may hold 5 beyond what it runs, far below its window.
    assert len(fast.sent) + len(busy.sent) == 10
    assert fast.held <= 1 + 5 and busy.held <= 1 + 5


def test_an_idle_node_gets_the_work_while_another_holds_a_backlog() -> None:
    loaded, idle = FakeNode(0, window=65, running=1, waiting=20), FakeNode(1, window=65)
    pump([loaded, idle], 6)
    assert loaded.sent == []  # beyond its share already
    assert len(idle.sent) == 6


def test_the_last_tasks_of_a_map_wait_here_for_the_first_free_slot() -> None:
    a, b = FakeNode(0, window=65, running=1), FakeNode(1, window=65, running=1)
    pump([a, b], 1)  # less than one each: sent ahead to neither
    assert a.sent == b.sent == []


# --- real pools


def stamp(item: tuple[str, int]) -> tuple[int, int]:
    """Record when this task ran, in its own file: (node, pid)."""
    folder, i = item
    began = time.time()
    time.sleep(0.01)
    ended = time.time()
    node = sky.instance_info().node
    Path(folder, f"{i}.txt").write_text(f"{node} {began!r} {ended!r}\n")
    return node, os.getpid()


def held_counts(pool: sky.Pool) -> dict[int, list[int]]:
    """Per node, how many tasks it held after each dispatch (recorded on the pool's loop)."""
    scheduler = pool._scheduler  # type: ignore[attr-defined]
    counts: dict[int, list[int]] = {}
    arm = scheduler.on_dispatch

    def record(task: TaskState) -> None:
        node = scheduler.get(task.worker)
        if node is not None:
            counts.setdefault(node.index, []).append(node.held)
        arm(task)

    scheduler.on_dispatch = record
    return counts


def test_concurrency_one_runs_one_task_at_a_time_with_a_window_of_16(tmp_path: Path) -> None:
    options = sky.Options(worker=sky.Worker(concurrency=1, buffer=15))
    with local_pool(2, options=options) as pool:
        counts = held_counts(pool)
        pool.map(stamp, [(str(tmp_path), i) for i in range(60)])
    runs: dict[int, list[tuple[float, float]]] = {}
    for path in tmp_path.iterdir():
        node, began, ended = path.read_text().split()
        runs.setdefault(int(node), []).append((float(began), float(ended)))
    assert sum(len(r) for r in runs.values()) == 60
    assert max(max(c) for c in counts.values()) > 1  # tasks did wait on the workers
    for intervals in runs.values():
        intervals.sort()
        for (_, ended), (began, _) in zip(intervals, intervals[1:], strict=False):
            assert began >= ended, "two tasks ran at once on a node with concurrency=1"


def test_a_fixed_buffer_fixes_the_window(tmp_path: Path) -> None:
    options = sky.Options(worker=sky.Worker(concurrency=1, buffer=2))
    with local_pool(2, options=options) as pool:
        counts = held_counts(pool)
        pool.map(linger, range(40))
        held = max(max(c) for c in counts.values())
        pool.map(halve, range(500))
        handles = pool._scheduler.handles()  # type: ignore[attr-defined]
        windows = {node.window(key) for node in handles for key in (b"any function", linger_key())}
    assert windows == {3}
    # A map of 50 ms tasks: at most the fixed window. (A map of tasks far shorter than the
    # prefetch horizon may also take what the node finishes within it; tasks ten times longer
    # keep that out even when a loaded machine bunches the answers the pace is measured from.)
    assert held == 3


def linger(item: int) -> int:
    time.sleep(0.05)
    return item


def linger_key() -> bytes:
    return shipped(linger, "linger", "thread").key


def test_the_default_window_grows_for_short_tasks() -> None:
    with local_pool(1) as pool:
        pool.map(halve, range(200))
        (node,) = pool._scheduler.handles()  # type: ignore[attr-defined]
        key = shipped(halve, "halve", "thread").key
        assert node.fixed_window is None
        assert node.rtt is not None and node.window(key) > 1


def slow_on_node_zero(x: int) -> int:
    if sky.instance_info().node == 0:
        time.sleep(0.3)
    return sky.instance_info().node


def test_a_node_is_not_starved_while_the_other_holds_a_backlog() -> None:
    with local_pool(2) as pool:
        pool.map(halve, range(200))  # both nodes have a wide window for short tasks
        began = time.monotonic()
        nodes = pool.map(slow_on_node_zero, range(40))
        elapsed = time.monotonic() - began
    assert nodes.count(1) >= 36, nodes  # node 0 keeps no more than it runs and one behind it
    assert elapsed < 1.5


def slow_on_node_zero_when_asked(item: tuple[int, bool]) -> int:
    x, slow = item
    if slow and sky.instance_info().node == 0:
        time.sleep(0.1)
    return sky.instance_info().node


def test_a_node_whose_pace_misleads_holds_no_more_than_its_fair_share() -> None:
    # The same function was fast on node 0 a moment ago: its window is wide when the slow items
    # come. Sent items cannot be taken back, but node 0 takes no more than half of them.
    with local_pool(2) as pool:
        pool.map(slow_on_node_zero_when_asked, [(i, False) for i in range(300)])
        nodes = pool.map(slow_on_node_zero_when_asked, [(i, True) for i in range(40)])
    assert nodes.count(0) <= 21, nodes
