"""Frames and serialization: the one protocol spoken on every channel (pipes, SSH exec channels).

A frame is a fixed header, a table of buffer lengths, a pickle payload and zero or more raw buffers:

    header  <B kind><B flags><H nbuffers><Q id><Q payload_len>
    table   nbuffers x <Q length><B flags>
    payload pickle protocol 5: cloudpickle, or the standard pickler for plain data (lz4 when it pays)
    buffers out-of-band pickle buffers (numpy/torch memory) sent as they are, lz4 only when it pays

Out-of-band buffers let a 100 MB array cross the channel without being copied into the pickle
stream; lz4 runs at well under a GB/s and gains nothing on random floats, so large buffers are
compressed only when a sample of them compresses well.

On a channel whose peer shares this host (Local's pipes), `offload` moves a large body or buffer
into shared memory and the frame carries only a descriptor in its place (`FLAG_SHM`, see
`skyward.transport.shm`); a decoder maps such parts only when given `shm=`. `encode` itself never
does, so frames for SSH are unchanged.
"""

from __future__ import annotations

import enum
import pickle
import struct
from collections.abc import Callable, Iterable
from typing import Any

import cloudpickle
import lz4.block

from skyward import pickling
from skyward.errors import SerializationError

HEADER = struct.Struct("<BBHQQ")
BUFFER_ENTRY = struct.Struct("<QB")

#: Pickle buffers smaller than this travel in-band: a separate frame part costs more than the copy.
OUT_OF_BAND_MIN = 64 * 1024
#: Payloads smaller than this are never compressed.
COMPRESS_MIN = 16 * 1024
#: Bodies up to this size are copied off the decoder's stage rather than viewed in place.
COPY_MAX = 64 * 1024
#: Size of the sample probed before compressing a large buffer.
PROBE_SIZE = 64 * 1024
#: Compress only if the probe shrinks below this fraction of its size.
COMPRESS_RATIO = 0.8

FLAG_LZ4 = 1
#: The body (header flags) or buffer (table flags) is a shared-memory descriptor, not the bytes.
FLAG_SHM = 2


class Kind(enum.IntEnum):
    """What a frame carries. Client -> worker kinds first, then worker -> client."""

    HELLO = 1  # client: instance info, worker config, env, plugins
    TASK = 2  # client: (fn ref, args, kwargs, meta)
    CANCEL = 3  # client: stop task `id`
    ITEM = 4  # client: next item of input stream `id`
    END = 5  # client: input stream `id` is exhausted (payload: None or an exception)
    CREDIT = 6  # client: the consumer of output stream `id` can take `payload` more items
    SHUTDOWN = 7  # client: exit after leaving around_app contexts
    PING = 8
    FUNCTION = 9  # client: (key, pickled function) cached by the worker before tasks that use it
    CALL = 10  # client: a TASK whose caller waits for its answer on the reply lane (transport/lane.py)
    INFO = 11  # client: the node's InstanceInfo changed (the pool was resized); tasks read after see it

    READY = 20  # worker: handshake answer (pid, python)
    RESULT = 21  # worker: task `id` returned payload
    ERROR = 22  # worker: task `id` raised (payload: RemoteFailure)
    YIELD = 23  # worker: generator task `id` produced an item
    DONE = 24  # worker: generator task `id` finished
    PULL = 25  # worker: send `payload` more items of input stream `id`
    LOG = 26  # worker: (stream name, text) captured from fd 1/2
    PONG = 27
    ELSEWHERE = 28  # worker, on the reply lane: the answer to CALL `id` follows its output on the main channel


#: Kind by value: a dict lookup instead of an enum call for every frame decoded.
_KINDS = {kind.value: kind for kind in Kind}


class Frame:
    """A decoded frame: kind, id, the payload object and its raw buffers."""

    __slots__ = ("kind", "id", "payload")

    def __init__(self, kind: Kind, id: int, payload: Any = None) -> None:
        self.kind = kind
        self.id = id
        self.payload = payload

    def __repr__(self) -> str:
        return f"Frame({self.kind.name}, id={self.id})"


def _maybe_compress(data: memoryview | bytes, *, probe: bool) -> tuple[bytes | memoryview, int]:
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


def encode(kind: Kind, id: int, payload: Any = None, *, plain: bool = False) -> list[bytes | memoryview]:
    """Encode one frame as a list of byte chunks ready for a vectored write (no concatenation).

    `plain`: see `dumps`.
    """
    data, buffers = dumps(payload, plain=plain)
    if not buffers and len(data) < COMPRESS_MIN:
        return [HEADER.pack(kind, 0, 0, id, len(data)), data]  # most frames: a header and a small pickle
    body, flags = _maybe_compress(data, probe=True)  # a large random body is not worth a full lz4 pass
    parts: list[bytes | memoryview] = []
    table = bytearray()
    raw_parts: list[bytes | memoryview] = []
    for buf in buffers:
        raw = buf.raw()
        packed, bflags = _maybe_compress(raw, probe=True)
        table += BUFFER_ENTRY.pack(len(packed), bflags)
        raw_parts.append(packed)
    parts.append(HEADER.pack(kind, flags, len(buffers), id, len(body)) + bytes(table))
    parts.append(body)
    parts.extend(raw_parts)
    return parts


