"""Calls from an attached Python client (`skyward.client.attach`), run on a pool the server holds.

A script that opens `sky.Compute(name=NAME)` while the server holds NAME sends each dispatch here
as one pickle, `(kind, payload, target)`: `run` (a pending call, and its `target=`), `broadcast`,
`parallel` (a `sky.gather` group), `map` (`(fn, items)`) or `resize` (a node count or
`sky.Nodes`). The server makes the same call on its `Pool` and sends back a pickle of
`("ok", value)` or `("error", exception)`, which the client returns or raises. A call whose
answer is a stream (a generator function's `run`, a `sky.gather(..., stream=True)`) is asked for
with `?stream=1` and answered by `dispatch_stream` as it comes: one length-prefixed frame per item
(`("item", value)`), then `("ok", None)` or `("error", exception)`. Each call is kept in the
pool's history (the store's `runs`: `run: train`, exit code 0 or 1).

A plain call (`fn(x) >> pool`, a function that is not a generator) holds no thread while its
task runs: `dispatch_async` hands it to the pool with `Pool.run_async` and awaits the pool's future
on the event loop, so a thousand calls waiting on their nodes cost the server no thread each.
Loading and pickling, and the kinds without a future form (`broadcast`, `parallel`, `map`,
`resize`, a streamed call's items), run on threads drawn from the calls' own limiter.

Unpickling what a client sent runs code in the server process (and a call then runs code on the
nodes): anyone with the token can run any code as the user who started the server. The token is
the whole of the trust (see docs/server.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anyio.to_thread
import cloudpickle

from skyward.function import PendingFunction, is_generator_function, unwrap_function
from skyward.server.errors import RequestError
from skyward.server.held import Held
from skyward.server.pools import Pools

KINDS = ("run", "broadcast", "parallel", "map", "resize")


def _call(pool: Any, kind: str, payload: Any, target: Any) -> Any:
    if kind == "run":
        value = pool.run(payload, target=target)
        return list(value) if hasattr(value, "__next__") else value
    if kind == "broadcast":
        return pool.broadcast(payload)
    if kind == "parallel":
        value = pool.run_parallel(payload)
        return list(value) if payload.stream else value
    if kind == "resize":
        pool.resize(payload)
        return pool.current_nodes()
    fn, items = payload
    return pool.map(fn, items)


def _named(kind: str, payload: Any) -> str:
    """What the history calls one call: `train`, `gather(train, eval)`, `map(score)`."""
    if kind == "parallel":
        return "gather(" + ", ".join(getattr(p, "name", "?") for p in payload.items) + ")"
    if kind == "map":
        return getattr(payload[0], "__name__", "?")
    if kind == "resize":
        return str(getattr(payload, "desired", payload))
    return str(getattr(payload, "name", "?"))


def _load(pools: Pools, name: str, data: bytes) -> tuple[Any, tuple[str, Any, Any] | bytes]:
    """The pool `name` and the call in `data`, or the pickled error that answers a call the
    server cannot load; a pool that is not ready, or an unknown kind, is the request's error."""
    held, _ = pools.targets(name, "head")
    try:
        kind, payload, target = cloudpickle.loads(data)
    except Exception as error:  # noqa: BLE001 - a function the server cannot load is the caller's error
        return held, cloudpickle.dumps(("error", RuntimeError(
            f"the server could not load the call ({type(error).__name__}: {error}); a function from a "
            "module the server cannot import must be defined in the script, or the module installed"
        )))
    if kind not in KINDS:
        raise RequestError(f"unknown call {kind!r}; one of {', '.join(KINDS)}")
    return held, (kind, payload, target)


def _pickled(kind: str, outcome: tuple[str, Any]) -> bytes:
    try:
        return cloudpickle.dumps(outcome)
    except Exception as error:  # noqa: BLE001 - the value itself does not travel
        return cloudpickle.dumps(("error", RuntimeError(
            f"the result of {kind} cannot be sent back ({type(error).__name__}: {error})"
        )))


class _Accounted:
    """One call in the pool's history and its busy count, from its start to its end (the store's
    writes are buffered: this costs the event loop no disk write)."""

    def __init__(self, pools: Pools, name: str, held: Held, kind: str, payload: Any, target: Any) -> None:
        self.pools, self.name, self.held = pools, name, held
        node = "all" if kind == "broadcast" else "any" if target is None else str(target)
        held.use()
        self.record = pools.store.run_started(name, f"{kind}: {_named(kind, payload)}", [], node)

    def end(self, code: int) -> None:
        self.held.release()
        self.pools.store.touch(self.name)
        self.pools.store.run_ended(self.record, code)


def _awaitable(kind: str, payload: Any) -> bool:
    """Whether the call has a future form: a `run` of a function that is not a generator."""
    return (kind == "run" and isinstance(payload, PendingFunction)
            and not is_generator_function(unwrap_function(payload.fn)))


async def dispatch_async(pools: Pools, name: str, data: bytes, limiter: anyio.CapacityLimiter) -> bytes:
    """Run one pickled call on the pool `name`; the pickled outcome. A plain call awaits the pool's
    future; the rest run on a thread from `limiter` (see the module's doc)."""
    held, call = await anyio.to_thread.run_sync(_load, pools, name, data, limiter=limiter)
    if isinstance(call, bytes):
        return call
    kind, payload, target = call
    accounted = _Accounted(pools, name, held, kind, payload, target)
    code = 1
    try:
        if _awaitable(kind, payload):
            assert held.pool is not None
            future = await anyio.to_thread.run_sync(
                lambda: held.pool.run_async(payload, target=target), limiter=limiter  # type: ignore[union-attr]
            )
            value = await asyncio.wrap_future(future)
        else:
            value = await anyio.to_thread.run_sync(_call, held.pool, kind, payload, target, limiter=limiter)
        outcome: tuple[str, Any] = ("ok", value)
        code = 0
    except Exception as error:  # noqa: BLE001 - raised again in the caller's process
        outcome = ("error", error)
    finally:
        accounted.end(code)
    return await anyio.to_thread.run_sync(_pickled, kind, outcome, limiter=limiter)


def _frame(kind: str, outcome: tuple[str, Any]) -> bytes:
    body = _pickled(kind, outcome)
    return len(body).to_bytes(4, "big") + body


def dispatch_stream(pools: Pools, name: str, data: bytes) -> Iterator[bytes]:
    """Run one pickled streaming call on the pool `name`; its frames, each as its item arrives.
    What is refused (a pool that is not ready) is raised here, before any frame."""
    held, call = _load(pools, name, data)
    if isinstance(call, bytes):
        return iter([len(call).to_bytes(4, "big") + call])
    kind, payload, target = call
    if kind not in ("run", "parallel"):
        raise RequestError(f"a {kind} call is not streamed; send it without ?stream=1")
    return _streamed(pools, name, held, kind, payload, target)


def _streamed(pools: Pools, name: str, held: Any, kind: str, payload: Any, target: Any) -> Iterator[bytes]:
    accounted = _Accounted(pools, name, held, kind, payload, target)
    code = 1
    try:
        items = held.pool.run(payload, target=target) if kind == "run" else held.pool.run_parallel(payload)
        for item in items:
            yield _frame(kind, ("item", item))
        code = 0
        yield _frame(kind, ("ok", None))
    except Exception as error:  # noqa: BLE001 - raised again in the caller's process
        yield _frame(kind, ("error", error))
    finally:
        accounted.end(code)
