"""Placement: which node runs the next task.

Tasks wait in one queue; a task pinned to a node (`target=`, broadcast) waits for that node, the
rest go round-robin to ready nodes, to a free running slot first (`Worker.concurrency` per node),
then into a node's window: tasks sent ahead to wait on the worker, so it never idles for a round
trip between them. A node's window (`NodeHandle.window`) covers its measured round trip at its
measured pace on the task's function, or is `Worker(buffer=)`'s fixed one; what a node holds
beyond its running slots is also held to its fair share of the work left (`pump`), so a node
never takes a map's items while another could run them.
The scheduler also holds the pool's worker handles by key: the fleet (client/fleet.py) adds and
removes them through the methods below, and nothing else writes them. Runs on the pool's loop
only, except `idle_node` (see there).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyward.client.node import NodeHandle
    from skyward.client.tasks import TaskState


class Scheduler:
    def __init__(self) -> None:
        self._nodes: dict[int, NodeHandle] = {}
        #: Called with each task `pump` sends (the pool arms its time limit: client/deadlines.py).
        self.on_dispatch: Callable[[TaskState], Any] = lambda task: None
        self._queue: deque[TaskState] = deque()
        #: Queued tasks any node may run (not pinned), those ended while queued included until
        #: `pump` drops them: kept count of, as the fair share reads it at every pump.
        self._loose = 0
        self._next = 0
        # Dispatched tasks that are not part of a map, until they are done: while there is one, no
        # node takes map tasks beyond its slots, so a map never overtakes work sent before it.
        self._exclusive: set[TaskState] = set()
        self._pump_scheduled = False
        #: Whether any handle's channel can be written from a caller's thread (`idle_node`): not
        #: on SSH, where looking for an idle node cost each lone `>>` ~5 us for nothing.
        self._direct = False

    # -- the worker handles ---------------------------------------------------------------------------

    def add(self, node: NodeHandle) -> None:
        """Place tasks on `node` from now on (it answered its handshake)."""
        self._nodes[node.key] = node
        self._direct = any(n.channel.can_send_now for n in self._nodes.values())

    def remove(self, node: NodeHandle) -> bool:
        """Place nothing more on `node`; False if it was not (or no longer) this key's handle."""
        if self._nodes.get(node.key) is node:
            del self._nodes[node.key]
            self._direct = any(n.channel.can_send_now for n in self._nodes.values())
            return True
        return False

    def holds(self, node: NodeHandle) -> bool:
        """Whether `node` is the live handle of its key (not lost, replaced or removed)."""
        return not node.lost and self._nodes.get(node.key) is node

    def get(self, key: int | None) -> NodeHandle | None:
        return None if key is None else self._nodes.get(key)

    def handles(self) -> list[NodeHandle]:
        """Every worker handle, in the order they were added (a copy: the caller may remove some)."""
        return list(self._nodes.values())

    def workers_of(self, index: int) -> list[NodeHandle]:
        """The handles of node `index`'s workers (one unless a plugin such as mig asks for more)."""
        return [node for node in self._nodes.values() if node.index == index]

    def ready_nodes(self) -> set[int]:
        """The indices of the nodes with a ready worker (readable from any thread: a snapshot)."""
        return {node.index for node in list(self._nodes.values()) if node.ready}

    @property
    def empty(self) -> bool:
        return not self._nodes

    def clear(self) -> list[NodeHandle]:
        """Forget every handle (the pool stops); returns them."""
        nodes = list(self._nodes.values())
        self._nodes.clear()
        self._direct = False
        return nodes

    # -- the queue --------------------------------------------------------------------------------------

    def enqueue(self, task: TaskState) -> None:
        """Queue a task at the back; the caller pumps once after a batch."""
        self._queue.append(task)
        if task.target is None:
            self._loose += 1

    def requeue(self, task: TaskState) -> None:
        self._queue.appendleft(task)
        if task.target is None:
            self._loose += 1

    def started(self, task: TaskState) -> None:
        """A task that waited on its worker took a slot there: its time limit starts now."""
        self.on_dispatch(task)

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
        self._loose = 0
        return tasks

    def idle_node(self, task: TaskState) -> NodeHandle | None:
        """A ready node with a free slot for `task`, whose channel can be written from any thread,
        when nothing waits ahead of it; else None (and the round-robin turn is not used up).

        Called from a caller's thread without a lock (`Dispatcher._dispatch_now`): it reads snapshots and
        single values only. A stale answer costs at most one task beyond a node's slots, which
        the worker queues; the loop confirms the placement when it registers the task.
        """
        if not self._direct or self._queue or self._pump_scheduled:
            return None
        exclusive = self._exclusive  # the loop may replace or grow it meanwhile
        if exclusive and any(not t.done for t in list(exclusive)):
            return None
        nodes = dict(self._nodes)  # the loop may add or drop nodes meanwhile
        index = self._choose(task, sorted(nodes), lambda i: i in nodes and _has_room(nodes[i]))
        return None if index is None else nodes[index]

    def placed(self, task: TaskState) -> None:
        """Count a task placed outside `pump` (`Dispatcher._dispatch_now`) like one `pump` placed."""
        if not task.prefetch:
            self._exclusive.add(task)

    def pump_soon(self, finished: TaskState | None = None) -> None:
        """Pump once at the end of this loop iteration (a slot was freed, by `finished` if given).

        One read from a worker can carry many results; their slots are refilled by one pump,
        whose frames then leave together, instead of a pump and a write per result. With nothing
        queued there is nothing to place, and no pump is scheduled: `finished` leaves the tasks
        that hold maps back here and now. A pump scheduled for nothing cost a lone `>>` over SSH
        one more loop iteration after its answer (~14 us of its ~500 us round trip).
        """
        if finished is not None:
            self._exclusive.discard(finished)  # its outcome is delivered next, in the same step
        if not self._pump_scheduled and self._queue:
            self._pump_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_pump)

    def _scheduled_pump(self) -> None:
        self._pump_scheduled = False
        self.pump()

    def place_alone(self, task: TaskState) -> bool:
        """Send `task` now if nothing waits ahead of it and a node has a free slot: what `pump`
        would do for a lone `>>`, without its accounting for a queue and a map's prefetch (which
        cost ~6 us of a ~500 us round trip over SSH). False, with nothing done, otherwise: the
        caller queues it and pumps."""
        if self._queue or task.prefetch:
            return False
        if self._exclusive:
            self._exclusive = {t for t in self._exclusive if not t.done}
        nodes = self._nodes
        index = self._choose(task, sorted(nodes), lambda i: i in nodes and _has_slot(nodes[i]))
        if index is None:
            return False
        nodes[index].dispatch(task)
        self.on_dispatch(task)
        self._exclusive.add(task)
        return True

    def pump(self) -> None:
        """Place every queued task that has room; keep the rest in order.

        It runs after every result, so when nothing can be placed it stops at the first task
        instead of walking (or copying) the whole queue: a `map` of 10,000 items stays linear.
        Each node's room is counted once per pump (again only when a task of another function
        comes up, as a node's window is its pace on one function): `_room`.

        A task any node may run goes to a free running slot first, round-robin; failing that,
        into a node's window. A pinned task waits for its node, and no task behind it is placed
        on that node in this pump, so a node busy with a map is not kept busy past it.
        """
        queue = self._queue
        if self._exclusive:  # also with nothing queued: a finished task must not be kept alive here
            self._exclusive = {t for t in self._exclusive if not t.done}
        if not queue:
            return
        order = sorted(self._nodes)
        function = queue[0].function
        room, idle = self._room(function.key)
        closed: set[int] = set()  # nodes a pinned task waits for
        waiting: deque[TaskState] = deque()  # pinned tasks whose node is busy, in order
        while queue:
            task = queue[0]
            if task.done:
                queue.popleft()
                if task.target is None:
                    self._loose -= 1
                continue
            if task.function is not function:  # the tasks of one call share it
                if task.function.key != function.key:
                    room, idle = self._room(task.function.key, closed)
                function = task.function
            target = task.target
            if target is not None:
                index = _pinned_room(target, room, closed)
                if index is None:
                    waiting.append(queue.popleft())
                    continue
            else:
                index = self._next_with_room(order, room, 0) if idle else None
                if index is None:
                    index = self._next_with_room(order, room, 3 if task.prefetch else 1)
                if index is None:
                    break  # no room for it anywhere: the tasks behind it keep their turn
                self._loose -= 1
            queue.popleft()
            idle -= self._send(task, index, room)
        queue.extendleft(reversed(waiting))

    def _send(self, task: TaskState, index: int, room: dict[int, list[int]]) -> int:
        """Dispatch `task` to node `index` and take it out of that node's `room` (see `_room`);
        1 if it took a free running slot there, 0 if it waits on the worker."""
        left = room[index]
        waits = left[0] <= 0  # no running slot free there: it waits on the worker
        left[0] -= 1
        left[1] -= 1
        left[2] -= 1
        left[3] -= 1
        if left[2] <= 0 and left[3] <= 0:
            del room[index]
        self._nodes[index].dispatch(task, waits)
        self.on_dispatch(task)
        if not task.prefetch:
            self._exclusive.add(task)
            for left in room.values():  # no more prefetch in this pump either
                left[3] = left[1]
        return 0 if waits else 1

    def _room(self, key: bytes, closed: set[int] | None = None) -> tuple[dict[int, list[int]], int]:
        """Each ready node's room for tasks of the function `key`, and how many running slots are
        free in all: node index -> [free running slots, room for a task any node may run, for a
        pinned task, for a map's task].

        A pinned task may fill its node's window (no other node could run it). A task any node
        may run may fill it too, but what the node holds beyond its running slots stays within
        its fair share of the work left to start (queued here or waiting on a worker, split
        evenly over the ready nodes): a node never holds tasks that would wait on it while another
        could run them. A fixed window (`Worker(buffer=)`) is the user's, and is not cut. A map's
        task may also take a node's prefetch (`NodeHandle.prefetch`) while no other task is in
        flight (`_exclusive`).
        """
        nodes = self._nodes
        ready = [node for node in nodes.values() if node.ready]
        if not ready:
            return {}, 0
        backlog = self._loose
        for node in ready:
            backlog += len(node.waiting)
        share = backlog // len(ready)
        prefetch = not self._exclusive
        room: dict[int, list[int]] = {}
        idle_total = 0
        for index, node in nodes.items():
            if not node.ready or (closed and index in closed):
                continue
            held = node.held
            window = node.window(key)
            pinned = window - held
            fixed = node.fixed_window is not None
            loose = pinned if fixed else min(window, node.capacity + share) - held
            mapped = loose
            if prefetch:
                extra = node.prefetch(key)
                if extra:
                    base = window if fixed else node.capacity
                    mapped = max(loose, base - held + extra)
            if pinned > 0 or mapped > 0:
                idle = node.free_slots
                room[index] = [idle, loose, pinned, mapped]
                if idle > 0:
                    idle_total += idle
        return room, idle_total

    def _next_with_room(self, order: list[int], room: dict[int, list[int]], column: int) -> int | None:
        """The next node in round-robin order whose `room[...][column]` is positive (the turn
        moves on only when one is chosen), or None."""
        start, count = self._next, len(order)
        for step in range(count):
            index = order[(start + step) % count]
            left = room.get(index)
            if left is not None and left[column] > 0:
                self._next = (start + step + 1) % count
                return index
        return None

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


def _has_slot(node: NodeHandle) -> bool:
    return node.ready and node.free_slots > 0


def _has_room(node: NodeHandle) -> bool:
    return node.ready and not node.lost and node.channel.can_send_now and node.free_slots > 0


def _pinned_room(target: int, room: dict[int, list[int]], closed: set[int]) -> int | None:
    """`target` when it has room for a task pinned to it; else None, and the node is closed for
    the rest of the pump (no task behind the pinned one is placed there before it)."""
    left = room.get(target)
    if left is not None and left[2] > 0:
        return target
    if room.pop(target, None) is not None:
        closed.add(target)
    return None
