"""Deadlines: task time limits, workers stuck past a cancel, and cancelling a task (loop thread).

A task's limit runs from its dispatch, or, for a task sent ahead to wait on its worker behind the
tasks running there (the node's window, client/node.py), from when a slot there frees for it.
When it passes, the task fails with `TimeoutError` at once
and its worker is told to cancel it; a task still running `STUCK_GRACE` later (blocked in C code,
which no cancel reaches) is ended with its worker process, the only way to stop a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from skyward.client.node import NodeHandle
    from skyward.client.scheduler import Scheduler
    from skyward.client.tasks import TaskState

#: Task timeouts at least this long (the default is 300 s) are enforced by one sweep a second
#: over the tasks in flight, not by a timer per task: a second late on a limit of minutes does not
#: matter, while arming and cancelling a timer for each task of a `map` costs it about a tenth of
#: its throughput. Shorter limits get their own timer and fire on time.
COARSE_TIMEOUT = 60.0
SWEEP_INTERVAL = 1.0
#: After a timed-out task is cancelled, how long its slot may stay busy before the worker is replaced.
STUCK_GRACE = 2.0


class Deadlines:
    def __init__(
        self, scheduler: Scheduler, closing: Callable[[], bool], restart: Callable[[NodeHandle, str], None]
    ) -> None:
        self._scheduler = scheduler
        #: Whether the pool is shutting down: nothing is timed out or restarted then.
        self._closing = closing
        #: Ends a stuck worker and starts it again (`Fleet.restart`), with the reason in words.
        self._restart = restart
        self._sweeper: asyncio.TimerHandle | None = None
        self._log = structlog.get_logger()

    def arm(self, task: TaskState) -> None:
        """The task's time limit, counted from its dispatch, or for a task sent ahead to wait on
        its worker (`task.waits`), from when it takes a freed slot there: the sweep reads that
        from `started_at`, and a short limit's timer is armed then (the node calls this again)."""
        if task.timeout is not None and task.timer is None:
            loop = asyncio.get_running_loop()
            if task.timeout < COARSE_TIMEOUT:
                if task.waits:
                    return
                left = task.started_at + task.timeout - loop.time()  # a CALL handed over may have waited
                task.timer = loop.call_later(max(0.0, left), self.timed_out, task)
            elif self._sweeper is None:
                self._sweeper = loop.call_later(SWEEP_INTERVAL, self._sweep)

    def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    def _sweep(self) -> None:
        """Time out the in-flight tasks with a long limit that have run past it (see COARSE_TIMEOUT)."""
        self._sweeper = None
        now = asyncio.get_running_loop().time()
        waiting = False
        for node in self._scheduler.handles():
            for task in node.running():
                if task.timeout is None or task.timeout < COARSE_TIMEOUT:
                    continue
                if task.waits:  # its limit has not started
                    waiting = True
                elif now - task.started_at >= task.timeout:
                    self.timed_out(task)
                else:
                    waiting = True
        if waiting and not self._closing():
            self._sweeper = asyncio.get_running_loop().call_later(SWEEP_INTERVAL, self._sweep)

    def timed_out(self, task: TaskState) -> None:
        task.timer = None
        if task.done:
            return
        node = self._scheduler.get(task.worker)
        where = f" on node {node.index}" if node is not None else ""
        task.fail(
            TimeoutError(
                f"{task.name}() did not finish within {task.timeout:g}s{where} and was cancelled; raise the "
                "limit with @sky.function(timeout=...), pending.with_timeout(s) or "
                "sky.Options(default_compute_timeout=...)"
            )
        )
        if node is not None and node.runs(task.id):
            node.abandon(task.id)
            why = (
                f"task {task.name}#{task.id} ran past its {task.timeout:g}s timeout "
                "and did not stop when cancelled"
            )
            asyncio.get_running_loop().call_later(STUCK_GRACE, self._check_stuck, node, task.id, why)

    def _check_stuck(self, node: NodeHandle, task_id: int, why: str) -> None:
        """A timed-out task still running after its cancel and `STUCK_GRACE` ends with its worker.

        Tasks beside it on the same worker (`Worker(concurrency>1)`) are healthy: the worker is
        drained first, taking no new task while they finish, and replaced once they have, so none
        of them is killed halfway and run again. Checked again every `STUCK_GRACE` until then; a
        stuck task that ends after all lifts the drain.
        """
        if node.lost or self._closing():
            return
        if not node.is_stuck(task_id):
            if node.end_drain():
                self._scheduler.pump()
            return
        if node.busy:
            if node.drain():
                self._log.info("skyward.draining_stuck_worker", node=node.index, task=task_id)
            asyncio.get_running_loop().call_later(STUCK_GRACE, self._check_stuck, node, task_id, why)
            return
        self._log.info("skyward.replacing_stuck_worker", node=node.index, task=task_id)
        self._restart(node, f"{why}, so its worker process is restarted")

    def cancel(self, task: TaskState) -> None:
        """Stop a task its caller gave up on: dropped if still queued, else its worker told to stop."""
        if task.done:
            return
        node = self._scheduler.get(task.worker)
        if node is not None and node.runs(task.id):
            node.cancel(task.id)
        else:
            task.resolve(None)

    def grant(self, task: TaskState, count: int) -> None:
        """Credits for a generator task's next items, as its caller reads them."""
        node = self._scheduler.get(task.worker)
        if node is not None and not task.done:
            node.credit(task.id, count)

