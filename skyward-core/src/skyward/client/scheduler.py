"""Placement: which node runs the next task.

Tasks wait in one queue; a task pinned to a node (`target=`, broadcast) waits for that node, the
rest go round-robin to ready nodes with a free slot (`Worker.concurrency + buffer` per node).
Runs on the pool's loop only.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyward.client.node import NodeHandle
    from skyward.client.tasks import TaskState


class Scheduler:
    def __init__(self, on_dispatch) -> None:
        self.nodes: dict[int, NodeHandle] = {}
        self._queue: deque[TaskState] = deque()
        self._next = 0
        self._on_dispatch = on_dispatch
        # Dispatched tasks that are not part of a map, until they are done: while there is one, no
        # node takes map tasks beyond its slots, so a map never overtakes work sent before it.
        self._exclusive: set[TaskState] = set()
        self._pump_scheduled = False

    def enqueue(self, task: TaskState) -> None:
        """Queue a task at the back; the caller pumps once after a batch."""
        self._queue.append(task)

    def requeue(self, task: TaskState) -> None:
        self._queue.appendleft(task)

    @property
    def waiting(self) -> bool:
        """Whether tasks wait for a slot (readable from any thread)."""
        return bool(self._queue)

    def backlog(self) -> tuple[int, int]:
        """Queued tasks: how many may run on any node, and how many in all (pinned ones too)."""
        queue = self._queue
        return sum(1 for task in queue if task.target is None), len(queue)

    def drain(self) -> list[TaskState]:
        tasks = list(self._queue)
        self._queue.clear()
        return tasks

    def idle_node(self, task: TaskState) -> NodeHandle | None:
        """A ready node with a free slot for `task`, whose channel can be written from any thread,
        when nothing waits ahead of it; else None (and the round-robin turn is not used up).

        Called from a caller's thread without a lock (Pool._dispatch_now): it reads snapshots and
        single values only. A stale answer costs at most one task beyond a node's slots, which
        the worker queues; the loop confirms the placement when it registers the task.
        """
        if self._queue or self._pump_scheduled:
            return None
        exclusive = self._exclusive  # the loop may replace or grow it meanwhile
        if exclusive and any(not t.done for t in list(exclusive)):
            return None
        nodes = dict(self.nodes)  # the loop may add or drop nodes meanwhile
        index = self._choose(task, sorted(nodes), lambda i: i in nodes and _has_room(nodes[i]))
        return None if index is None else nodes[index]

    def placed(self, task: TaskState) -> None:
        """Count a task placed outside `pump` (Pool._dispatch_now) like one `pump` placed."""
        if not task.prefetch:
            self._exclusive.add(task)

    def pump_soon(self) -> None:
        """Pump once at the end of this loop iteration (a slot was freed).

        One read from a worker can carry many results; their slots are refilled by one pump,
        whose frames then leave together, instead of a pump and a write per result.
        """
        if not self._pump_scheduled:
            self._pump_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_pump)

    def _scheduled_pump(self) -> None:
        self._pump_scheduled = False
        self.pump()

    def pump(self) -> None:
        """Place every queued task that has a slot; keep the rest in order.

        It runs after every result, so when nothing can be placed it stops at the first task
        instead of walking (or copying) the whole queue: a `map` of 10,000 items stays linear.
        Each node's room is counted once per pump: its free slots, and for the tasks of a `map`
        (`task.prefetch`) the extra tasks it may hold while it finishes short tasks quickly.
        """
        queue = self._queue
        if self._exclusive:  # also with nothing queued: a finished task must not be kept alive here
            self._exclusive = {t for t in self._exclusive if not t.done}
        if not queue:
            return
        room: dict[int, list[int]] = {}  # node index -> [free slots, free slots with prefetch]
        for index, node in self.nodes.items():
            if node.ready:
                slots = node.free_slots
                extra = 0 if self._exclusive else node.prefetch()
                if slots + extra > 0:
                    room[index] = [slots, slots + extra]
        order = sorted(self.nodes)
        waiting: deque[TaskState] = deque()  # pinned tasks whose node is busy, in order
        while queue:
            task = queue[0]
            if task.done:
                queue.popleft()
                continue
            index = self._pick(task, room, order)
            if index is None:
                if task.target is None and not room:
                    break
                waiting.append(queue.popleft())
                if task.target is None:
                    break  # no room for it anywhere: the tasks behind it keep their turn
                continue
            queue.popleft()
            left = room[index]
            left[0] -= 1
            left[1] -= 1
            if left[1] <= 0:
                del room[index]
            node = self.nodes[index]
            node.dispatch(task)
            self._on_dispatch(task, node)
            if not task.prefetch:
                self._exclusive.add(task)
                # No more prefetch in this pump either.
                room = {i: [slots, slots] for i, (slots, _) in room.items() if slots > 0}
        queue.extendleft(reversed(waiting))

    def _pick(self, task: TaskState, room: dict[int, list[int]], order: list[int]) -> int | None:
        """The index of the node for `task` among those with `room` for it, or None."""
        kind = 1 if task.prefetch else 0

        def fits(index: int) -> bool:
            left = room.get(index)
            return left is not None and left[kind] > 0

        return self._choose(task, order, fits)

    def _choose(self, task: TaskState, order: list[int], fits: Callable[[int], bool]) -> int | None:
        """`task`'s pinned node if it fits, else the next fitting node in round-robin order (the
        turn moves on only when one is chosen)."""
        if task.target is not None:
            return task.target if fits(task.target) else None
        start, count = self._next, len(order)
        for step in range(count):
            index = order[(start + step) % count]
            if fits(index):
                self._next = (start + step + 1) % count
                return index
        return None


def _has_room(node: NodeHandle) -> bool:
    return node.ready and not node.lost and node.channel.can_send_now and node.free_slots > 0
