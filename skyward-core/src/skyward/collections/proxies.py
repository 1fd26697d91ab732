"""The objects a task holds: `sky.dict`, `sky.set`, `sky.counter`, `sky.queue`, `sky.barrier`,
`sky.lock`, each a small proxy that names a collection of the pool's store.

A proxy keeps nothing but its name: every operation is a request to the store (`transport.py`),
or, for a `consistency="eventual"` proxy, a buffered write or a read of the process's replica
(`eventual.py`). Every method has an `_async` twin that awaits the same request without blocking
the event loop it runs on. Values are pickled here, on the node, and stay opaque bytes in the store;
keys and set members must be hashable and importable where the client runs (str, int, tuple...).

A proxy pickles as its name: pass one to a task, or return one, and it names the same collection.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Iterator
from typing import Any

from skyward import pickling
from skyward.collections import transport
from skyward.errors import ConfigurationError, NoActivePoolError
from skyward.payload import is_plain

#: How an operation travels under eventual consistency: buffered, read from the replica, or sent.
WRITE, READ, CALL = "write", "read", "call"
CONSISTENCIES = ("strong", "eventual")


def dumps(value: Any) -> bytes:
    """A value as the store keeps it."""
    if is_plain(value):
        return pickle.dumps(value, protocol=5)
    return pickling.dumps(value)


loads = pickle.loads


def _same(result: Any) -> Any:
    return result


def _nothing(result: Any) -> None:
    return None


def _op(plan: Callable[..., tuple[Any, ...]]) -> Callable[..., tuple[Any, ...]]:
    """Mark a method that returns `(op, args, after, mode)`: the proxy class makes it a method
    that runs the request and one `<name>_async` that awaits it."""
    plan._collection_op = True  # type: ignore[attr-defined]
    return plan


def _sync(plan: Callable[..., tuple[Any, ...]]) -> Callable[..., Any]:
    @functools.wraps(plan)
    def method(self: _Proxy, *args: Any, **kwargs: Any) -> Any:
        op, op_args, after, mode = plan(self, *args, **kwargs)
        return after(self._execute(op, op_args, mode))

    return method


def _async(plan: Callable[..., tuple[Any, ...]]) -> Callable[..., Any]:
    @functools.wraps(plan)
    async def method(self: _Proxy, *args: Any, **kwargs: Any) -> Any:
        op, op_args, after, mode = plan(self, *args, **kwargs)
        if self._eventual and mode != CALL:
            import asyncio  # here: a worker starts faster without it

            return after(await asyncio.to_thread(self._execute, op, op_args, mode))
        try:
            return after(await self._client.call_async((self._owner, self._kind, self.name, op, op_args)))
        finally:
            if self._eventual:
                self._client.eventual.forget(self._kind, self.name)

    method.__name__ = method.__qualname__ = f"{plan.__name__}_async"
    return method


class _Proxy:
    _kind = ""
    #: Whose request it is: OWNED for locks and barriers, whose answers depend on the task asking.
    _owner = 0

    def __init_subclass__(cls) -> None:
        for name, plan in list(vars(cls).items()):
            if getattr(plan, "_collection_op", False):
                setattr(cls, name, _sync(plan))
                setattr(cls, f"{name}_async", _async(plan))

    def __init__(self, name: str, consistency: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigurationError(
                f"sky.{self._kind}(name): the name must be a non-empty string, not {name!r}"
            )
        if consistency is not None and consistency not in CONSISTENCIES:
            raise ConfigurationError(
                f"sky.{self._kind}({name!r}, consistency={consistency!r}): use 'strong' (the default) "
                "or 'eventual'"
            )
        client = transport.current()
        if client is None:
            raise NoActivePoolError(
                f"No active pool: sky.{self._kind}({name!r}) works inside a task running on a pool "
                "(a @sky.function dispatched with >> or @), or on the client inside its "
                "`with sky.Compute(...)` block"
            )
        self.name = name
        self.consistency = consistency or "strong"
        self._eventual = self.consistency == "eventual"
        self._client = client

    def _execute(self, op: str, args: tuple[Any, ...], mode: str) -> Any:
        if self._eventual:
            if mode == WRITE:
                self._client.eventual.write(self._kind, self.name, op, args)
                return None
            if mode == READ:
                return self._client.eventual.read(self._kind, self.name, op, args)
            try:  # a write the store checks (pop, del...): the replica refetches, to show it
                return self._client.call((self._owner, self._kind, self.name, op, args))
            finally:
                self._client.eventual.forget(self._kind, self.name)
        return self._client.call((self._owner, self._kind, self.name, op, args))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.name, self.consistency, self._extra()))

    def _extra(self) -> Any:
        """What besides the name a pickled proxy carries (a barrier's n, a lock's timeout)."""
        return None

    def _restore(self, extra: Any) -> None:
        pass

    def __repr__(self) -> str:
        mode = ", consistency='eventual'" if self._eventual else ""
        return f"sky.{self._kind}({self.name!r}{mode})"


def _rebuild(cls: type[_Proxy], name: str, consistency: str, extra: Any) -> _Proxy:
    """A proxy unpickled (a task's argument, or a result): the same collection, no request sent."""
    proxy = cls.__new__(cls)
    _Proxy.__init__(proxy, name, None if consistency == "strong" else consistency)
    proxy._restore(extra)
    return proxy


def _key(key: Any) -> Any:
    hash(key)  # an unhashable key fails here, as it would in a dict
    return key


class Dict(_Proxy):
    """`sky.dict(name)`: a dict shared by the pool. `d[k]`, `d[k] = v`, `del d[k]`, `k in d`,
    `len(d)`, iteration over its keys, and the methods below."""

    _kind = "dict"

    @_op
    def get(self, key: Any, default: Any = None) -> Any:
        return "get", (_key(key),), lambda r: loads(r[1]) if r[0] else default, READ

    @_op
    def set(self, key: Any, value: Any) -> Any:
        """`d[key] = value`."""
        return "set", (_key(key), dumps(value)), _nothing, WRITE

    @_op
    def delete(self, key: Any) -> Any:
        """`del d[key]`: KeyError if it is absent (always checked by the store)."""
        return "delete", (_key(key),), _nothing, CALL

    @_op
    def contains(self, key: Any) -> Any:
        """`key in d`."""
        return "contains", (_key(key),), _same, READ

    @_op
    def update(self, items: Any = (), **kwargs: Any) -> Any:
        pairs = list(items.items() if hasattr(items, "items") else items) + list(kwargs.items())
        return "update", ([(_key(k), dumps(v)) for k, v in pairs],), _nothing, WRITE

    @_op
    def pop(self, key: Any, default: Any = None) -> Any:
        """Remove `key` and return its value, or `default` when it is absent (atomic)."""
        return "pop", (_key(key),), lambda r: loads(r[1]) if r[0] else default, CALL

    @_op
    def setdefault(self, key: Any, default: Any = None) -> Any:
        """The value of `key`, set to `default` first if absent (atomic: the first writer wins)."""
        return "setdefault", (_key(key), dumps(default)), loads, CALL

    @_op
    def keys(self) -> Any:
        return "keys", (), _same, READ

    @_op
    def values(self) -> Any:
        return "values", (), lambda r: [loads(v) for v in r], READ

    @_op
    def items(self) -> Any:
        return "items", (), lambda r: [(k, loads(v)) for k, v in r], READ

    @_op
    def len(self) -> Any:
        """`len(d)`."""
        return "len", (), _same, READ

    @_op
    def clear(self) -> Any:
        return "clear", (), _nothing, WRITE

    def __getitem__(self, key: Any) -> Any:
        found, value = self._execute("get", (_key(key),), READ)
        if not found:
            raise KeyError(key)
        return loads(value)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: Any) -> None:
        self.delete(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __len__(self) -> int:
        return self.len()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())


