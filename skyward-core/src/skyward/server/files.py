"""What `sky compute upload|download` runs: a tar.gz archive packed or unpacked, in chunks.

Files travel as one gzipped tar in each direction, so a folder keeps its layout and permissions,
and never whole in memory: the client writes the archive to a temporary file and sends it as the
request's body; the server spools it to a temporary file and streams it to each node as a task's
iterator argument (`unpack_chunks` reads it as it arrives); a download is a generator task
(`pack_chunks`) whose chunks the server streams back as they come. Every chunk is at most `CHUNK`
bytes, and at most `QUEUED` of them wait between the archive's writer and its reader.

Unpacking uses tarfile's "data" filter: no absolute paths, no `..`, no links out of the
destination, no device files. A relative destination is relative to the worker's working folder:
the node folder on SSH and cloud nodes (where a task's relative paths point too), the folder the
server was started in on Local.

Only the standard library is imported, so the functions are shipped by reference.
"""

from __future__ import annotations

import os
import queue
import tarfile
import threading
from collections.abc import Iterable, Iterator
from typing import IO, Any

#: The largest chunk sent either way (bytes).
CHUNK = 1 << 20
#: How many chunks a packing thread may get ahead of the reader.
QUEUED = 4


def _source(path: str) -> str:
    source = os.path.expanduser(path)
    if not os.path.exists(source):
        raise FileNotFoundError(f"{path}: no such file or folder on node (working folder {os.getcwd()})")
    return source


def _add(archive: tarfile.TarFile, source: str) -> None:
    archive.add(source, arcname=os.path.basename(os.path.normpath(source)) or ".")


def pack_file(path: str, target: IO[bytes]) -> None:
    """`path` (a file or a folder) as a tar.gz written to `target`; its one top entry is its base name."""
    source = _source(path)
    with tarfile.open(fileobj=target, mode="w|gz") as archive:
        _add(archive, source)


class _ChunkWriter:
    """A file object for tarfile's stream mode that hands chunks of `CHUNK` bytes to a queue."""

    def __init__(self, out: queue.Queue[Any]) -> None:
        self.out, self.buffer = out, bytearray()

    def write(self, data: bytes) -> int:
        self.buffer += data
        while len(self.buffer) >= CHUNK:
            self.out.put(bytes(self.buffer[:CHUNK]))
            del self.buffer[:CHUNK]
        return len(data)

    def flush_rest(self) -> None:
        if self.buffer:
            self.out.put(bytes(self.buffer))
            self.buffer.clear()


def pack_chunks(path: str) -> Iterator[bytes]:
    """`path` as a tar.gz, in chunks of at most `CHUNK` bytes, made as they are read: a thread
    writes the archive, at most `QUEUED` chunks ahead. A missing path raises at the first chunk."""
    source = _source(path)
    chunks: queue.Queue[Any] = queue.Queue(QUEUED)
    done = object()

    def write() -> None:
        writer = _ChunkWriter(chunks)
        try:
            with tarfile.open(fileobj=writer, mode="w|gz") as archive:  # type: ignore[call-overload]
                _add(archive, source)
            writer.flush_rest()
            chunks.put(done)
        except BaseException as error:  # noqa: BLE001 - raised in the reader
            chunks.put(error)

    threading.Thread(target=write, name="skyward-pack", daemon=True).start()
    while True:
        item = chunks.get()
        if item is done:
            return
        if isinstance(item, BaseException):
            raise item
        yield item


class _ChunkReader:
    """A file object over an iterable of byte chunks, read as tarfile asks (nothing read ahead)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks, self.buffer = iter(chunks), bytearray()

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self.buffer) < size:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            self.buffer += chunk
        if size < 0:
            size = len(self.buffer)
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data


def unpack_chunks(chunks: Iterable[bytes], destination: str) -> list[str]:
    """Unpack the tar.gz arriving as `chunks` into the folder `destination` (created), member by
    member as it arrives; the paths written."""
    folder = os.path.abspath(os.path.expanduser(destination or "."))
    os.makedirs(folder, exist_ok=True)
    names = []
    with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|gz") as archive:  # type: ignore[call-overload]
        for member in archive:
            archive.extract(member, folder, filter="data")
            names.append(member.name)
    return [os.path.join(folder, name) for name in names]


def file_chunks(path: str) -> Iterator[bytes]:
    """The bytes of the file `path`, in chunks of `CHUNK` (a spooled upload, sent to a node)."""
    with open(path, "rb") as source:
        while chunk := source.read(CHUNK):
            yield chunk
