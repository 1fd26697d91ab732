"""How a task's function travels: its pickled bytes, their content key, and whether it streams.

cloudpickle ships a function either by reference (module and name, for a function the worker can
import) or by value (code, closure and the globals it uses, for `__main__`, notebooks, closures).
By-value bytes capture the globals as they are at dispatch: a global changed between two calls
reaches the second one. They are made again unless everything they capture is the very object it
was last time and cannot change in place (`skyward.client.captures`: numbers, strings, tuples of
them, modules, importable functions): then the last bytes are reused, which is what a script's
sequential loop of `>>` mostly hits. A function capturing a list, a dict or an array is pickled at
every dispatch (a `map` pickles once for all its items). By-reference bytes depend only on the
name, so they are computed once per function and reused.

A worker keeps the functions it was sent, by key, so a function travels to it once. What it keeps
is bounded (`FunctionLedger`): the client decides what each worker drops, and says so in the
FUNCTION frames it sends.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
import weakref
from collections import OrderedDict
from typing import Any

import attrs
import cloudpickle

from skyward.client.blobs import Blob, BlobLedger
from skyward.client.captures import captures, same
from skyward.function import is_generator_function
from skyward.messages import function_key, pickle_function
from skyward.wire import Kind, encode

#: The most bytes of pickled functions one worker keeps (256 MiB). Beyond it, the functions
#: least recently used are dropped, and sent again when a task needs one. Read when a node
#: joins the pool: set it before the pool starts to change it.
FUNCTION_CACHE_BYTES = 256 << 20
#: The most functions one worker keeps, however small they are.
FUNCTION_CACHE_ENTRIES = 4096


@attrs.frozen
class ShippedFunction:
    key: bytes  # content address: the worker caches the unpickled function under it
    data: bytes
    generator: bool
    #: One task's large arguments (`skyward.client.blobs`): a task's own copy of its function
    #: carries them, so that the ledger writes what the worker lacks in the same step.
    blobs: tuple[Blob, ...] = ()


_by_reference: weakref.WeakKeyDictionary[Any, ShippedFunction] = weakref.WeakKeyDictionary()


#: By-value functions last shipped, by code object: what they captured and the bytes it made.
_by_value: OrderedDict[types.CodeType, tuple[list[Any], ShippedFunction]] = OrderedDict()
_by_value_lock = threading.Lock()
#: How many by-value functions `_by_value` remembers (the least recently shipped go first), and
#: the most bytes of pickles it keeps: a larger function is pickled at every dispatch.
BY_VALUE_ENTRIES = 256
BY_VALUE_BYTES = 64 << 20
_by_value_bytes = [0]


def ship(fn: Any, name: str) -> ShippedFunction:
    """The bytes a worker needs to run `fn` (pickled now, or reused when they cannot change)."""
    try:
        shipped = _by_reference.get(fn)
    except TypeError:  # not weak-referenceable (a C function, a callable without __weakref__)
        shipped = None
    if shipped is not None and pickled_by_reference(fn):  # still: its module may since be by value
        return shipped
    by_reference = pickled_by_reference(fn)
    captured = None
    if not by_reference and type(fn) is types.FunctionType:
        captured = captures(fn, pickled_by_reference)
    if captured is not None:
        with _by_value_lock:
            last = _by_value.get(fn.__code__)
        if last is not None and same(last[0], captured):
            return last[1]
    data = pickle_function(fn, name)
    shipped = ShippedFunction(function_key(data), data, is_generator_function(fn))
    if by_reference:
        with contextlib.suppress(TypeError):  # not weak-referenceable: pickled again next time
            _by_reference[fn] = shipped
    elif captured is not None and len(data) <= BY_VALUE_BYTES // 4:
        _remember(fn.__code__, captured, shipped)
    return shipped


def _remember(code: types.CodeType, captured: list[Any], shipped: ShippedFunction) -> None:
    """Keep `shipped` for the next dispatch of `code`, within `BY_VALUE_ENTRIES` and `BY_VALUE_BYTES`."""
    with _by_value_lock:
        old = _by_value.pop(code, None)
        if old is not None:
            _by_value_bytes[0] -= len(old[1].data)
        _by_value[code] = (captured, shipped)
        _by_value_bytes[0] += len(shipped.data)
        while len(_by_value) > BY_VALUE_ENTRIES or _by_value_bytes[0] > BY_VALUE_BYTES:
            _, (_, dropped) = _by_value.popitem(last=False)
            _by_value_bytes[0] -= len(dropped.data)


def pickled_by_reference(fn: Any) -> bool:
    """Whether cloudpickle ships `fn` as module + name: the same rule cloudpickle applies.

    A function of an importable module other than `__main__`, found under its qualified name,
    and whose module was not registered with `cloudpickle.register_pickle_by_value`.
    """
    module_name = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module_name or not qualname or module_name == "__main__" or "<locals>" in qualname:
        return False
    by_value = cloudpickle.list_registry_pickle_by_value()
    if module_name in by_value or (
        by_value and any(module_name.startswith(name + ".") for name in by_value)
    ):
        return False
    module = sys.modules.get(module_name)
    if module is None:
        return False
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return obj is fn


class FunctionLedger:
    """Which functions one worker holds: the client's record, and the only say in what it drops.

    A worker keeps the functions it was sent, so that a task names its function by key. Kept for
    ever, 2,000 distinct closures of 1 MB each would hold 2 GB on the worker. The ledger keeps
    the worker's functions within `limit` bytes and `entries` functions, least recently used
    first out. The client makes every decision, and the worker only carries them out: a FUNCTION
    frame names the keys the worker drops as it stores the new function (`ship`). Both sides then
    agree by construction, because the worker applies the drops in the order the frames arrive,
    which is the order the client wrote them in: writes to one worker happen under `lock`, with
    the ledger updated in the same step (`NodeHandle.dispatch`, `NodeHandle.send_now`).

    Two other designs were weighed. The worker could evict by itself while the client mirrors its
    LRU; but a frame the worker cannot decode (a task whose arguments fail to unpickle there)
    would touch a key on one side only, and the two would drift apart until a task named a
    function the worker had dropped. Or the worker could answer "unknown function" and the client
    send both again; that is a round trip and a new frame kind, and a CALL answered on the reply
    lane would need its own retry path. Here a miss costs nothing but the FUNCTION frame, a hit
    costs a dict move, and there is no round trip.

    A function larger than `limit` on its own is still sent; it is the only one the worker
    keeps until the next function arrives. The worker therefore holds at most
    `max(limit, the largest function)` bytes of functions.
    """

    __slots__ = ("lock", "_held", "_bytes", "_limit", "_entries", "shipped", "blobs")

    def __init__(self, limit: int | None = None, entries: int | None = None) -> None:
        #: Held across the ledger's update and the write that carries it out.
        self.lock = threading.Lock()
        self._held: OrderedDict[bytes, int] = OrderedDict()  # key -> size, least recently used first
        self._bytes = 0
        self._limit = FUNCTION_CACHE_BYTES if limit is None else limit
        self._entries = FUNCTION_CACHE_ENTRIES if entries is None else entries
        #: FUNCTION frames written to this worker (a dropped function sent again counts again).
        self.shipped = 0
        #: The large arguments the worker holds (under the same lock).
        self.blobs = BlobLedger()

    def parts(self, function: ShippedFunction, task: list[Any]) -> list[Any]:
        """What to write for a task of `function` (lock held): its frame's `task` parts, after
        the FUNCTION frame if the worker does not hold the function, and the BLOB frames of the
        task's large arguments it does not hold. Either way the function is now the worker's most
        recently used."""
        if function.blobs:
            task = [*self.blobs.parts(function.blobs), *task]
        try:
            self._held.move_to_end(function.key)
        except KeyError:
            return [*self.ship(function), *task]
        return task

    def ship(self, function: ShippedFunction) -> list[Any]:
        """The FUNCTION frame that gives the worker `function` and names what it drops to make
        room (lock held): write it before the task, in the same locked step."""
        size = len(function.data)
        held = self._held
        held[function.key] = size
        self._bytes += size
        dropped: list[bytes] = []
        while len(held) > 1 and (self._bytes > self._limit or len(held) > self._entries):
            key, old = held.popitem(last=False)
            self._bytes -= old
            dropped.append(key)
        self.shipped += 1
        return encode(Kind.FUNCTION, 0, (function.key, function.data, tuple(dropped)))

    @property
    def held_bytes(self) -> int:
        """The bytes of the functions the worker holds, by the client's count."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._held)