class Set(_Proxy):
    """`sky.set(name)`: a set shared by the pool. `v in s`, `len(s)`, iteration, and below."""

    _kind = "set"

    @_op
    def add(self, member: Any) -> Any:
        return "add", (_key(member),), _nothing, WRITE

    @_op
    def discard(self, member: Any) -> Any:
        return "discard", (_key(member),), _nothing, WRITE

    @_op
    def remove(self, member: Any) -> Any:
        """Like `discard`, but KeyError when it is absent (always checked by the store)."""
        return "remove", (_key(member),), _nothing, CALL

    @_op
    def contains(self, member: Any) -> Any:
        return "contains", (_key(member),), _same, READ

    @_op
    def len(self) -> Any:
        return "len", (), _same, READ

    @_op
    def members(self) -> Any:
        """Every member, as a list (a snapshot)."""
        return "members", (), _same, READ

    @_op
    def clear(self) -> Any:
        return "clear", (), _nothing, WRITE

    def __contains__(self, member: Any) -> bool:
        return self.contains(member)

    def __len__(self) -> int:
        return self.len()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.members())


class Counter(_Proxy):
    """`sky.counter(name)`: an integer shared by the pool. `.value`, `int(c)` and below."""

    _kind = "counter"

    @_op
    def get(self) -> Any:
        """The value (`.value`, `int(c)`)."""
        return "get", (), _same, READ

    @_op
    def increment(self, n: int = 1) -> Any:
        """Add `n`; returns the new value (strong), None (eventual: not known yet)."""
        return "add", (_int(n),), _same, WRITE

    @_op
    def decrement(self, n: int = 1) -> Any:
        return "add", (-_int(n),), _same, WRITE

    @_op
    def reset(self, value: int = 0) -> Any:
        return "reset", (_int(value),), _nothing, WRITE

    @property
    def value(self) -> int:
        return self.get()

    async def value_async(self) -> int:
        return await self.get_async()  # type: ignore[attr-defined]

    def __int__(self) -> int:
        return self.get()

    __index__ = __int__


