"""The functions a worker was sent, kept by key, and dropped when its client says so.

The client decides what each worker keeps (`skyward.client.shipping.FunctionLedger`): a FUNCTION
frame is `(key, pickled function, keys to drop)`, and the worker applies it in arrival order, so
it holds exactly what the client's ledger records, within its byte bound (256 MiB by default).
A task takes its function when its frame is read, before any later FUNCTION frame can drop it.

A subprocess of `executor="process"` is sent the function's bytes with every task and keeps the
functions it loaded in an LRU of its own (`LoadedFunctions`): a miss there costs an unpickle,
never a failure.

`stats()` says what this process holds; a task may call it (the tests do, to check the bound).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import attrs
import cloudpickle

from skyward.worker.blobs import BlobStore

#: The most bytes of pickled functions an `executor="process"` subprocess keeps loaded (256 MiB).
CHILD_CACHE_BYTES = 256 << 20
#: The most functions such a subprocess keeps loaded, however small they are.
CHILD_CACHE_ENTRIES = 4096


@attrs.frozen
class FunctionStats:
    """What one process holds: `functions` kept, their pickled `bytes`, and the FUNCTION frames
    (or, in a process-executor subprocess, the loads) it has `received` so far."""

    functions: int
    bytes: int
    received: int


class HeldFunction:
    """One function the worker holds: its bytes until loaded (the thread executor then keeps
    only the loaded function), and the function with the plugins' decorators once loaded."""

    __slots__ = ("data", "size", "loaded", "lock")

    def __init__(self, data: bytes) -> None:
        self.data: bytes | None = data
        self.size = len(data)
        self.loaded: tuple[Any, Any] | None = None
        self.lock = threading.Lock()


class ShippedFunctions:
    """The worker's functions by key. `keep_bytes`: the process executor forwards the bytes to
    its subprocesses with every task, so they are kept after loading."""

    def __init__(self, keep_bytes: bool = False) -> None:
        self._held: dict[bytes, HeldFunction] = {}
        self._bytes = 0
        self._keep_bytes = keep_bytes
        self._received = 0
        #: The large arguments this worker was sent, by content key (worker/blobs.py).
        self.blobs = BlobStore()
        global _current
        _current = self

    def receive(self, payload: tuple[Any, ...]) -> None:
        """A FUNCTION frame: drop what the client says, then keep the new function (reader thread)."""
        key, data, *rest = payload
        held = self._held
        for dropped in rest[0] if rest else ():
            gone = held.pop(dropped, None)
            if gone is not None:
                self._bytes -= gone.size
        previous = held.get(key)
        if previous is not None:
            self._bytes -= previous.size
        entry = held[key] = HeldFunction(data)
        self._bytes += entry.size
        self._received += 1

    def get(self, key: bytes) -> HeldFunction | None:
        return self._held.get(key)

    def load(self, entry: HeldFunction, decorate: Callable[[Any], Any]) -> tuple[Any, Any]:
        """The function and the same function in the plugins' decorators: unpickled and decorated
        once per function, on the first task that needs it."""
        loaded = entry.loaded
        if loaded is not None:
            return loaded
        with entry.lock:  # two tasks of a new function: one loads, the other waits for it
            if entry.loaded is None:
                assert entry.data is not None
                fn = cloudpickle.loads(entry.data)
                entry.loaded = (fn, decorate(fn))
                if not self._keep_bytes:
                    entry.data = None
            return entry.loaded

    def stats(self) -> FunctionStats:
        return FunctionStats(len(self._held), self._bytes, self._received)


class LoadedFunctions:
    """A process-executor subprocess's loaded functions: least recently used out, by bytes."""

    def __init__(self, limit: int = CHILD_CACHE_BYTES, entries: int = CHILD_CACHE_ENTRIES) -> None:
        self._held: OrderedDict[bytes, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._limit = limit
        self._entries = entries
        self._received = 0
        global _current
        _current = self

    def get(self, key: bytes, data: bytes, load: Callable[[bytes], Any]) -> Any:
        """The loaded function for `key`, loaded from `data` if it is not kept."""
        held = self._held
        found = held.get(key)
        if found is not None:
            held.move_to_end(key)
            return found[0]
        call = load(data)
        held[key] = (call, len(data))
        self._bytes += len(data)
        self._received += 1
        while len(held) > 1 and (self._bytes > self._limit or len(held) > self._entries):
            _, (_, size) = held.popitem(last=False)
            self._bytes -= size
        return call

    def stats(self) -> FunctionStats:
        return FunctionStats(len(self._held), self._bytes, self._received)


_current: ShippedFunctions | LoadedFunctions | None = None


def stats() -> FunctionStats:
    """What this process holds: the worker's functions, or a process-executor subprocess's."""
    if _current is None:
        return FunctionStats(0, 0, 0)
    return _current.stats()
