"""How a process reaches the pool's store: one request client per process.

- On a worker (`ChannelClient`): requests go to the client as COLLECTION frames on the worker's
  own channel, and answers come back as ANSWER frames, read by whichever task thread reads.
- In an `executor="process"` subprocess (`bridge.BridgeClient`): over a pipe to its worker, which
  forwards them on its channel.
- On the client, inside the pool's `with` block (`StoreClient`): straight to the store, on the
  pool's event loop.

A request is a tuple `(task, kind, name, op, args)`, its answer `(ok, value or exception)`. Each
request has an id; id 0 is a write that wants no answer (an eventual batch). Before any request,
the process's buffered eventual writes are sent, so every request a process makes reaches the
store in the order it made them.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from skyward.collections.eventual import Eventual

#: `task` in a request whose answer depends on who asks (a lock, a barrier): the client that sends
#: it fills in the running task.
OWNED = -1
#: How often a thread waiting for an answer wakes (seconds): a cancel raised into it lands then.
POLL = 0.25

Answer = tuple[bool, Any]

_current: RequestClient | None = None


def install(client: RequestClient | None) -> None:
    """Make `client` this process's way to the store (a worker or a task subprocess, at start)."""
    global _current
    _current = client


def current() -> RequestClient | None:
    """This process's client: its worker's or subprocess's, else the active pool's store on the
    client; None off a pool."""
    if _current is not None:
        return _current
    from skyward import active

    pool = active.current_pool()
    store = getattr(pool, "collections", None) if pool is not None else None
    if store is None or store.closed:
        return None
    return store.client()


class _Pending:
    """One request in flight: a lock its requester waits on, released when the answer is in."""

    __slots__ = ("_lock", "answer", "on_done", "payload")

    def __init__(self, payload: tuple[Any, ...], on_done: Callable[[Answer], None] | None) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self.answer: Answer | None = None
        self.on_done = on_done
        self.payload = payload

    def settle(self, answer: Answer) -> None:
        self.answer = answer
        self._lock.release()
        if self.on_done is not None:
            self.on_done(answer)

    def wait(self) -> Answer:
        while not self._lock.acquire(timeout=POLL):
            pass
        assert self.answer is not None
        return self.answer


def unwrap(answer: Answer) -> Any:
    ok, value = answer
    if ok:
        return value
    raise value


