"""Distributed collections: `sky.dict`, `sky.set`, `sky.counter`, `sky.queue`, `sky.barrier`,
`sky.lock`, shared by every node of a pool (docs/collections.md).

One store on the client holds them (`store.py`, with `sync.py` for locks and barriers); tasks hold
proxies (`proxies.py`) whose requests travel on the worker's own channel (`transport.py`; from an
`executor="process"` subprocess through its worker, `bridge.py`), so they work on every provider
and open no port. `eventual.py` is the node-side replica and write buffer of
`consistency="eventual"`; `ops.py` is what each operation does, on the store and on a replica.

The public names resolve on first use (PEP 562): a worker imports `transport` at start, and this
package's `__init__` runs first, so it must not pull in the proxies. It binds the names `dict` and
`set`, and so uses neither builtin.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> (module, its name there).
_NAMES = {
    "dict": ("skyward.collections.proxies", "shared_dict"),
    "set": ("skyward.collections.proxies", "shared_set"),
    **{name: ("skyward.collections.proxies", name) for name in (
        "Barrier", "Counter", "Dict", "Lock", "Queue", "Set", "barrier", "counter", "lock", "queue",
    )},
    **{name: ("skyward.errors", name) for name in (
        "BarrierBrokenError", "LockTimeoutError", "QueueEmptyError",
    )},
}


def __getattr__(name: str) -> Any:
    where = _NAMES.get(name)
    if where is None:
        raise AttributeError(f"module 'skyward.collections' has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


__all__ = sorted(_NAMES)
