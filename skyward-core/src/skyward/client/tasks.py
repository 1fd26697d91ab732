"""A task as the client tracks it, from dispatch to result, and the iterator a generator task returns."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import queue
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from skyward.messages import RemoteFailure

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from skyward.client.shipping import ShippedFunction

_task_ids = itertools.count(1)
_END = object()


class TaskState:
    """Everything the client needs to send, retry, time out and resolve one task.

    One record from preparation to result: the function travels as the `ShippedFunction` that
    `ship` made (key, bytes, whether it streams), and the frame is encoded once, when the task is
    made. The node running it is named by its key (`worker`), not held: a task outlives the node
    it was sent to when that node is lost and the task runs again elsewhere.

    Its end is counted where its start was (`report_end`, see there), whoever ends it.
    """

    __slots__ = (
        "id", "name", "function", "parts", "target", "timeout", "window", "inputs", "future", "waiter",
        "value", "error", "stream", "collected", "worker", "attempts", "timer", "started_at", "done",
        "prefetch", "call", "report_end", "sent_at", "waits",
    )

    def __init__(
        self,
        *,
        name: str,
        function: ShippedFunction,
        parts: list[Any],
        task_id: int,
        target: int | None,
        timeout: float | None,
        window: int,
        inputs: dict[int, Iterator[Any]],
        waiter: Waiter | None = None,
    ) -> None:
        self.id = task_id
        self.name = name
        self.function = function
        self.parts = parts
        self.target = target
        self.timeout = timeout
        self.window = window
        self.inputs = inputs
        #: How the caller learns the outcome: a Waiter shared by the tasks of one call (a `map` of
        #: 10,000 items has one lock, not 10,000 futures), or else a Future (`>`, streaming gather).
        self.waiter = waiter
        self.future: Future[Any] | None = Future() if waiter is None else None
        self.value: Any = None
        self.error: BaseException | None = None
        generator = function.generator
        # Only the item buffer: the RemoteGenerator handed to the caller is not referenced from here,
        # so dropping it (breaking out of a `for` loop) collects it, which cancels the remote side.
        self.stream: StreamBuffer | None = StreamBuffer() if generator else None
        #: A generator task nobody iterates (`@`, `>`, gather, map) gathers its items into a list,
        #: which becomes its result; `>>` attaches a RemoteGenerator and sets this to None.
        self.collected: list[Any] | None = [] if generator else None
        #: The scheduler key of the worker it was sent to (its node's index with one worker per
        #: node); None while it waits in the queue.
        self.worker: int | None = None
        self.attempts = 0
        self.timer: asyncio.TimerHandle | None = None
        #: When it was written to its worker (the loop's clock).
        self.sent_at = 0.0
        #: When its time limit started: when it was sent, or, for a task sent to wait on its
        #: worker behind the tasks running there (`waits`, see client/node.py), when one of them
        #: ended and it took that slot.
        self.started_at = 0.0
        #: Sent ahead to wait on its worker until a slot there frees; its time limit is not armed yet.
        self.waits = False
        self.done = False
        #: May be sent to a node beyond its slots while the node finishes short tasks (a `map`).
        self.prefetch = False
        #: Sent as a CALL: its caller reads the answer on the node's reply lane (see client/dispatch.py).
        self.call = False
        #: Counts this task's end (success, error type name) where its start was counted: set by
        #: the node that announced it (`NodeHandle.started`), cleared once its end is counted.
        #: A node counts the ends its worker answers itself; every other end (a time limit, a
        #: lost node's task not retried, the pool's exit, a cancel) comes through `resolve` or
        #: `fail`, which call it, so no started task is left counted as running.
        self.report_end: Callable[[TaskState, bool, str], None] | None = None

    @staticmethod
    def next_id() -> int:
        return next(_task_ids)

    @property
    def retryable(self) -> bool:
        """Only a task that has not streamed anything yet can run again without duplicating effects."""
        return not self.inputs and not (self.stream is not None and self.stream.received)

    def resolve(self, value: Any) -> None:
        if self.done:
            return
        self.value = value
        self.done = True
        self._cancel_timer()
        if self.stream is not None:
            self.stream.put(_END)
        if self.future is not None:
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # the caller cancelled it
                self.future.set_result(value)
        else:
            self.waiter.completed(self)  # type: ignore[union-attr]
        if self.report_end is not None:  # ended by the pool, not by its worker's answer
            self._count_end(True, "")

    def fail(self, exc: BaseException) -> None:
        if self.done:
            return
        self.error = exc
        self.done = True
        self._cancel_timer()
        if self.stream is not None:
            self.stream.put(_Raised(exc))
        if self.future is not None:
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # the caller cancelled it
                self.future.set_exception(exc)
        else:
            self.waiter.completed(self)  # type: ignore[union-attr]
        if self.report_end is not None:  # ended by the pool, not by its worker's answer
            self._count_end(False, type(exc).__name__)

    def _count_end(self, success: bool, error: str) -> None:
        """Count this task's end where its start was counted, once: after the caller was told,
        as a worker's answer is."""
        report, self.report_end = self.report_end, None
        if report is not None:
            report(self, success, error)

    def result(self) -> Any:
        """Wait for the outcome here (the caller's thread): the value, or the task's error raised."""
        if self.future is not None:
            return self.future.result()
        self.waiter.wait(self)  # type: ignore[union-attr]
        if self.error is not None:
            raise self.error
        return self.value

    def fail_remote(self, failure: RemoteFailure, node: int | None) -> None:
        self.fail(failure.rebuild(node))

    def _cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class Waiter:
    """Lets one caller thread wait for the tasks of one call, one task at a time, in any order.

    The loop wakes the caller only when the task it waits for completes, so a caller reading a
    `map`'s results in order sleeps and wakes a few times, not once per task. The wake-up is a
    bare lock used as a binary semaphore (held = no wake-up pending): a Condition costs more to
    build than a short task's whole client side, and a lone `>>` builds one Waiter per call.

    No other lock is needed: the completing thread marks the task done before it looks at
    `_awaited`, and the caller names `_awaited` before it looks at `done`, so one of the two
    always sees the other. A wake-up left over from an earlier task only costs the caller one
    more look at `done`.
    """

    __slots__ = ("_wake", "_awaited", "_pending", "_failed")

    def __init__(self) -> None:
        self._wake = threading.Lock()
        self._wake.acquire()
        self._awaited: TaskState | Waiter | None = None
        self._pending = 0  # tasks not done yet, counted by `expect` and `completed`
        self._failed = False

    def expect(self, count: int) -> None:
        """Count `count` more tasks (before they are submitted) for `wait_all`."""
        self._pending += count

    def completed(self, task: TaskState) -> None:
        # The loop thread completes tasks; a lone call's own thread may complete its task instead.
        self._pending -= 1
        if task.error is not None:
            self._failed = True
        awaited = self._awaited
        if awaited is task or (awaited is self and (self._pending <= 0 or self._failed)):
            try:
                self._wake.release()
            except RuntimeError:
                pass  # a wake-up is already pending

    def wait_all(self) -> None:
        """Sleep until every expected task is done, or one failed: one wake-up for a whole `map`,
        where waiting for each task in turn could wake this thread once per task."""
        self._awaited = self
        try:
            while self._pending > 0 and not self._failed:
                self._wake.acquire()
        finally:
            self._awaited = None

    def wait(self, task: TaskState) -> None:
        if task.done:
            return
        self._awaited = task
        try:
            while not task.done:
                self._wake.acquire()
        finally:
            self._awaited = None


