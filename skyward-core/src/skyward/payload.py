"""A frame's payload as bytes and back: pickle protocol 5, lz4 when it pays, `Undecodable` when not.

Small plain data (numbers, strings, containers of them) goes through the standard C pickler;
anything else through cloudpickle (`skyward.pickling`), with large contiguous buffers kept out of
band so `skyward.wire` can send them as they are. lz4 is applied to a body or buffer only when a
sample of it compresses well. The frame format itself (header, buffer table, kinds, decoder) is
`skyward.wire`'s.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

import cloudpickle
import lz4.block

from skyward import pickling
from skyward.errors import SerializationError

#: Pickle buffers smaller than this travel in-band: a separate frame part costs more than the copy.
OUT_OF_BAND_MIN = 64 * 1024
#: Payloads smaller than this are never compressed.
COMPRESS_MIN = 16 * 1024
#: Size of the sample probed before compressing a large buffer.
PROBE_SIZE = 64 * 1024
#: Compress only if the probe shrinks below this fraction of its size.
COMPRESS_RATIO = 0.8

FLAG_LZ4 = 1


def maybe_compress(data: memoryview | bytes, *, probe: bool) -> tuple[bytes | memoryview, int]:
    """`data` lz4-compressed with `FLAG_LZ4`, or as it is with 0 when that would not pay
    (`probe`: judge a large buffer by a sample first, sparing a full pass over random bytes)."""
    size = len(data)
    if size < COMPRESS_MIN:
        return data, 0
    if probe and size > PROBE_SIZE * 2:
        sample = bytes(data[:PROBE_SIZE])
        if len(lz4.block.compress(sample, store_size=False)) > COMPRESS_RATIO * PROBE_SIZE:
            return data, 0
    packed = lz4.block.compress(data, store_size=True)
    if len(packed) > COMPRESS_RATIO * size:
        return data, 0
    return packed, FLAG_LZ4


#: Types that pickle the same with the standard pickler as with cloudpickle.
_ATOMS = frozenset({type(None), bool, int, float, complex, str, bytes})
_CONTAINERS = frozenset({tuple, list, set, frozenset})
#: How many values `is_plain` looks at before it gives up (and cloudpickle is used).
PLAIN_BUDGET = 64


def is_plain(obj: Any) -> bool:
    """Whether `obj` is small plain data (numbers, strings, bytes and containers of them).

    Such a value needs none of cloudpickle's by-value pickling, and the standard C pickler takes
    a few hundred nanoseconds for it where building a cloudpickle pickler takes microseconds:
    that difference is most of the cost of a small task or result.
    """
    budget = PLAIN_BUDGET
    stack = [obj]
    while stack:
        value = stack.pop()
        budget -= 1
        if budget < 0:
            return False
        kind = type(value)
        if kind in _ATOMS:
            continue
        if kind in _CONTAINERS:
            stack.extend(value)
        elif kind is dict:
            stack.extend(value.keys())
            stack.extend(value.values())
        else:
            return False
    return True


def dumps(obj: Any, *, plain: bool = False) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """Pickle `obj` with protocol 5, keeping large contiguous buffers out of band.

    `plain=True` (the caller knows every class in `obj` is importable by name on the other side,
    and its data `is_plain`), or plain data itself, uses the standard pickler; anything else
    goes through cloudpickle, which ships functions and classes of `__main__` by value (and
    torch tensors as their raw memory, out of band: see `skyward.pickling`).
    """
    if plain or is_plain(obj):
        # Plain data holds no object that pickles into a PickleBuffer: nothing goes out of band.
        return pickle.dumps(obj, protocol=5), []
    buffers: list[pickle.PickleBuffer] = []

    def keep_large(buf: pickle.PickleBuffer) -> bool:
        raw = buf.raw()
        if raw.nbytes < OUT_OF_BAND_MIN:
            return True  # in-band
        buffers.append(buf)
        return False

    return pickling.dumps(obj, buffer_callback=keep_large), buffers



class Undecodable:
    """The payload of a frame that arrived whole but could not be unpickled on this side.

    Typically an object of a class whose module only the sender has. The frame's bounds were read
    from its header, so the channel is intact: the decoder hands this over in the payload's place
    and whoever handles the frame answers for it (a task fails with the reason), instead of the
    reading thread dying with the error and every later frame going unread.
    """

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error

    def explain(self, what: str, where: str) -> SerializationError:
        """The error to report: `what` ("the arguments of f()") could not be unpickled `where`."""
        error = SerializationError(
            f"{what} could not be unpickled {where}: {type(self.error).__name__}: {self.error}. "
            "Every class a task takes or returns must be importable on both sides: define it in the "
            "script you run (it is shipped by value), ship its module with Image(includes=[...]), or "
            "install its package on the workers with Image(pip=[...])."
        )
        error.__cause__ = self.error
        return error

    def __repr__(self) -> str:
        return f"Undecodable({self.error!r})"


def decode_body(flags: int, body: bytes | bytearray | memoryview, buffers: Iterable[Any]) -> Any:
    """The payload of a frame, or `Undecodable` when it cannot be unpickled here."""
    try:
        if flags & FLAG_LZ4:
            body = lz4.block.decompress(body)
        return pickle.loads(body, buffers=buffers)
    except Exception as exc:  # noqa: BLE001 - reported by the frame's handler, see Undecodable
        return Undecodable(exc)


def unpack_buffer(flags: int, data: bytearray) -> bytearray:
    if flags & FLAG_LZ4:
        return bytearray(lz4.block.decompress(data))
    return data


def describe_unpicklable(obj: Any) -> str:
    """Name the first part of `obj` that cannot be pickled, for an error a person can act on."""
    try:
        cloudpickle.dumps(obj, protocol=5)
    except Exception as exc:  # noqa: BLE001 - any pickling failure is reported
        return f"{type(obj).__name__} ({exc})"
    return type(obj).__name__


def check_picklable(what: str, obj: Any) -> None:
    """Raise SerializationError naming `what` when `obj` cannot be pickled."""
    try:
        cloudpickle.dumps(obj, protocol=5, buffer_callback=lambda _b: False)
    except Exception as exc:  # noqa: BLE001
        raise SerializationError(
            f"{what} cannot be pickled ({type(obj).__name__}): {exc}. "
            "Everything a task takes, captures or returns is shipped with cloudpickle; "
            "create such objects inside the function instead of passing them in."
        ) from exc