class RequestClient:
    """Requests with ids, and their answers; subclasses say how a request travels (`_send`)."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self.eventual = Eventual(self)
        self._closed: BaseException | None = None
        #: Abandoned `queue.get`s (id -> queue name): an item the store handed one meanwhile goes back.
        self._abandoned_gets: dict[int, str] = {}

    def submit(self, payload: tuple[Any, ...], on_done: Callable[[Answer], None] | None = None) -> int:
        """Send one request; its answer calls `on_done` (any thread). Returns its id."""
        return self._submit(payload, on_done)[0]

    def call(self, payload: tuple[Any, ...]) -> Any:
        """Send a request and wait for its answer; an exception while waiting abandons it."""
        rid, pending = self._submit(payload, None)
        try:
            answer = pending.wait()
        except BaseException:
            self.abandon(rid)
            raise
        return unwrap(answer)

    def _submit(
        self, payload: tuple[Any, ...], on_done: Callable[[Answer], None] | None
    ) -> tuple[int, _Pending]:
        if self._closed is not None:
            raise self._closed
        if self.eventual.used:  # this process's eventual writes reach the store first
            self.eventual.flush()
        rid = next(self._ids)
        pending = self._pending[rid] = _Pending(payload, on_done)
        self._send(rid, self._own(payload))
        return rid, pending

    async def call_async(self, payload: tuple[Any, ...]) -> Any:
        """`call` for a coroutine: the answer resolves a future of the running loop."""
        import asyncio  # here: a worker starts faster without it, and most never need it

        loop = asyncio.get_running_loop()
        future: asyncio.Future[Answer] = loop.create_future()

        def done(answer: Answer) -> None:
            loop.call_soon_threadsafe(_settle_future, future, answer)

        rid = self.submit(payload, done)
        try:
            answer = await future
        except BaseException:
            self.abandon(rid)
            raise
        return unwrap(answer)

    def post(self, payload: tuple[Any, ...]) -> None:
        """Send a request that wants no answer (eventual writes, a notice)."""
        if self._closed is None:
            self._send(0, payload)

    def abandon(self, rid: int) -> None:
        """Stop waiting for `rid`: the store drops it, or gives back what it granted (a lock, and
        here a queue's item: see `answer`)."""
        pending = self._pending.pop(rid, None)
        if pending is None or self._closed is not None:
            return
        _, kind, name, op, _ = pending.payload
        if kind == "queue" and op == "get":
            self._abandoned_gets[rid] = name
        self._send(0, (0, "", "", "abandon", (rid,)))

    def answer(self, rid: int, answer: Answer) -> None:
        """The answer to `rid` arrived (any thread)."""
        pending = self._pending.pop(rid, None)
        if pending is not None:
            pending.settle(answer)
            return
        queue = self._abandoned_gets.pop(rid, None)
        if queue is not None and answer[0]:  # taken for a get nobody waits for: back at the front
            self.post((0, "queue", queue, "unget", (answer[1],)))

    def close(self, error: BaseException) -> None:
        """The way to the store is gone: every request in flight, and every later one, fails."""
        self._closed = error
        pending, self._pending = self._pending, {}
        for item in pending.values():
            item.settle((False, error))

    def _own(self, payload: tuple[Any, ...]) -> tuple[Any, ...]:
        """The payload with its `OWNED` task filled in, where this client knows the task."""
        return payload

    def _send(self, rid: int, payload: tuple[Any, ...]) -> None:
        raise NotImplementedError


def _settle_future(future: Any, answer: Answer) -> None:
    if not future.done():
        future.set_result(answer)


class ChannelClient(RequestClient):
    """A worker's client: requests on its channel, answers from its reader (`Worker.handle`).

    `wake_reader` makes sure some thread reads the answer: with one slot, the thread that reads
    frames may be the one running the task that now waits (see `TaskThreads.release_reader`).
    `current_task` names the task the calling thread runs (0 if none).
    """

    def __init__(
        self, channel: Any, wake_reader: Callable[[], None], current_task: Callable[[], int]
    ) -> None:
        super().__init__()
        self._channel = channel
        self._wake_reader = wake_reader
        self._current_task = current_task
        #: Tasks that hold or held a lock or joined a barrier: the store is told when they end.
        self._owners: set[int] = set()

    def _own(self, payload: tuple[Any, ...]) -> tuple[Any, ...]:
        task = payload[0]
        if task == OWNED:
            task = self._current_task()
            payload = (task, *payload[1:])
        if task:
            self._owners.add(task)
        return payload

    def _send(self, rid: int, payload: tuple[Any, ...]) -> None:
        from skyward.wire import Kind

        if rid:
            self._wake_reader()
        self._channel.send(Kind.COLLECTION, rid, payload)

    def before_outcome(self, task_id: int) -> None:
        """A task's outcome is about to be sent: what it wrote is sent first, and the store hears
        that the task ended if it held a lock or joined a barrier (which it then releases)."""
        self.eventual.flush()
        if task_id in self._owners:
            self._owners.discard(task_id)
            self.post((task_id, "", "", "task_done", ()))


class StoreClient(RequestClient):
    """The client's own client: requests go straight to the store, applied on the pool's loop."""

    def __init__(self, store: Any) -> None:
        super().__init__()
        self._store = store

    def _own(self, payload: tuple[Any, ...]) -> tuple[Any, ...]:
        return (0, *payload[1:]) if payload[0] == OWNED else payload

    def _send(self, rid: int, payload: tuple[Any, ...]) -> None:
        def reply(answer: Answer) -> None:
            if rid:
                self.answer(rid, answer)

        self._store.submit(rid, payload, reply)
