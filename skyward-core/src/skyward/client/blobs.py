"""Large arguments, content-addressed: each crosses to a worker once, however many tasks use it.

A task argument of `BLOB_MIN` bytes or more (a dataset a `map` shares, a model's weights) is
pickled once per dispatch call and named by the hash of its bytes (`Blob`). The task's frame
carries a `BlobRef` in its place; the worker's `BlobLedger` (one per worker, beside its
`FunctionLedger`) records which blobs the worker holds, and a blob it lacks is written to it
before the task, in the same locked step. A worker restarted, or one the ledger made drop the
blob to stay within `BLOB_CACHE_BYTES`, is simply sent it again.

What the worker does with them is `skyward.worker.blobs`'.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import attrs

from skyward.payload import dumps
from skyward.wire import Kind, encode
from skyward.worker.blobs import BLOB_CONTROL, BLOB_DATA, BlobRef, blob_key

#: Arguments this large (pickled) or larger travel as blobs, by content key. Read at dispatch.
BLOB_MIN = 1 << 20
#: Local pools pass each task's large arguments through shared memory, which costs less than
#: hashing them; True content-addresses them there too. Read at dispatch.
LOCAL_POOLS = False
#: The most bytes of arguments one worker keeps (1 GiB): beyond it, the least recently used are
#: dropped (and sent again when a task needs one). A blob larger than this alone is still sent.
BLOB_CACHE_BYTES = 1 << 30


@attrs.frozen(eq=False)
class Blob:
    """One argument as it crosses: its key, its BLOB frame (`parts`), and its size in bytes."""

    key: bytes
    parts: list[Any] = attrs.field(repr=False)
    size: int


def make_blob(value: Any) -> Blob:
    """`value` pickled once (large buffers out of band), keyed by its content."""
    data, buffers = dumps(value)
    key = blob_key(data, (b.raw() for b in buffers))
    parts = encode(Kind.BLOB, BLOB_DATA, (key, data, buffers))
    size = len(data) + sum(b.raw().nbytes for b in buffers)
    return Blob(key, parts, size)


def size_hint(value: Any) -> int | None:
    """The bytes `value` holds, where that is known without pickling it (bytes, arrays, tensors)."""
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, memoryview):
        return value.nbytes
    nbytes = getattr(type(value), "nbytes", None)
    if nbytes is not None and hasattr(value, "shape"):
        try:
            found = value.nbytes
        except Exception:  # noqa: BLE001 - a property that fails: size unknown
            return None
        return found if isinstance(found, int) else None
    return None


def as_blobs(
    args: tuple[Any, ...], kwargs: dict[str, Any], cache: dict[Any, Any] | None, *, measure: bool = False
) -> tuple[tuple[Any, ...], dict[str, Any], tuple[Blob, ...]]:
    """`args` and `kwargs` with each large argument replaced by a `BlobRef`, and the blobs.

    Large: `size_hint` says `BLOB_MIN` or more, or, with `measure`, its pickle is that large
    (the caller found the whole task large, and an argument of unknown size may be why).
    `cache` (one dispatch call's) makes a broadcast or a `map` pickle and hash each argument once.
    """
    blobs: dict[bytes, Blob] = {}

    def swap(value: Any) -> Any:
        if isinstance(value, BlobRef):
            return value
        found = cache.get(("blob", id(value))) if cache is not None else None
        if found is None:
            hint = size_hint(value)
            if hint is None and measure:
                hint = _pickled_size(value)
            if hint is None or hint < BLOB_MIN:
                return value
            found = make_blob(value)
            if cache is not None:
                cache[("blob", id(value))] = found
                cache[("held", id(value))] = value  # the id stays this value's for the call
        blobs[found.key] = found
        return BlobRef(found.key)

    new_args = tuple(swap(a) for a in args)
    new_kwargs = {k: swap(v) for k, v in kwargs.items()}
    return new_args, new_kwargs, tuple(blobs.values())


def _pickled_size(value: Any) -> int | None:
    try:
        data, buffers = dumps(value)
    except Exception:  # noqa: BLE001 - the task's own encoding names the culprit
        return None
    return len(data) + sum(b.raw().nbytes for b in buffers)


class BlobLedger:
    """Which blobs one worker holds, by the client's count; it alone decides what the worker drops.

    The same contract as `FunctionLedger` (whose lock covers this ledger's updates and the write
    that carries them out): the worker applies the BLOB frames in the order they were written.
    `staged` are the keys the pool's nodes relayed into this worker's node folder
    (`skyward.client.relay`): the worker is told to adopt those from there instead of being sent
    the bytes.
    """

    __slots__ = ("_held", "_bytes", "_limit", "staged", "sent", "adopted")

    def __init__(self, limit: int | None = None) -> None:
        self._held: OrderedDict[bytes, int] = OrderedDict()  # key -> size, least recently used first
        self._bytes = 0
        self._limit = BLOB_CACHE_BYTES if limit is None else limit
        self.staged: set[bytes] = set()
        #: BLOB frames written to this worker, and blobs it was told to adopt from its node folder.
        self.sent = 0
        self.adopted = 0

    def holds(self, key: bytes) -> bool:
        return key in self._held

    def parts(self, blobs: tuple[Blob, ...]) -> list[Any]:
        """What to write before a task that names `blobs` (the function ledger's lock held)."""
        needed = {blob.key for blob in blobs}
        new: list[Any] = []
        adopt: list[bytes] = []
        for blob in blobs:
            if blob.key in self._held:
                self._held.move_to_end(blob.key)
                continue
            self._held[blob.key] = blob.size
            self._bytes += blob.size
            if blob.key in self.staged:
                self.staged.discard(blob.key)
                adopt.append(blob.key)
                self.adopted += 1
            else:
                new.extend(blob.parts)
                self.sent += 1
        dropped = self._evict(needed)
        if not dropped and not adopt:
            return new
        return [*encode(Kind.BLOB, BLOB_CONTROL, (tuple(dropped), tuple(adopt))), *new]

    def _evict(self, needed: set[bytes]) -> list[bytes]:
        """The least recently used keys to drop to fit the limit, never one the task needs."""
        dropped: list[bytes] = []
        if self._bytes <= self._limit:
            return dropped
        for key in list(self._held):
            if self._bytes <= self._limit:
                break
            if key in needed:
                continue
            self._bytes -= self._held.pop(key)
            dropped.append(key)
        return dropped

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._held)
