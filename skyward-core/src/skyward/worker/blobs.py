"""The large arguments a worker was sent, kept by content key, and dropped when its client says so.

A task argument of `skyward.client.blobs.BLOB_MIN` bytes or more does not travel inside its task:
it crosses to each worker once, as a BLOB frame `(key, pickle, buffers)`, and the task carries a
`BlobRef`, which the worker replaces with a fresh copy of the value as it takes the task
(`resolve_task`, as the worker takes the task). The worker keeps each large buffer of the
value in a memory file (`memfd`) and gives every task a private, copy-on-write mapping of it: a
task may change the numpy array it was given, which copies only the pages it writes, and the next
task of the worker still receives the argument as it was sent.

The client decides what each worker keeps (`skyward.client.blobs.BlobLedger`), as it does for
functions: a control frame (BLOB, id 1) names the keys to drop and the keys to adopt, that is, to
read from the node folder where the pool's nodes relayed them among themselves
(`skyward.transport.blob_relay`), checking each file's content against its key before keeping it.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import pickle
import sys
import threading
from collections.abc import Iterable
from typing import Any

import attrs

from skyward.messages import TaskMessage
from skyward.transport.blob_folder import BLOB_DIR

#: A BLOB frame's id: the blob itself, or the control frame (keys to drop, keys to adopt).
BLOB_DATA = 0
BLOB_CONTROL = 1


@attrs.frozen
class BlobStats:
    """What one worker holds: `blobs` kept, their `bytes`, and how many it was `sent` over its
    channel and `adopted` from its node folder so far."""

    blobs: int
    bytes: int
    sent: int
    adopted: int


def blob_key(data: bytes | bytearray | memoryview, buffers: Iterable[Any]) -> bytes:
    """The content key of a pickled argument: its pickle and out-of-band buffers, hashed."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(data)
    for buffer in buffers:
        digest.update(buffer)
    return digest.digest()


def blob_path(key: bytes) -> str:
    """Where a relayed blob lies, relative to the node folder."""
    return os.path.join(BLOB_DIR, key.hex())


class BlobStore:
    """The worker's blobs by key: the pickle and its buffers, unpickled again for every task."""

    def __init__(self) -> None:
        self._held: dict[bytes, tuple[bytes, list[Any]]] = {}
        self._bytes = 0
        self._sent = 0
        self._adopted = 0
        self._lock = threading.Lock()
        global _current
        _current = self

    def receive(self, frame_id: int, payload: tuple[Any, ...]) -> None:
        """A BLOB frame, in arrival order (reader thread): a blob to keep, or drops and adoptions."""
        if frame_id == BLOB_DATA:
            key, data, buffers = payload
            self._keep(key, data, buffers)
            self._sent += 1
            return
        dropped, adopted = payload
        with self._lock:
            for key in dropped:
                gone = self._held.pop(key, None)
                if gone is not None:
                    self._bytes -= _size(*gone)
        for key in adopted:
            self._adopt(key)

    def _keep(self, key: bytes, data: bytes, buffers: list[Any]) -> None:
        kept = [_MemoryFile.of(b) for b in buffers]
        with self._lock:
            old = self._held.get(key)
            if old is not None:
                self._bytes -= _size(*old)
            self._held[key] = (data, kept)
            self._bytes += _size(data, kept)

    def _adopt(self, key: bytes) -> None:
        """Keep the blob the nodes relayed into the node folder, if its content is its key.

        A file that is missing or does not match is left out: the task that names the key then
        fails naming it, rather than running on other bytes."""
        path = blob_path(key)
        try:
            payload = read_blob_file(path)
        except (OSError, ValueError) as exc:
            print(f"skyward: relayed argument {key.hex()} unreadable: {exc}", file=sys.stderr, flush=True)
            return
        finally:
            _remove(path)
        found, data, buffers = payload
        if found != key or blob_key(data, buffers) != key:
            print(f"skyward: relayed argument {key.hex()} is not its key's", file=sys.stderr, flush=True)
            return
        self._keep(key, data, buffers)
        self._adopted += 1

    def value(self, key: bytes) -> Any:
        """A fresh copy of the argument `key`, its large buffers read-only views of the kept ones."""
        held = self._held.get(key)
        if held is None:
            raise LookupError(
                f"argument {key.hex()} is not held by this worker: its node lost it or the relay "
                "that was to bring it failed; dispatch the task again and the client sends it"
            )
        data, buffers = held
        return pickle.loads(data, buffers=[b.private() for b in buffers])

    def stats(self) -> BlobStats:
        return BlobStats(len(self._held), self._bytes, self._sent, self._adopted)


