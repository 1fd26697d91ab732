"""Locks and barriers on the client: who holds, who waits, and what a lost node undoes.

Every method runs on the pool's event loop thread, like the rest of the store: nothing here
blocks. A request that must wait (an acquire of a held lock, a barrier short of its count) is
parked as a `Waiter` and answered later, when the condition holds, when its time is up, or when
the node it waits for is gone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import attrs
import structlog

from skyward.errors import BarrierBrokenError, LockTimeoutError

#: What a method returns when it parked the request instead of answering it.
PARKED = object()


@attrs.frozen
class Who:
    """Where a request comes from: a worker (by its scheduler key), its node, and its task."""

    key: int  # the worker's key; -1 for the client itself
    node: int  # the node index, for messages
    task: int = 0  # the task that asked, 0 when not known (a thread the task started)

    def describe(self) -> str:
        if self.key < 0:
            return "the client"
        return f"node {self.node}" + (f" (task {self.task})" if self.task else "")

    def same_holder(self, other: Who) -> bool:
        return self.key == other.key and (self.task == other.task or not self.task or not other.task)


#: Requests made on the client itself (a collection used inside the `with` block).
CLIENT = Who(-1, -1, 0)


@attrs.define(eq=False)
class Waiter:
    """A parked request: answered once, by `answer`."""

    who: Who
    rid: int
    reply: Callable[[tuple[bool, Any]], None]
    timer: Any = None

    def answer(self, ok: bool, value: Any) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.reply((ok, value))


@attrs.define(eq=False)
class _Lock:
    owner: Who | None = None
    owner_rid: int = 0
    waiters: deque[Waiter] = attrs.Factory(deque)


@attrs.define(eq=False)
class _Barrier:
    n: int
    arrivals: list[Waiter] = attrs.Factory(list)
    #: (worker key, task) -> node index: whoever called sky.barrier(name, n) in a task still running.
    members: dict[tuple[int, int], int] = attrs.Factory(dict)
    broken: str | None = None


class Sync:
    """The pool's locks and barriers."""

    def __init__(self, schedule: Callable[[float, Callable[[], None]], Any]) -> None:
        self._schedule = schedule
        self._locks: dict[str, _Lock] = {}
        self._barriers: dict[str, _Barrier] = {}

    # -- locks -----------------------------------------------------------------------------------

    def lock(self, who: Who, waiter: Waiter, name: str, op: str, args: tuple[Any, ...]) -> Any:
        lock = self._locks.setdefault(name, _Lock())
        if op == "acquire":
            (timeout,) = args
            if lock.owner is None:
                lock.owner, lock.owner_rid = who, waiter.rid
                return True
            if lock.owner.task and lock.owner == who:
                raise RuntimeError(
                    f"sky.lock({name!r}) is already held by this task and is not reentrant: "
                    "release it before acquiring it again"
                )
            if timeout is not None and timeout <= 0:
                raise self._timeout_error(name, lock, timeout)
            lock.waiters.append(waiter)
            if timeout is not None:
                waiter.timer = self._schedule(timeout, lambda: self._lock_timed_out(name, waiter, timeout))
            return PARKED
        if op == "release":
            if lock.owner is None:
                raise RuntimeError(f"sky.lock({name!r}).release(): the lock is not held")
            if not lock.owner.same_holder(who):
                raise RuntimeError(
                    f"sky.lock({name!r}).release(): the lock is held by {lock.owner.describe()}, "
                    f"not by {who.describe()}"
                )
            self._grant_next(lock)
            return None
        if op == "locked":
            return lock.owner is not None
        raise ValueError(f"locks have no operation {op!r}")

    def _grant_next(self, lock: _Lock) -> None:
        lock.owner, lock.owner_rid = None, 0
        if lock.waiters:
            waiter = lock.waiters.popleft()
            lock.owner, lock.owner_rid = waiter.who, waiter.rid
            waiter.answer(True, True)

    def _lock_timed_out(self, name: str, waiter: Waiter, timeout: float) -> None:
        lock = self._locks.get(name)
        if lock is None or waiter not in lock.waiters:
            return
        lock.waiters.remove(waiter)
        waiter.timer = None
        waiter.answer(False, self._timeout_error(name, lock, timeout))

    @staticmethod
    def _timeout_error(name: str, lock: _Lock, timeout: float) -> LockTimeoutError:
        holder = lock.owner.describe() if lock.owner is not None else "nobody"
        return LockTimeoutError(
            f"sky.lock({name!r}) was not acquired within {timeout:g}s: it is held by {holder}. "
            f"Give it longer (sky.lock({name!r}, timeout=...)), or make sure its holder releases it "
            "(`with lock:` always does)."
        )

    # -- barriers --------------------------------------------------------------------------------

    def barrier(self, who: Who, waiter: Waiter, name: str, op: str, args: tuple[Any, ...]) -> Any:
        (n,) = args
        barrier = self._barriers.get(name)
        if barrier is None:
            barrier = self._barriers[name] = _Barrier(n)
        if barrier.n != n:
            raise ValueError(
                f"sky.barrier({name!r}, n={n}): this barrier was created with n={barrier.n}; "
                "every participant must pass the same n (or use another name)"
            )
        if barrier.broken is not None:
            raise BarrierBrokenError(barrier.broken)
        barrier.members[who.key, who.task] = who.node
        if op == "join":
            return None
        if op != "wait":
            raise ValueError(f"barriers have no operation {op!r}")
        barrier.arrivals.append(waiter)
        if len(barrier.arrivals) >= barrier.n:
            arrivals, barrier.arrivals = barrier.arrivals, []
            for index, arrived in enumerate(arrivals):
                arrived.answer(True, index)
        return PARKED

    def _break(self, name: str, barrier: _Barrier, why: str) -> None:
        barrier.broken = why
        arrivals, barrier.arrivals = barrier.arrivals, []
        for arrived in arrivals:
            arrived.answer(False, BarrierBrokenError(why))

    # -- what ends a holder or a participant ------------------------------------------------------

    def abandon(self, key: int, rid: int) -> None:
        """A node stopped waiting for request `rid` (its task was cancelled or interrupted)."""
        for name, lock in self._locks.items():
            if lock.owner is not None and lock.owner.key == key and lock.owner_rid == rid:
                self._grant_next(lock)  # granted as it gave up: nobody holds it
            for waiter in [w for w in lock.waiters if w.who.key == key and w.rid == rid]:
                lock.waiters.remove(waiter)
                waiter.answer(False, RuntimeError(f"sky.lock({name!r}): the request was abandoned"))
        for name, barrier in self._barriers.items():
            for arrived in barrier.arrivals:
                if arrived.who.key == key and arrived.rid == rid:
                    barrier.arrivals.remove(arrived)
                    self._break(name, barrier, (
                        f"barrier {name!r} is broken: a participant on {arrived.who.describe()} stopped "
                        "waiting (its task was cancelled or timed out)"
                    ))
                    break

    def task_done(self, who: Who) -> None:
        """Task `who.task` ended: the locks it still holds are released, it takes part in no barrier."""
        for name, lock in self._locks.items():
            if lock.owner is not None and lock.owner.key == who.key and lock.owner.task == who.task:
                structlog.get_logger().warning(
                    "skyward.lock_released_at_task_end", lock=name, node=who.node, task=who.task
                )
                self._grant_next(lock)
        for barrier in self._barriers.values():
            barrier.members.pop((who.key, who.task), None)

    def node_removed(self, key: int, index: int, reason: str) -> None:
        """Worker `key` (of node `index`) left the pool: its locks are released, the others stop
        waiting for it, and every barrier it took part in breaks, naming it."""
        for lock in self._locks.values():
            lock.waiters = deque(w for w in lock.waiters if w.who.key != key)
            if lock.owner is not None and lock.owner.key == key:
                self._grant_next(lock)
        for name, barrier in self._barriers.items():
            taking_part = any(k == key for k, _ in barrier.members) or any(
                w.who.key == key for w in barrier.arrivals
            )
            if not taking_part:
                continue
            barrier.arrivals = [w for w in barrier.arrivals if w.who.key != key]
            barrier.members = {m: n for m, n in barrier.members.items() if m[0] != key}
            self._break(name, barrier, (
                f"barrier {name!r} is broken: node {index}, one of its participants, was lost ({reason}); "
                "no wait on it can complete. Use a new barrier name to synchronise again."
            ))

    def close(self, error: BaseException) -> None:
        """The pool stops: every parked request fails with `error`."""
        for lock in self._locks.values():
            for waiter in lock.waiters:
                waiter.answer(False, error)
        for barrier in self._barriers.values():
            for arrived in barrier.arrivals:
                arrived.answer(False, error)
        self._locks.clear()
        self._barriers.clear()
