"""The byte stream between a client and a worker's keeper (`skyward.transport.keeper`): the
frame headers the keeper reads to find frames, its own frame kinds and control lines, and the line
that stands for output it dropped. Kept apart from the keeper's loop, and importable by the client
(`skyward.transport.ssh_link`) without it.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable
from typing import Any

#: The wire's frame header (`skyward.wire.HEADER`): kind, flags, buffers, id, body length.
HEADER = struct.Struct("<BBHQQ")
#: One entry of a frame's buffer table (`skyward.wire.BUFFER_ENTRY`): length, flags.
ENTRY = struct.Struct("<QB")
#: What a client writes first on every attachment: a magic and how many bytes of the keeper's
#: stream it has.
RESUME = struct.Struct("<8sQ")
MAGIC = b"SKYRSM01"
#: Keeper-only frame kinds, outside `skyward.wire.Kind`: ACK (id: bytes of the keeper's stream the
#: client has) and END (the pool closes the worker: its stdin ends once all before it is written).
ACK = 62
END = 63
LOG = 26  # skyward.wire.Kind.LOG
#: Control lines on stderr start with this.
MARK = "::skyward-"

Emit = Callable[[int, int, Any, bool, bool], None]


class Scanner:
    """Cuts a byte stream into frames by their headers; pieces go to `emit(kind, id, piece,
    first, last)`, the header (with its buffer table) as a frame's first piece."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._head = bytearray()
        self._kind = 0
        self._id = 0
        self._left = 0

    def _head_size(self) -> int:
        if len(self._head) < HEADER.size:
            return HEADER.size
        return HEADER.size + HEADER.unpack_from(self._head)[2] * ENTRY.size

    def feed(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            if self._left:
                piece, view = view[: self._left], view[self._left :]
                self._left -= len(piece)
                self._emit(self._kind, self._id, piece, False, not self._left)
                continue
            take = self._head_size() - len(self._head)
            self._head += view[:take]
            view = view[take:]
            if len(self._head) < self._head_size():
                continue
            kind, _flags, nbuf, fid, body = HEADER.unpack_from(self._head)
            sizes = (ENTRY.unpack_from(self._head, HEADER.size + k * ENTRY.size)[0] for k in range(nbuf))
            self._kind, self._id, self._left = kind, fid, body + sum(sizes)
            head, self._head = bytes(self._head), bytearray()
            self._emit(kind, fid, head, True, not self._left)


def dropped_marker(lines: int, hold: int) -> bytes:
    """A LOG frame saying how many lines of output the keeper dropped."""
    text = (
        f"skyward: {lines} lines of output were dropped on the node while the client was away "
        f"(it holds {hold / (1024 * 1024):g} MiB for an absent client)\n"
    )
    body = pickle.dumps(("stderr", text), protocol=5)
    return HEADER.pack(LOG, 0, 0, 0, len(body)) + body


def count_lines(head: bytes, body: bytes) -> int:
    """Lines of one dropped LOG frame (1 when its payload cannot be read here)."""
    try:
        if HEADER.unpack_from(head)[1] & 1:  # skyward.payload.FLAG_LZ4
            import lz4.block

            body = lz4.block.decompress(body)
        _stream, text = pickle.loads(body)
        return max(1, str(text).count("\n"))
    except Exception:  # noqa: BLE001 - only counted
        return 1