def read_blob_file(path: str) -> tuple[bytes, bytes, list[Any]]:
    """The `(key, pickle, buffers)` of a relayed blob: the file holds its BLOB frame as sent."""
    from skyward.payload import Undecodable
    from skyward.wire import FrameDecoder

    frames: list[Any] = []
    decoder = FrameDecoder(frames.append)
    with open(path, "rb") as file:
        while chunk := file.read(4 << 20):
            decoder.feed(chunk)
    if len(frames) != 1 or isinstance(frames[0].payload, Undecodable):
        raise ValueError(f"{path} does not hold one whole blob")
    return frames[0].payload


class _MemoryFile:
    """One large buffer of a kept argument, and the private copies tasks get of it."""

    __slots__ = ("fd", "nbytes", "data")

    def __init__(self, fd: int, nbytes: int, data: Any) -> None:
        self.fd = fd
        self.nbytes = nbytes
        self.data = data  # the bytes themselves where no memory file could be made

    @classmethod
    def of(cls, buffer: Any) -> _MemoryFile:
        """The buffer's bytes in a memory file (its received copy, which may be a shared-memory
        mapping the sender reuses, is then let go); held as they are where memfd is missing."""
        view = memoryview(buffer).cast("B")
        if view.nbytes == 0 or not hasattr(os, "memfd_create"):
            return cls(-1, view.nbytes, bytes(view))
        fd = os.memfd_create("skyward-argument", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, view.nbytes)
            with mmap.mmap(fd, view.nbytes) as target:
                target[:] = view
        except OSError:
            os.close(fd)
            return cls(-1, view.nbytes, bytes(view))
        return cls(fd, view.nbytes, None)

    def private(self) -> Any:
        """A writable copy for one task: copy-on-write pages of the memory file."""
        if self.fd < 0:
            return bytearray(self.data)
        return mmap.mmap(self.fd, self.nbytes, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)

    def __del__(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)


def _size(data: bytes, buffers: list[Any]) -> int:
    return len(data) + sum(b.nbytes if isinstance(b, _MemoryFile) else memoryview(b).nbytes for b in buffers)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class BlobRef:
    """What a task's frame carries in a large argument's place; the worker puts the argument back
    (`resolve_arguments`) when it takes the task, after every BLOB frame written before it."""

    __slots__ = ("key",)

    def __init__(self, key: bytes) -> None:
        self.key = key

    def __reduce__(self) -> tuple[Any, ...]:
        return BlobRef, (self.key,)

    def __repr__(self) -> str:
        return f"BlobRef({self.key.hex()})"


_current: BlobStore | None = None


def resolve_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`args` and `kwargs` with each `BlobRef` replaced by its argument (LookupError if not held)."""
    store = _current
    if store is None:
        raise LookupError("a task named its arguments by key in a process that keeps no arguments")

    def value(arg: Any) -> Any:
        return store.value(arg.key) if type(arg) is BlobRef else arg

    return tuple(value(a) for a in args), {k: value(v) for k, v in kwargs.items()}


def resolve_task(task: TaskMessage) -> TaskMessage:
    """`task` with each `BlobRef` among its arguments replaced by its argument (LookupError if
    this worker does not hold it)."""
    args, kwargs = resolve_arguments(task.args, task.kwargs)
    return attrs.evolve(task, args=args, kwargs=kwargs)


def stats() -> BlobStats:
    """What this worker holds (a task may call it: the tests do)."""
    if _current is None:
        return BlobStats(0, 0, 0, 0)
    return _current.stats()
