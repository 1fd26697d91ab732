"""What a worker's frames do to its node handle: the receiving half of `NodeHandle`.

Kept apart from the sending half (`client/node.py`) because it is a job of its own: an answer
frees the task's slot, starts the task that waited for it, feeds the node's timing, and ends and
counts the task, once, whichever way it ended; the worker's output lines, its requests for the
items of an iterator argument, its health and collection frames go where the pool wants them; and
a payload that would not unpickle here fails only what it answers. `NodeFrames` is a mixin: its
methods run on the handle's own state, on the loop thread, with nothing between a frame and them.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from skyward.client import telemetry
from skyward.client.deadlines import COARSE_TIMEOUT
from skyward.observe.events import ErrorReported, Log, TaskCompleted
from skyward.payload import Undecodable
from skyward.wire import Frame, Kind

if TYPE_CHECKING:
    import asyncio

    from skyward.client.node_timing import NodeTiming
    from skyward.client.tasks import TaskState
    from skyward.messages import RemoteFailure
    from skyward.observe.tally import TaskTally
    from skyward.task.instance import InstanceInfo
    from skyward.transport.base import Channel


class NodeStartError(RuntimeError):
    pass


class NodeFrames:
    """The handle's frame handler (`on_frame`) and the ends of tasks it counts (`_completed`)."""

    # The handle's state these methods work on (set in `NodeHandle.__init__`).
    index: int
    pool: str
    info: InstanceInfo
    channel: Channel
    emit: Callable[[Any], None]
    inflight: dict[int, TaskState]
    sent_now: dict[int, TaskState]
    stuck: set[int]
    waiting: deque[TaskState]
    timing: NodeTiming
    on_start: Callable[[TaskState], Any]
    on_health: Callable[[int, Any], None] | None
    on_collection: Callable[[Any, Frame], None] | None
    _loop: asyncio.AbstractEventLoop
    _ready_future: asyncio.Future[Any] | None
    _on_free: Callable[[TaskState | None], None]
    _listens: Callable[[type[Any]], bool]
    _tally: TaskTally | None
    _partial: dict[str, str]

    if TYPE_CHECKING:  # the handle's, on the sending side

        def started(self, task: TaskState) -> None: ...
        def cancel(self, task_id: int) -> None: ...
        def ping(self) -> None: ...

    def _on_frame(self, frame: Frame) -> None:
        kind = frame.kind
        if isinstance(frame.payload, Undecodable):
            self._undecodable(frame)
        elif kind is Kind.RESULT:
            task = self._finish(frame.id)
            if task is not None:
                task.resolve(frame.payload)
                self._completed(task, True)
        elif kind is Kind.ERROR:
            if frame.id == 0:
                self._worker_failed(frame.payload)
                return
            task = self._finish(frame.id)
            if task is not None:
                task.fail_remote(frame.payload, self.index)
                self._completed(task, False, frame.payload.type_name)
        elif kind is Kind.YIELD:
            task = self.inflight.get(frame.id)
            if task is not None and task.collected is not None:
                task.collected.append(frame.payload)
                task.stream.received = True  # type: ignore[union-attr]
                self.channel.send(Kind.CREDIT, task.id, 1)
            elif task is not None and task.stream is not None:
                task.stream.put(frame.payload)
        elif kind is Kind.DONE:
            task = self._finish(frame.id)
            if task is not None and not task.done:  # done: an item failed to arrive (_undecodable)
                task.resolve(task.collected)
                self._completed(task, True)
        else:
            self._on_other(frame)

    def _on_other(self, frame: Frame) -> None:
        """A frame that answers no task: the worker's requests, output, readiness and reports."""
        kind = frame.kind
        if kind is Kind.PULL:
            self._pull(frame.id, frame.payload)
        elif kind is Kind.LOG:
            stream, text = frame.payload
            self._log(stream, text)
        elif kind is Kind.READY:
            if self._ready_future is not None and not self._ready_future.done():
                self._ready_future.set_result(frame.payload)
        elif kind is Kind.HEALTH:
            if self.on_health is not None:
                self.on_health(frame.id, frame.payload)
        elif kind is Kind.METRICS:
            telemetry.emit_batch(self, frame.payload)  # type: ignore[arg-type]
        elif kind is Kind.COLLECTION and self.on_collection is not None:
            self.on_collection(self, frame)
        elif kind is Kind.PONG:
            self.timing.pong(self._loop.time())

    def _undecodable(self, frame: Frame) -> None:
        """A frame whose payload would not unpickle here (see `Undecodable`): the task it answers
        fails with the reason, and the node goes on serving."""
        kind = frame.kind
        if kind is Kind.YIELD:
            task = self.inflight.get(frame.id)
            if task is not None and not task.done:
                task.report_end = None  # its end is counted here; its DONE then counts nothing
                self._fail_undecodable(task, frame)
                self.cancel(task.id)  # its DONE still comes, and frees the slot
        elif kind is Kind.RESULT or kind is Kind.ERROR or kind is Kind.DONE:
            task = self._finish(frame.id)
            if task is not None:
                self._fail_undecodable(task, frame)
        elif kind is Kind.COLLECTION and self.on_collection is not None:
            self.on_collection(self, frame)  # the store answers the request with the reason
        elif kind is Kind.READY:
            if self._ready_future is not None and not self._ready_future.done():
                error = frame.payload.explain(f"Node {self.index}'s handshake", "here, on the client")
                self._ready_future.set_exception(error)
        else:
            structlog.get_logger().warning(
                "skyward.frame_undecodable", node=self.index, frame=repr(frame),
                error=repr(frame.payload.error),
            )

    def _fail_undecodable(self, task: TaskState, frame: Frame) -> None:
        what = {Kind.YIELD: "An item yielded by", Kind.ERROR: "The error raised by"}.get(
            frame.kind, "The return value of"
        )
        task.fail(frame.payload.explain(f"{what} {task.name}()", "here, on the client"))
        self._completed(task, False, "SerializationError")

    def _worker_failed(self, failure: RemoteFailure) -> None:
        """A failure of the worker itself rather than of a task: at start, the node's start fails;
        later (a plugin's context failed as the worker left it) it is reported as an `ErrorReported`."""
        if self._ready_future is not None and not self._ready_future.done():
            error = NodeStartError(f"node {self.index}'s worker failed to start:\n{failure.traceback}")
            self._ready_future.set_exception(error)
            return
        structlog.get_logger().warning("skyward.worker_error", node=self.index, error=failure.message)
        self.emit(ErrorReported(message=failure.message, node=self.index, pool=self.pool))

    def _finish(self, task_id: int) -> TaskState | None:
        """Free the slot of the task an answer is for, and return the task for the answer to end
        and count; None when there is nothing left to end: the pool ended it first (a time limit,
        its exit, a cancel) and counted its end then, so counting this answer too would count the
        task twice."""
        if task_id in self.stuck:
            self.stuck.discard(task_id)
            if self.waiting:
                self._start_next(self._loop.time())
            self._on_free(None)
            return None
        task = self.inflight.pop(task_id, None)
        if task is None:
            task = self.sent_now.pop(task_id, None)
            if task is not None and not task.call and not task.done:
                self.started(task)  # answered before the loop registered it: announced here, first
        if task is None:
            return None
        now = self._loop.time()
        if task.waits:  # answered before the slot it waited for was seen to free
            self._unwait(task)
        elif self.waiting:  # its slot frees for the first task waiting there
            self._start_next(now)
        timing = self.timing
        if now > timing.until and not self.inflight and timing.ping_at is None and not self.sent_now:
            self.ping()  # idle, and not sampled for a while (see `ping`)
        timing.answered(now, task.sent_at, task.function.key)  # a sample of the node's pace
        self._on_free(task)
        if task.done:
            return None
        task.report_end = None  # counted by the caller, as the worker answered (`_completed`)
        return task

    def _start_next(self, now: float) -> None:
        """A slot freed on the worker: the first task waiting there starts in it, and its time
        limit with it (a long limit is read by the deadlines' sweep from `started_at`; a short
        one has its own timer, armed now). A cancelled one takes the slot too, answered at once."""
        task = self.waiting.popleft()
        task.waits = False
        task.started_at = now
        timeout = task.timeout
        if timeout is not None and timeout < COARSE_TIMEOUT and not task.done:
            self.on_start(task)

    def _unwait(self, task: TaskState) -> None:
        task.waits = False
        with contextlib.suppress(ValueError):
            self.waiting.remove(task)

    def _completed(self, task: TaskState, success: bool, error: str = "") -> None:
        """Count `task`'s end: its worker's answer, or an end the pool gave it (`TaskState.report_end`,
        on whichever thread ended it)."""
        if success and not self._listens(TaskCompleted):
            if self._tally is not None:
                self._tally.finish(True)
            return  # a failure is built whatever listens: the console shows every failure
        self.emit(
            TaskCompleted(
                task_id=task.id, name=task.name, node=self.index, success=success,
                duration=self._loop.time() - task.started_at, error=error, pool=self.pool,
            )
        )

    def _pull(self, stream_id: int, count: int) -> None:
        """The worker wants `count` more items of an iterator argument: read them off the loop."""
        for task in self.inflight.values():
            source = task.inputs.get(stream_id)
            if source is not None:
                self._loop.run_in_executor(None, self._feed, stream_id, source, count)
                return

    def _feed(self, stream_id: int, source: Any, count: int) -> None:
        for _ in range(count):
            try:
                item = next(source)
            except StopIteration:
                self._loop.call_soon_threadsafe(self.channel.send, Kind.END, stream_id, None)
                return
            except BaseException as exc:  # noqa: BLE001 - the worker's loop re-raises it
                self._loop.call_soon_threadsafe(self.channel.send, Kind.END, stream_id, exc)
                return
            self._loop.call_soon_threadsafe(self.channel.send, Kind.ITEM, stream_id, item)

    def _log(self, stream: str, text: str) -> None:
        text = self._partial[stream] + text
        *lines, rest = text.split("\n")
        self._partial[stream] = rest
        for line in lines:
            self.emit(Log(instance=self.info, node=self.index, line=line, stream=stream, pool=self.pool))

    def flush_logs(self) -> None:
        for stream, rest in self._partial.items():
            if rest:
                self.emit(Log(instance=self.info, node=self.index, line=rest, stream=stream, pool=self.pool))
        self._partial = {"stdout": "", "stderr": ""}