def as_kind(parts: list[Any], kind: Kind) -> list[Any]:
    """The parts of one encoded frame, relabelled as `kind` (a TASK sent as a CALL)."""
    head = bytearray(parts[0])
    head[0] = kind
    return [head, *parts[1:]]


def skip_written(parts: list[Any], count: int) -> list[Any]:
    """What is left of `parts` once their first `count` bytes are written (a short `writev`)."""
    for i, part in enumerate(parts):
        size = part.nbytes if isinstance(part, memoryview) else len(part)
        if count < size:
            return [memoryview(part).cast("B")[count:], *parts[i + 1 :]]
        count -= size
    return []


def encode_bytes(kind: Kind, id: int, payload: Any = None) -> bytes:
    """Encode one frame into a single bytes object (tests and small control frames)."""
    return b"".join(bytes(p) for p in encode(kind, id, payload))


def offload(parts: list[Any], put: Callable[[Any], bytes | None], min_size: int) -> list[Any]:
    """`parts` (one or more frames from `encode`, back to back) with every body or buffer of
    `min_size` bytes or more replaced by the descriptor `put` returns for it: a shared-memory
    segment that holds its bytes (`FLAG_SHM`).

    `put` answering None keeps that part in the frame as it is. `parts` itself is not changed: the
    client may send the same encoded task again to another node. Parts that are not frames as
    `encode` cuts them (a header part, a body part, a part per buffer) are sent as they are.
    """
    if len(parts) == 2 and len(parts[1]) < min_size:
        return parts  # the common case: one small frame
    if all(len(part) < min_size for part in parts):
        return parts  # small frames only
    out: list[Any] = []
    i = 0
    while i < len(parts):
        frame = _offload_frame(parts, i, put, min_size)
        if frame is None:
            return parts
        out.extend(frame)
        i += len(frame)
    return out


def _offload_frame(
    parts: list[Any], i: int, put: Callable[[Any], bytes | None], min_size: int
) -> list[Any] | None:
    """The frame whose header is `parts[i]`, its large parts offloaded; None if it is not one."""
    head = parts[i]
    if len(head) < HEADER.size:
        return None
    kind, flags, nbuf, fid, body_len = HEADER.unpack_from(head)
    if (
        kind not in _KINDS
        or len(head) != HEADER.size + nbuf * BUFFER_ENTRY.size
        or len(parts) < i + 2 + nbuf
        or len(parts[i + 1]) != body_len
    ):
        return None
    entries = [BUFFER_ENTRY.unpack_from(head, HEADER.size + k * BUFFER_ENTRY.size) for k in range(nbuf)]
    if any(len(parts[i + 2 + k]) != length for k, (length, _) in enumerate(entries)):
        return None
    body = parts[i + 1]
    if body_len >= min_size and not flags & FLAG_SHM:
        descriptor = put(body)
        if descriptor is not None:
            body, body_len, flags = descriptor, len(descriptor), flags | FLAG_SHM
    table = bytearray()
    buffers: list[Any] = []
    for k, (length, bflags) in enumerate(entries):
        part = parts[i + 2 + k]
        if length >= min_size and not bflags & FLAG_SHM:
            descriptor = put(part)
            if descriptor is not None:
                part, length, bflags = descriptor, len(descriptor), bflags | FLAG_SHM
        table += BUFFER_ENTRY.pack(length, bflags)
        buffers.append(part)
    return [HEADER.pack(kind, flags, nbuf, fid, body_len) + bytes(table), body, *buffers]


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


