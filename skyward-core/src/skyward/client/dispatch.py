"""Dispatch: how prepared tasks reach the workers.

Three ways, fastest first (docs/architecture.md, "Fast paths, and why each exists"):

- a lone `>>` for an idle node with a reply lane leaves from the caller's thread as a CALL, and
  that thread reads the answer from the lane (`_await_call`): the loop is not woken at all;
- another lone task for an idle node leaves from the caller's thread, and the loop registers it
  afterwards (`_sent_now`), while the worker runs it;
- another lone task (a stream, a busy pool, an SSH channel, which belongs to its loop) is placed
  by the scheduler on the caller's thread while the loop thread waits its turn
  (`LoopThread.run_here`): as on the loop, but without waking it first;
- everything else (a `map`'s or a broadcast's many tasks) is queued on the loop, and the
  scheduler places it.

`TaskStarted` is emitted by the node handle, on the thread that will emit the task's
`TaskCompleted` (see `NodeHandle.started`).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from skyward.client.preparation import build_task, shipped
from skyward.errors import NodeLostError, PoolClosedError
from skyward.wire import Kind
from skyward.worker.lifecycle import enter_worker_contexts

if TYPE_CHECKING:
    from skyward.client.deadlines import Deadlines
    from skyward.client.fleet import Fleet
    from skyward.client.loop import LoopThread
    from skyward.client.node import NodeHandle
    from skyward.client.scheduler import Scheduler
    from skyward.client.tasks import TaskState


class Dispatcher:
    def __init__(self, name: str, scheduler: Scheduler, fleet: Fleet, deadlines: Deadlines) -> None:
        self.name = name
        self._scheduler = scheduler
        self._fleet = fleet
        self._deadlines = deadlines
        self.loop_thread: LoopThread | None = None
        #: The workers' plugin contexts are still to be entered everywhere (`_enter_contexts_everywhere`).
        self._contexts_pending = False
        self._contexts_lock = threading.Lock()
        self._log = structlog.get_logger()

    def expect_contexts(self, worker_plugins: tuple[Any, ...]) -> None:
        """Whether the first tasks must bring every worker into its plugins' contexts at once."""
        self._contexts_pending = any(p.around_app is not None for p in worker_plugins)

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` on the loop soon, unless the loop is closed (the pool stopped)."""
        if self.loop_thread is not None and not self.loop_thread.loop.is_closed():
            self.loop_thread.call(fn, *args)

    # -- the caller's thread -------------------------------------------------------------------------

    def submit(
        self, tasks: list[TaskState], call: bool = False, blocking: bool = True,
        drive_until: Callable[[], bool] | None = None,
    ) -> None:
        """Send `tasks`; `call`: this thread waits for the lone task's answer next. `blocking`:
        the caller waits for the outcomes, which the pool's own loop thread must never do.
        `drive_until`: a lone task sent on the loop's behalf (`LoopThread.send_and_drive`) is
        then awaited here, driving the loop, until it says done."""
        if blocking and self.loop_thread is not None and self.loop_thread.is_current():
            names = ", ".join(dict.fromkeys(f"{t.name}()" for t in tasks))
            raise RuntimeError(
                f"{names} was dispatched and waited for on {self.name}'s own event loop (an event handler "
                "or a hook runs there), which would wait for ever. Dispatch with `>` (pool.run_async) "
                "and do not wait for the future there, or hand the work to another thread."
            )
        if self._contexts_pending:
            self._enter_contexts_everywhere(tasks)
        if len(tasks) == 1:
            if self._dispatch_now(tasks[0], call):
                return
            loop_thread = self.loop_thread
            if loop_thread is not None:
                if drive_until is not None:
                    if loop_thread.send_and_drive(self._submit_on_loop, (tasks,), drive_until) is not None:
                        return  # placed, sent and (mostly) answered on this thread, in one turn
                elif loop_thread.run_here(self._submit_on_loop, tasks):
                    return  # placed and sent from this thread while the loop waited its turn
        self.call(self._submit_on_loop, tasks)

    def _enter_contexts_everywhere(self, tasks: list[TaskState]) -> None:
        """With the pool's first tasks, send every worker they do not target a task that does nothing.

        A worker enters its plugins' `around_app` contexts before its first task. Some of them are
        collectives: torch's `init_process_group` and `jax.distributed.initialize` block until every
        worker has arrived. A first task sent to one node (`>>`) would wait there for workers that
        had no task, until the rendezvous timed out. The empty tasks bring every worker in at once,
        so the first task may go anywhere; a broadcast targets every worker already and adds none.
        """
        with self._contexts_lock:
            if not self._contexts_pending:
                return
            self._contexts_pending = False
        keys = self._fleet.worker_keys()
        targeted = {task.target for task in tasks}
        untargeted = [key for key in keys if key not in targeted]
        if len(keys) < 2 or not untargeted:
            return  # a lone worker's first task enters its contexts itself, as does a broadcast's
        fn, name = enter_worker_contexts, enter_worker_contexts.__name__
        function = shipped(fn, name, self._fleet.worker.resolved_executor)
        empty = [build_task(fn, name, function, (), {}, key, None, None) for key in untargeted]
        for task in empty:
            assert task.future is not None
            task.future.add_done_callback(self._contexts_entered)
        self.call(self._submit_on_loop, empty)

    def _contexts_entered(self, future: concurrent.futures.Future[Any]) -> None:
        """Log a worker that failed to enter its contexts: that worker's next task fails with the
        same error and reaches its caller, so nothing is lost by not raising it here."""
        error = future.exception()
        if error is not None and not isinstance(error, PoolClosedError | NodeLostError):
            self._log.warning("skyward.worker_contexts_failed", pool=self.name, error=str(error))

    def _dispatch_now(self, task: TaskState, call: bool = False) -> bool:
        """Write a lone task from the caller's thread straight to an idle node's pipe.

        The hop to the loop thread (a wake-up and a GIL hand-off, before anything is sent) was the
        largest share of a short task's round trip on the client. The frame leaves first; the loop
        is told afterwards, and registers the task while the worker runs it. An answer that comes
        before that finds the task in the node's `sent_now`. If the node was lost meanwhile, the
        loop queues the task again, like any task of a lost node. Streaming tasks, busy pools and
        transports that belong to their loop (SSH) go through the loop.

        `call` (a caller about to wait for this answer, on a node with a reply lane): the task
        goes as a CALL and this thread reads its answer from the lane (`_await_call`), so the
        loop is not woken at all, neither to register the task nor to read the answer.
        """
        loop_thread = self.loop_thread
        if task.stream is not None or task.inputs or loop_thread is None or loop_thread.is_current():
            return False
        node = self._scheduler.idle_node(task)
        if node is None:
            return False
        lane = node.lane if call else None
        if lane is not None and not lane.try_acquire():
            lane = None  # another thread's call holds it
        if not node.send_now(task, call=lane is not None):
            if lane is not None:
                lane.release()
            return False  # the node is closing: the loop places the task elsewhere
        if lane is None:
            loop_thread.call(self._sent_now, task, node)
        else:
            self._await_call(task, node, lane)
        return True

    def _await_call(self, task: TaskState, node: NodeHandle, lane: Any) -> None:
        """Read a CALL's answer from the node's reply lane on this thread, and resolve the task.

        The task stays in the node's `sent_now` meanwhile, which keeps its slot taken. Should
        this thread stop reading first (the time limit passed, an interrupt, the lane ended with
        its worker), the loop takes the task and the lane over (`_adopt_call`).
        """
        try:
            frame = lane.read(task.timeout)
        except BaseException:
            self._hand_over(task, node)
            raise
        if frame is None:
            self._hand_over(task, node)
            return
        lane.release()
        if frame.kind is Kind.ELSEWHERE:
            return  # the answer follows the task's output on the main channel, to the loop
        if node.finish_call(task, frame) and self._scheduler.waiting:
            self.call(self._scheduler.pump)  # tasks queued while this one held the node

    def _hand_over(self, task: TaskState, node: NodeHandle) -> None:
        try:
            self.loop_thread.call(self._adopt_call, task, node)  # type: ignore[union-attr]
        except RuntimeError:  # the loop is closed: the pool stopped
            task.fail(PoolClosedError(f"{task.name}() was interrupted: {self.name} shut down"))

    # -- the loop thread --------------------------------------------------------------------------------

    def _adopt_call(self, task: TaskState, node: NodeHandle) -> None:
        """The loop's side of a CALL whose caller stopped reading: register it like any task
        written from a caller's thread, and read the rest of the lane until its answer."""
        self._sent_now(task, node)
        node.read_lane_until(task.id)

    def _sent_now(self, task: TaskState, node: NodeHandle) -> None:
        """The loop's half of `_dispatch_now`: count the task in flight, or queue it again."""
        if not node.register_sent(task):
            return  # already answered, or taken back by the node's loss
        if self._fleet.closing:
            task.fail(PoolClosedError(f"{task.name}() was interrupted: {self.name} is shutting down"))
            return
        if not self._scheduler.holds(node):
            # Lost before the loop heard of the task: the same retry policy as its other tasks.
            node.forget(task.id)
            self._fleet.retry_or_fail(task, node.index)
            self._scheduler.pump()
            return
        self._scheduler.placed(task)
        self._deadlines.arm(task)

    def _submit_on_loop(self, tasks: list[TaskState]) -> None:
        if len(tasks) == 1 and not self._fleet.closing and self._scheduler.place_alone(tasks[0]):
            return  # a lone task, and a node with a free slot: sent without a pump
        for task in tasks:
            if self._fleet.closing:
                task.fail(PoolClosedError(f"{task.name}() was not run: {self.name} is shutting down"))
            else:
                self._scheduler.enqueue(task)
        self._fleet.fail_if_no_node_left()
        self._scheduler.pump()
