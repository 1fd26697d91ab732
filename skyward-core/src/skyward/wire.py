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

The payload's own encoding (which pickler, lz4 or not, `Undecodable`) is `skyward.payload`'s.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from typing import Any

import lz4.block

from skyward.payload import (
    COMPRESS_MIN,
    FLAG_LZ4,
    Undecodable,
    decode_body,
    dumps,
    maybe_compress,
    unpack_buffer,
)

__all__ = [
    "BUFFER_ENTRY", "COPY_MAX", "FLAG_SHM", "HEADER", "Frame", "FrameDecoder", "Kind", "as_kind", "encode",
    "encode_bytes", "offload", "skip_written",
]

HEADER = struct.Struct("<BBHQQ")
BUFFER_ENTRY = struct.Struct("<QB")
#: Bodies up to this size are copied off the decoder's stage rather than viewed in place.
COPY_MAX = 64 * 1024
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
    FUNCTION = 9  # client: (key, pickled function, keys the worker drops) before tasks using it
    CALL = 10  # client: a TASK whose caller waits for its answer on the reply lane (transport/lane.py)
    INFO = 11  # client: the node's InstanceInfo changed (the pool was resized); tasks read after see it
    BLOB = 12  # client: a large argument (id 0) or the keys to drop and adopt (id 1): worker/blobs.py
    CHECK = 16  # client: run health check `id` (payload: the check function) beside the tasks
    ANSWER = 14  # client: collection request `id`'s answer, (ok, value or exception) (skyward/collections)

    READY = 20  # worker: handshake answer (pid, python)
    RESULT = 21  # worker: task `id` returned payload
    ERROR = 22  # worker: task `id` raised (payload: RemoteFailure)
    YIELD = 23  # worker: generator task `id` produced an item
    DONE = 24  # worker: generator task `id` finished
    PULL = 25  # worker: send `payload` more items of input stream `id`
    LOG = 26  # worker: (stream name, text) captured from fd 1/2
    PONG = 27
    ELSEWHERE = 28  # worker, on the reply lane: CALL `id`'s answer follows its output on the main channel
    HEALTH = 36  # worker: health check `id`'s answer (payload: (healthy, detail))
    COLLECTION = 34  # worker: collection request `id` (0: wants no answer): (task, kind, name, op, args)
    METRICS = 40  # worker: a batch of the node's samples, [(name, value, unit, time)] (worker/telemetry.py)


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

def encode(kind: Kind, id: int, payload: Any = None, *, plain: bool = False) -> list[bytes | memoryview]:
    """Encode one frame as a list of byte chunks ready for a vectored write (no concatenation).

    `plain`: see `dumps`.
    """
    data, buffers = dumps(payload, plain=plain)
    if not buffers and len(data) < COMPRESS_MIN:
        return [HEADER.pack(kind, 0, 0, id, len(data)), data]  # most frames: a header and a small pickle
    body, flags = maybe_compress(data, probe=True)  # a large random body is not worth a full lz4 pass
    parts: list[bytes | memoryview] = []
    table = bytearray()
    raw_parts: list[bytes | memoryview] = []
    for buf in buffers:
        raw = buf.raw()
        packed, bflags = maybe_compress(raw, probe=True)
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