class FrameDecoder:
    """Incremental, zero-copy frame decoder.

    Callers ask `get_buffer()` for writable memory, read into it (`os.readv`, or asyncio's
    `BufferedProtocol`), and report the count with `buffer_updated(n)`; whole frames go to
    `on_frame`. Small parts are staged in one reusable bytearray; a large out-of-band buffer is
    read straight into its own final bytearray, so a 100 MB array is never copied on arrival.
    """

    BIG = 256 * 1024

    def __init__(
        self,
        on_frame: Callable[[Frame], None],
        stage_size: int = 1 << 20,
        *,
        shm: Callable[[bytes | bytearray], Any] | None = None,
    ) -> None:
        self._on_frame = on_frame
        #: Maps a shared-memory descriptor to the part's memory; None: the channel has no such parts.
        self._shm = shm
        self._stage = bytearray(stage_size)
        self._start = 0
        self._end = 0
        # Frame being assembled.
        self._head: tuple[int, int, int, int, int] | None = None
        self._entries: list[tuple[int, int]] | None = None
        self._body: bytes | None = None
        self._buffers: list[bytearray] = []
        # A large buffer being filled in place.
        self._big: bytearray | None = None
        self._big_got = 0

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        if self._big is not None:
            return memoryview(self._big)[self._big_got :]
        if self._end == len(self._stage):
            pending = self._end - self._start
            if self._start == 0:  # stage full of one part: grow it
                self._stage.extend(bytes(len(self._stage)))
            else:
                self._stage[:pending] = self._stage[self._start : self._end]
                self._start, self._end = 0, pending
        return memoryview(self._stage)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._big is not None:
            self._big_got += nbytes
            if self._big_got == len(self._big):
                big, self._big = self._big, None
                self._add_buffer(big)
            else:
                return
        else:
            self._end += nbytes
        self._parse()

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Push-style entry point (tests, transports that hand over bytes)."""
        view = memoryview(data).cast("B")
        while len(view):
            target = self.get_buffer()
            n = min(len(target), len(view))
            target[:n] = view[:n]
            del target  # release the export before the decoder may grow its stage
            view = view[n:]
            self.buffer_updated(n)

    def _take(self, n: int) -> bytes | None:
        if self._end - self._start < n:
            return None
        data = bytes(self._stage[self._start : self._start + n])  # a copy: no export pins the stage
        self._start += n
        if self._start == self._end:
            self._start = self._end = 0
        return data

    def _parse(self) -> None:
        while True:
            if self._head is None and not self._parse_small():
                return
            if self._head is None:
                raw = self._take(HEADER.size)
                if raw is None:
                    return
                self._head = HEADER.unpack(raw)
                self._entries = None
            kind, flags, nbuf, fid, body_len = self._head
            if self._entries is None:
                raw = self._take(nbuf * BUFFER_ENTRY.size)
                if raw is None:
                    return
                self._entries = [BUFFER_ENTRY.unpack_from(raw, i * BUFFER_ENTRY.size) for i in range(nbuf)]
                self._body = None
                self._buffers = []
            if self._body is None:
                raw = self._take(body_len)
                if raw is None:
                    return
                self._body = raw
            while len(self._buffers) < len(self._entries):
                length, _ = self._entries[len(self._buffers)]
                staged = self._end - self._start
                if staged >= length:
                    self._add_buffer(bytearray(self._take(length)))  # type: ignore[arg-type]
                    continue
                if length < self.BIG:
                    return
                big = bytearray(length)
                big[:staged] = self._stage[self._start : self._end]
                self._start = self._end = 0
                self._big, self._big_got = big, staged
                return
            self._emit()

    def _parse_small(self) -> bool:
        """Decode the whole small frames at the front of the stage straight from it.

        Most frames are a header and a small pickle (a task, a result, a credit); decoding them in
        place skips the copies and bookkeeping of the general path, which is most of a frame's
        cost. Returns whether staged bytes remain for the general path (a frame with buffers or in
        shared memory, or one not fully arrived).
        """
        stage = self._stage
        size = HEADER.size
        while True:
            start = self._start
            staged = self._end - start
            if staged < size:
                if staged == 0:
                    self._start = self._end = 0
                return False
            kind, flags, nbuf, fid, body_len = HEADER.unpack_from(stage, start)
            if nbuf or flags & FLAG_SHM or staged - size < body_len:
                return True
            end = self._start = start + size + body_len
            if body_len < COPY_MAX:
                # A copy of a small body costs less than a view on the stage (and its release).
                payload = decode_body(flags, stage[start + size : end], ())
            else:
                with memoryview(stage) as view:
                    payload = decode_body(flags, view[start + size : end], ())
            self._on_frame(Frame(_KINDS.get(kind) or Kind(kind), fid, payload))

    def _add_buffer(self, data: bytearray) -> None:
        self._buffers.append(data)

    def _emit(self) -> None:
        assert self._head is not None and self._entries is not None and self._body is not None
        kind, flags, _, fid, _ = self._head
        entries, raw, body = self._entries, self._buffers, self._body
        self._head = self._entries = self._body = None
        self._buffers = []
        try:
            if flags & FLAG_SHM or any(bflags & FLAG_SHM for _, bflags in entries):
                payload = self._decode_shared(flags, body, entries, raw)
            else:
                buffers = [unpack_buffer(bflags, buf) for (_, bflags), buf in zip(entries, raw, strict=True)]
                payload = decode_body(flags, body, buffers)
        except Exception as exc:  # noqa: BLE001 - a buffer that will not unpack or map: see Undecodable
            payload = Undecodable(exc)
        self._on_frame(Frame(_KINDS.get(kind) or Kind(kind), fid, payload))

    def _decode_shared(
        self, flags: int, body: bytes, entries: list[tuple[int, int]], raw: list[bytearray]
    ) -> Any:
        """Decode a frame some of whose parts are shared-memory segments: buffers become the
        mappings themselves (the unpickled array lives in it); a body is mapped for the load only."""
        if self._shm is None:
            raise ValueError("a shared-memory frame on a channel that has no shared memory")
        buffers: list[Any] = []
        for (_, bflags), buf in zip(entries, raw, strict=True):
            if bflags & FLAG_SHM:
                mapping = self._shm(buf)
                buffers.append(bytearray(lz4.block.decompress(mapping)) if bflags & FLAG_LZ4 else mapping)
            else:
                buffers.append(unpack_buffer(bflags, buf))
        if not flags & FLAG_SHM:
            return decode_body(flags, body, buffers)
        mapping = self._shm(body)
        with memoryview(mapping) as view:
            return decode_body(flags, view, buffers)
