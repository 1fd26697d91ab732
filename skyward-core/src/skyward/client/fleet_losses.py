"""Every way a worker leaves a pool, and what becomes of its tasks: the `Fleet`'s losses, as a mixin.

Kept apart from the fleet (`client/fleet.py`) because this is the part that must be right in every
case: a worker that ended, one stopped to be started again (a stuck task), one a resize or a failed
start lets go, all go through one routine (`_remove`) that says why; a lost worker's tasks get the
retry policy, a let-go worker's are queued again as they were; a node that could not be replaced
leaves for good (`_let_go`), and the tasks pinned to it, or left with no node to run them, fail
with the reason rather than wait for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from skyward.errors import NodeLostError
from skyward.observe.events import ErrorReported, InstanceReplaced, NodeLost, TaskRetried

if TYPE_CHECKING:
    from skyward.client.node import NodeHandle
    from skyward.client.preemption import NodeGuards
    from skyward.client.scheduler import Scheduler
    from skyward.client.tasks import TaskState
    from skyward.collections.store import CollectionStore
    from skyward.observe.bus import EventBus


class FleetLosses:
    """Remove, replace and let go of workers; fail the tasks nothing is left to run."""

    # The fleet's state these methods work on (set in `Fleet.__init__`).
    name: str
    options: Any
    bus: EventBus
    instances: dict[int, Any]
    closing: bool
    replacing: set[int]
    collections: CollectionStore
    guards: NodeGuards
    _scheduler: Scheduler
    _replacements: set[asyncio.Task[None]]
    _lost_reason: str
    _log: Any

    if TYPE_CHECKING:  # the fleet's: a worker's start (client/fleet_workers.py), a machine's end

        async def _start_node(self, index: int, instance: Any, total: int, worker: int = 0) -> NodeHandle: ...
        async def _give_back(self, instances: list[Any]) -> None: ...

    def on_node_lost(self, node: NodeHandle, exc: BaseException | None, restart: str = "") -> None:
        """`node`'s worker is gone: it ended (`exc` says how), or the pool stopped it to start it
        again (`restart` says why, in words for the user: see `NodeLost.restart`)."""
        if self.closing:
            return
        reason = restart or (repr(exc) if exc else "worker exited")
        self._remove(node, reason, lost=True, restart=bool(restart))
        replacement = asyncio.get_running_loop().create_task(self._replace(node))
        self._replacements.add(replacement)  # teardown cancels and awaits what is still starting
        replacement.add_done_callback(self._replacements.discard)

    def restart(self, node: NodeHandle, why: str) -> None:
        """End `node`'s worker process and start it again (a stuck task: see client/deadlines.py)."""
        node.kill()
        self.on_node_lost(node, None, restart=why)

    def _remove(self, node: NodeHandle, reason: str, *, lost: bool, restart: bool = False) -> None:
        """Take the worker `node` out of the pool: the one routine every path that removes one uses.

        The scheduler places nothing more on it, and its output so far is flushed. A lost worker
        (it ended, or the pool stops it to start it again) is announced with `NodeLost`, and its
        tasks get the retry policy: they may have had effects. A worker the pool lets go (a
        resize, a node that did not start) had its tasks stopped by the pool, not by a fault:
        they are queued again as they were.
        """
        self._scheduler.remove(node)
        tasks = node.leave()
        self.collections.node_removed(node, reason)  # its locks released, its barriers broken
        if lost:
            self.bus.emit(NodeLost(node=node.index, reason=reason, restart=restart, pool=self.name))
        else:
            self._log.info("skyward.worker_removed", pool=self.name, node=node.index, reason=reason)
        for task in tasks:
            if lost:
                self.retry_or_fail(task, node.index)
            else:
                task.worker = None
                self._scheduler.requeue(task)

    def retry_or_fail(self, task: TaskState, index: int) -> None:
        """A task of node `index`, lost: queued again while it may be replayed and has retries left."""
        if task.retryable and task.attempts < self.options.retry_on_interruption:
            task.attempts += 1
            task.worker = None
            self.bus.emit(TaskRetried(task_id=task.id, name=task.name, node=index, attempt=task.attempts,
                                      reason="node lost", pool=self.name))
            self._scheduler.requeue(task)
        else:
            why = (
                "it streams data, so it cannot be replayed" if not task.retryable
                else f"after {task.attempts} retries"
            )
            task.fail(NodeLostError(
                f"Node {index} was lost while running {task.name}() (task {task.id}); not retried: {why}. "
                "Raise sky.Options(retry_on_interruption=...) to allow more retries."
            ))

    async def _replace(self, old: NodeHandle) -> None:
        index, key = old.index, old.key
        if key in self.replacing:
            return
        self.replacing.add(key)
        try:
            await old.close(timeout=1)
            if await self.guards.lost_machine(index):  # taken back by its cloud: a new machine
                return
            instance = self.instances[index]
            await self._start_node(index, instance, len(self.instances), worker=old.info.worker)
            replaced = InstanceReplaced(node=index, old_id=instance.id, new_id=instance.id, pool=self.name)
            self.bus.emit(replaced)
        except Exception as exc:  # noqa: BLE001 - report, and fail what waited for this node
            self._lost_reason = f"node {index} could not be replaced: {exc}"
            self.bus.emit(ErrorReported(message=self._lost_reason, fatal=False, node=index, pool=self.name))
            why = f"was lost and could not be replaced: {exc}"
            if self._scheduler.workers_of(index):
                self._fail_pinned({key}, index, why)  # its other workers still serve
            else:  # the node is gone for good: later broadcasts and targets must not wait for it
                await self._give_back([await self._let_go(index, why, keys={key})])
        finally:
            self.replacing.discard(key)
            self.fail_if_no_node_left()  # nothing to do while a node is left
            self._scheduler.pump()

    async def _let_go(
        self, index: int, why: str, keys: Collection[int] = (), close_timeout: float = 1
    ) -> Any:
        """Node `index` leaves the pool for good: its workers removed and closed, and the queued
        tasks pinned to them (or to `keys`) failed, saying `why`. Returns its machine, for the
        caller to terminate."""
        instance = self.instances.pop(index, None)
        gone = set(keys)
        for node in self._scheduler.workers_of(index):
            self._remove(node, why, lost=False)
            gone.add(node.key)
            await node.close(close_timeout)
        self._fail_pinned(gone, index, why)
        return instance

    def _fail_pinned(self, keys: Collection[int], index: int, why: str) -> None:
        """Fail the queued tasks pinned to the workers `keys`, which left the pool: no other worker
        may run them (a broadcast's share, `target=`), and waiting would end only in a time-out
        that names the wrong cause."""
        for task in self._scheduler.drain():
            if task.target in keys:
                pinned = f"{task.name}() (task {task.id}) was pinned to node {index}"
                task.fail(NodeLostError(f"{pinned}, which {why}"))
            else:
                self._scheduler.enqueue(task)

    def fail_if_no_node_left(self) -> None:
        """Fail every queued task once no node is left and none is being replaced: nothing could
        ever run them, and a caller would wait for ever."""
        if self.closing or not self._scheduler.empty or self.replacing or self.instances:
            return
        why = self._lost_reason or "every node was lost"
        for task in self._scheduler.drain():
            task.fail(NodeLostError(
                f"{task.name}() cannot run: no node of {self.name} is left ({why}). "
                "Start a new pool, or add nodes with pool.resize(n)."
            ))
