"""The pool's collections, on the client: the one copy every node reads and writes.

Every node already talks to the client over its channel, whatever the provider (pipes, an SSH
exec channel), so keeping the state here needs no new port and works where nodes cannot reach
each other. Requests arrive as COLLECTION frames on the pool's event loop thread, and each is
applied there, whole, one after another: that single order is what makes strong consistency
linearizable. A request that must wait (`queue.get`, `lock.acquire`, `barrier.wait`) is parked
and answered later; nothing here blocks the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from skyward.collections import ops
from skyward.collections.sync import CLIENT, PARKED, Sync, Waiter, Who
from skyward.collections.transport import StoreClient
from skyward.errors import ConfigurationError, PoolClosedError, QueueEmptyError
from skyward.payload import Undecodable
from skyward.wire import Frame, Kind

if TYPE_CHECKING:
    from collections import deque

Answer = tuple[bool, Any]


def _dropped(answer: Answer) -> None:
    """Where the answer to a request that wants none goes (an eventual batch)."""
    ok, value = answer
    if not ok:
        structlog.get_logger().warning("skyward.collection_write_failed", error=repr(value))


class CollectionStore:
    """Named dicts, sets, counters and queues, and the locks and barriers (`sync.py`)."""

    def __init__(self, pool: str = "", *, enabled: bool = True) -> None:
        self.pool = pool
        #: False with `Options(cluster=False)`: the pool's nodes run independently, and every
        #: request is refused with an error that says so.
        self.enabled = enabled
        self._data: dict[str, dict[str, Any]] = {kind: {} for kind in ops.DATA_KINDS}
        #: Queue name -> the requests waiting for an item, first come first served.
        self._getters: dict[str, list[Waiter]] = {}
        self._sync = Sync(self._schedule)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self._client: StoreClient | None = None

    # -- the ways in -----------------------------------------------------------------------------

    def serve(self, node: Any) -> None:
        """Answer `node`'s COLLECTION frames from now on (loop thread, as the node starts)."""
        self._loop = asyncio.get_running_loop()
        node.on_collection = self.handle

    def client(self) -> StoreClient:
        """The client's own way in: proxies made inside the pool's `with` block use it."""
        if self._client is None:
            self._client = StoreClient(self)
        return self._client

    def handle(self, node: Any, frame: Frame) -> None:
        """One COLLECTION frame from `node` (loop thread)."""
        rid, payload = frame.id, frame.payload
        reply = self._replier(node, rid) if rid else _dropped
        if isinstance(payload, Undecodable):
            reply((False, payload.explain("A key or set member of a collection", "on the client")))
            return
        task, kind, name, op, args = payload
        self.apply(Who(node.key, node.index, task), rid, kind, name, op, args, reply)

    def submit(self, rid: int, payload: tuple[Any, ...], reply: Callable[[Answer], None]) -> None:
        """A request made on the client itself, from any thread: applied on the loop."""
        loop = self._loop
        if loop is None or self.closed:
            reply((False, PoolClosedError("the pool's collections are gone: the pool is not running")))
            return
        _, kind, name, op, args = payload
        loop.call_soon_threadsafe(self.apply, CLIENT, rid, kind, name, op, args, reply)

    @staticmethod
    def _replier(node: Any, rid: int) -> Callable[[Answer], None]:
        def reply(answer: Answer) -> None:
            if not node.lost:
                node.channel.send(Kind.ANSWER, rid, answer)

        return reply

    # -- applying --------------------------------------------------------------------------------

    def apply(
        self, who: Who, rid: int, kind: str, name: str, op: str, args: tuple[Any, ...],
        reply: Callable[[Answer], None],
    ) -> None:
        """Apply one request and answer it, now or (parked) later."""
        if self.closed:
            reply((False, PoolClosedError("the pool's collections are gone: the pool stopped")))
            return
        if not self.enabled:
            reply((False, ConfigurationError(
                f"sky.{kind or 'collections'}({name!r}): this pool runs with Options(cluster=False), which "
                "turns distributed collections off; leave cluster out (or pass cluster=True) to use them"
            )))
            return
        try:
            result = self._apply(who, rid, kind, name, op, args, reply)
        except Exception as exc:  # noqa: BLE001 - the requester gets the error, raised there
            reply((False, exc))
            return
        if result is not PARKED:
            reply((True, result))

    def _apply(
        self, who: Who, rid: int, kind: str, name: str, op: str, args: tuple[Any, ...],
        reply: Callable[[Answer], None],
    ) -> Any:
        if kind == "lock":
            return self._sync.lock(who, Waiter(who, rid, reply), name, op, args)
        if kind == "barrier":
            return self._sync.barrier(who, Waiter(who, rid, reply), name, op, args)
        if kind == "":
            return self._meta(who, op, args)
        if kind == "queue" and op == "get":
            return self._get(who, Waiter(who, rid, reply), name, *args)
        table = self._data.get(kind)
        if table is None:
            raise ValueError(f"no collection kind {kind!r}")
        state = table.get(name)
        if state is None:
            state = table[name] = ops.new(kind)
        if kind == "queue" and op in ("put", "unget"):
            return self._put(name, state, *args, front=op == "unget")
        return ops.apply(kind, state, op, args)

    def _meta(self, who: Who, op: str, args: tuple[Any, ...]) -> Any:
        if op == "batch":  # an eventual proxy's writes, in the order the node made them
            self._batch(who, args[0])
            return None
        if op == "snapshot":  # refresh an eventual replica, after applying the writes before it
            kind, name, batch = args
            self._batch(who, batch)
            state = self._data[kind].get(name)
            return ops.snapshot(kind, state if state is not None else ops.new(kind))
        if op == "abandon":
            self._abandon(who.key, args[0])
            return None
        if op == "task_done":
            self._sync.task_done(who)
            return None
        raise ValueError(f"no collection operation {op!r}")

    def _batch(self, who: Who, batch: list[tuple[Any, ...]]) -> None:
        for kind, name, op, args in batch:
            try:
                self._apply(who, 0, kind, name, op, args, _dropped)
            except Exception as exc:  # noqa: BLE001 - an eventual write has nobody to raise to
                _dropped((False, exc))

    # -- queues ----------------------------------------------------------------------------------

    def _put(self, name: str, state: deque[Any], value: bytes, front: bool = False) -> None:
        getters = self._getters.get(name)
        if getters:
            getters.pop(0).answer(True, value)  # straight to the first waiting get: FIFO still holds
        elif front:
            state.appendleft(value)  # an item given back by a get that stopped waiting
        else:
            state.append(value)

    def _get(self, who: Who, waiter: Waiter, name: str, timeout: float | None) -> Any:
        state = self._data["queue"].get(name)
        if state:
            return state.popleft()
        if timeout is not None and timeout <= 0:
            raise QueueEmptyError(f"sky.queue({name!r}) is empty")
        self._getters.setdefault(name, []).append(waiter)
        if timeout is not None:
            waiter.timer = self._schedule(timeout, lambda: self._get_timed_out(name, waiter, timeout))
        return PARKED

    def _get_timed_out(self, name: str, waiter: Waiter, timeout: float) -> None:
        getters = self._getters.get(name, [])
        if waiter in getters:
            getters.remove(waiter)
            waiter.timer = None
            waiter.answer(False, QueueEmptyError(f"sky.queue({name!r}) had no item within {timeout:g}s"))

    # -- what ends a requester -------------------------------------------------------------------

    def _abandon(self, key: int, rid: int) -> None:
        for getters in self._getters.values():
            for waiter in [w for w in getters if w.who.key == key and w.rid == rid]:
                getters.remove(waiter)
                waiter.answer(False, RuntimeError("abandoned"))  # lets the node forget it
        self._sync.abandon(key, rid)

    def node_removed(self, node: Any, reason: str) -> None:
        """Worker `node` left the pool (lost, restarted, or let go): nothing waits for it any more,
        its locks are released and its barriers broken (loop thread, from `Fleet._remove`)."""
        for name, getters in self._getters.items():
            self._getters[name] = [w for w in getters if w.who.key != node.key]
        self._sync.node_removed(node.key, node.index, reason)

    def close(self, reason: str = "") -> None:
        """The pool stops: parked requests fail, and the state is dropped."""
        if self.closed:
            return
        error = PoolClosedError(f"{self.pool or 'the pool'} shut down{f' ({reason})' if reason else ''}")
        for getters in self._getters.values():
            for waiter in getters:
                waiter.answer(False, error)
        self._getters.clear()
        self._sync.close(error)
        for table in self._data.values():
            table.clear()
        self.closed = True

    def _schedule(self, delay: float, fn: Callable[[], None]) -> Any:
        assert self._loop is not None
        return self._loop.call_later(delay, fn)