class StreamBuffer:
    """The items of a generator task as the loop receives them, until its RemoteGenerator reads them."""

    __slots__ = ("items", "received")

    def __init__(self) -> None:
        self.items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.received = False

    def put(self, item: Any) -> None:
        self.received = True
        self.items.put(item)


class RemoteGenerator:
    """What `gen() >> pool` returns: items as the worker yields them, with bounded buffering.

    The worker may run at most `window` items ahead; every item read here returns a credit. Closing
    the iterator (or breaking out of a `for` loop, which garbage-collects it) cancels the remote
    generator.
    """

    def __init__(self, task: TaskState, grant, cancel) -> None:
        assert task.stream is not None, "only a generator task has a stream"
        self._task = task
        self._grant = grant
        self._cancel = cancel
        self._items = task.stream.items
        self._consumed = 0
        self._finished = False

    def __iter__(self) -> RemoteGenerator:
        return self

    def __next__(self) -> Any:
        if self._finished:
            raise StopIteration
        item = self._items.get()
        if item is _END:
            self._finished = True
            raise StopIteration
        if isinstance(item, _Raised):
            self._finished = True
            raise item.exc
        self._consumed += 1
        if self._consumed >= max(1, self._task.window // 2):
            self._grant(self._consumed)
            self._consumed = 0
        return item

    def close(self) -> None:
        if not self._finished:
            self._finished = True
            self._cancel()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __enter__(self) -> RemoteGenerator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Raised:
    """Marks an error in the item queue, so a yielded exception *object* stays an item."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
