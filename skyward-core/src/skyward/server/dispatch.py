"""Calls from an attached Python client (`skyward.client.attach`), run on a pool the server holds.

A script that opens `sky.Compute(name=NAME)` while the server holds NAME sends each dispatch here
as one pickle, `(kind, payload, target)`: `run` (a pending call, and its `target=`), `broadcast`,
`parallel` (a `sky.gather` group) or `map` (`(fn, items)`). The server makes the same call on its
`Pool` and sends back a pickle of `("ok", value)` or `("error", exception)`, which the client
returns or raises. A generator's items and a streamed group's results come back as one list.
Each call is kept in the pool's history (the store's `runs`: `run: train`, exit code 0 or 1).

Unpickling what a client sent runs code in the server, as a script run runs code on the nodes:
both need the token, and the token is the whole of the trust (see docs/server.md).
"""

from __future__ import annotations

import time
from typing import Any

import cloudpickle

from skyward.server.pools import Pools, RequestError

KINDS = ("run", "broadcast", "parallel", "map")


def _call(pool: Any, kind: str, payload: Any, target: Any) -> Any:
    if kind == "run":
        value = pool.run(payload, target=target)
        return list(value) if hasattr(value, "__next__") else value
    if kind == "broadcast":
        return pool.broadcast(payload)
    if kind == "parallel":
        value = pool.run_parallel(payload)
        return list(value) if payload.stream else value
    fn, items = payload
    return pool.map(fn, items)


def _named(kind: str, payload: Any) -> str:
    """What the history calls one call: `train`, `gather(train, eval)`, `map(score)`."""
    if kind == "parallel":
        return "gather(" + ", ".join(getattr(p, "name", "?") for p in payload.items) + ")"
    if kind == "map":
        return getattr(payload[0], "__name__", "?")
    return str(getattr(payload, "name", "?"))


def dispatch(pools: Pools, name: str, data: bytes) -> bytes:
    """Run one pickled call on the pool `name`; the pickled outcome."""
    held, _ = pools.targets(name, "head")  # a pool that is not ready is the request's error
    try:
        kind, payload, target = cloudpickle.loads(data)
    except Exception as error:  # noqa: BLE001 - a function the server cannot load is the caller's error
        return cloudpickle.dumps(("error", RuntimeError(
            f"the server could not load the call ({type(error).__name__}: {error}); a function from a "
            "module the server cannot import must be defined in the script, or the module installed"
        )))
    if kind not in KINDS:
        raise RequestError(f"unknown call {kind!r}; one of {', '.join(KINDS)}")
    held.running += 1
    node = "all" if kind == "broadcast" else "any" if target is None else str(target)
    record = pools.store.run_started(name, f"{kind}: {_named(kind, payload)}", [], node)
    code = 1
    try:
        outcome: tuple[str, Any] = ("ok", _call(held.pool, kind, payload, target))
        code = 0
    except Exception as error:  # noqa: BLE001 - raised again in the caller's process
        outcome = ("error", error)
    finally:
        held.running -= 1
        held.last_used = time.time()
        pools.store.touch(name)
        pools.store.run_ended(record, code)
    try:
        return cloudpickle.dumps(outcome)
    except Exception as error:  # noqa: BLE001 - the value itself does not travel
        return cloudpickle.dumps(("error", RuntimeError(
            f"the result of {kind} cannot be sent back ({type(error).__name__}: {error})"
        )))
