"""Placement: which node runs the next task.

Tasks wait in one queue; a task pinned to a node (`target=`, broadcast) waits for that node, the
rest go round-robin to ready nodes with a free slot (`Worker.concurrency + buffer` per node).
Runs on the pool's loop only.
"""

from __future__ import annotations

from collections import deque
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

    def submit(self, task: TaskState) -> None:
        self._queue.append(task)
        self.pump()

    def requeue(self, task: TaskState) -> None:
        self._queue.appendleft(task)

    @property
    def queued(self) -> int:
        return len(self._queue)

    def drain(self) -> list[TaskState]:
        tasks = list(self._queue)
        self._queue.clear()
        return tasks

    def pump(self) -> None:
        """Place every queued task that has a slot; keep the rest in order."""
        if not self._queue:
            return
        waiting: deque[TaskState] = deque()
        queue = self._queue
        while queue:
            task = queue.popleft()
            if task.done:
                continue
            node = self._pick(task)
            if node is None:
                waiting.append(task)
                if task.target is None and not self._any_free():
                    break
                continue
            node.dispatch(task)
            self._on_dispatch(task, node)
        waiting.extend(queue)
        self._queue = waiting

    def _any_free(self) -> bool:
        return any(n.ready and n.free_slots > 0 for n in self.nodes.values())

    def _pick(self, task: TaskState) -> NodeHandle | None:
        if task.target is not None:
            node = self.nodes.get(task.target)
            return node if node is not None and node.ready and node.free_slots > 0 else None
        indices = sorted(self.nodes)
        count = len(indices)
        for step in range(count):
            node = self.nodes[indices[(self._next + step) % count]]
            if node.ready and node.free_slots > 0:
                self._next = (self._next + step + 1) % count
                return node
        return None