def _int(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"a counter counts in integers, not {type(n).__name__} ({n!r})")
    return n


class Queue(_Proxy):
    """`sky.queue(name)`: a FIFO queue shared by the pool; items come out in the order the store
    received them, whichever node put them."""

    _kind = "queue"

    @_op
    def put(self, item: Any) -> Any:
        return "put", (dumps(item),), _nothing, CALL

    @_op
    def get(self, timeout: float | None = None) -> Any:
        """The next item; waits for one up to `timeout` seconds (None: as long as it takes), then
        raises `sky.QueueEmptyError` (a `queue.Empty`); timeout=0 never waits."""
        if timeout is not None and timeout < 0:
            raise ValueError(f"sky.queue({self.name!r}).get(timeout={timeout}): the timeout must be >= 0")
        return "get", (timeout,), loads, CALL

    @_op
    def qsize(self) -> Any:
        """`len(q)`: how many items wait in it."""
        return "len", (), _same, CALL

    @_op
    def empty(self) -> Any:
        return "len", (), lambda n: n == 0, CALL

    def __len__(self) -> int:
        return self.qsize()


class Barrier(_Proxy):
    """`sky.barrier(name, n)`: `wait()` returns once `n` participants arrived (then it starts a
    new round). A participant counts from `sky.barrier(...)`: if its node is lost before the round
    completes, every waiter raises `sky.BarrierBrokenError` naming that node."""

    _kind = "barrier"
    _owner = transport.OWNED

    def __init__(self, name: str, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigurationError(
                f"sky.barrier({name!r}, n={n!r}): n is how many participants, an int >= 1"
            )
        super().__init__(name)
        self.n = n
        self._client.call((self._owner, self._kind, name, "join", (n,)))

    def _extra(self) -> Any:
        return self.n

    def _restore(self, extra: Any) -> None:
        self.n = extra

    @_op
    def wait(self) -> Any:
        """Wait for the others; returns this arrival's index in the round (0 .. n-1)."""
        return "wait", (self.n,), _same, CALL


class Lock(_Proxy):
    """`sky.lock(name, timeout=30)`: a mutex shared by the pool; `with lock:` holds it. A lock
    still held when its task ends, or whose node is lost, is released."""

    _kind = "lock"
    _owner = transport.OWNED

    def __init__(self, name: str, timeout: float | None = 30) -> None:
        _check_timeout(name, timeout)
        super().__init__(name)
        self.timeout = timeout

    def _extra(self) -> Any:
        return self.timeout

    def _restore(self, extra: Any) -> None:
        self.timeout = extra

    @_op
    def acquire(self, timeout: float | None | object = ...) -> Any:
        """Wait for the lock up to `timeout` seconds (the lock's own by default; None: for ever),
        then raise `sky.LockTimeoutError` naming its holder. Returns True."""
        limit = self.timeout if timeout is ... else timeout
        _check_timeout(self.name, limit)
        return "acquire", (limit,), _same, CALL

    @_op
    def release(self) -> Any:
        return "release", (), _nothing, CALL

    @_op
    def locked(self) -> Any:
        return "locked", (), _same, CALL

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    async def __aenter__(self) -> Lock:
        await self.acquire_async()  # type: ignore[attr-defined]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release_async()  # type: ignore[attr-defined]


def _check_timeout(name: str, timeout: Any) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        raise ConfigurationError(
            f"sky.lock({name!r}, timeout={timeout!r}): a number of seconds >= 0, or None"
        )


def shared_dict(name: str, *, consistency: str | None = None) -> Dict:
    return Dict(name, consistency)


def shared_set(name: str, *, consistency: str | None = None) -> Set:
    return Set(name, consistency)


def counter(name: str, *, consistency: str | None = None) -> Counter:
    return Counter(name, consistency)


def queue(name: str) -> Queue:
    return Queue(name)


def barrier(name: str, n: int) -> Barrier:
    return Barrier(name, n)


def lock(name: str, timeout: float | None = 30) -> Lock:
    return Lock(name, timeout)
