"""Shared memory for the large parts of frames between two processes on one host (Local's pipes).

Why: a 100 MB array through a pipe is copied twice by the kernel, and lands in fresh pages that the
reader must fault in and clear; that is most of its cost. Through shared memory it is copied once,
by the sender, and the receiver maps it without a copy: the unpickled array lives in the mapping.
Fresh tmpfs pages cost as much as fresh heap pages, so segments are recycled: when the received
object is collected its mapping goes, and the receiver renames the segment `<name>.free`; the
sender's next large buffer is written into those pages, already allocated.

Layout: every pipe channel owns one folder, `/dev/shm/skyward-<client pid>-<n>`. The client writes
segments `c<seq>`, the worker `w<seq>`; a frame carries a descriptor (length, flags, path) where
the bytes would have been (`wire.FLAG_SHM`). Segments above `RECYCLE_MAX` are not recycled: the
receiver unlinks them as soon as it has mapped them, so their pages go with the object.

Nothing outlives the channel: the client removes the folder when the channel is lost or closed
(after the worker has exited) and at interpreter exit; the worker removes it when it reads end of
file (its client is gone); a client removes the folders of dead client processes when it makes its
first. Shared memory is an optimisation only: when the folder is missing or tmpfs is full, `put`
answers None and the bytes travel through the pipe.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import itertools
import mmap
import os
import re
import shutil
import struct
import threading
import time
import weakref
from typing import Any

#: Where segments live (tmpfs on Linux).
SHM_ROOT = "/dev/shm"
#: Environment variable through which the client tells the worker its channel's folder.
ENV = "SKYWARD_SHM_DIR"
#: Parts smaller than this stay in the pipe: a segment costs a few system calls and a mapping.
MIN_SIZE = 1 << 20
#: Segments larger than this are freed with the object that uses them, never kept for reuse.
RECYCLE_MAX = 256 << 20
#: Most bytes and segments one sender keeps free for reuse; the rest are unlinked.
FREE_MAX_BYTES = 256 << 20
FREE_MAX_COUNT = 16
#: Suffix of a segment the receiver no longer maps.
FREE = ".free"
#: A dead client's folder is swept only when untouched this long (seconds): every segment written
#: renames or creates a file in it, so a live client's folder (one whose pid we cannot see, from
#: another pid namespace sharing /dev/shm) is fresh whenever a segment may be in flight.
STALE_AGE = 60.0

#: Descriptor sent in place of a part: <Q length><B flags> then the segment's path (utf-8).
DESCRIPTOR = struct.Struct("<QB")
#: Descriptor flag: the receiver keeps the segment and renames it free when it unmaps it.
RECYCLE = 1

_FOLDER = re.compile(r"skyward-(\d+)-(\d+)")
_SEGMENT = re.compile(re.escape(SHM_ROOT) + r"/skyward-\d+-\d+/[cw]\d+")
_counter = itertools.count(1)
_owned: set[str] = set()
_owned_lock = threading.Lock()
_stale_swept = False


def available() -> bool:
    """Whether this host has a writable tmpfs for segments."""
    return os.path.isdir(SHM_ROOT) and os.access(SHM_ROOT, os.W_OK | os.X_OK)


def create_folder() -> str | None:
    """Make a new channel folder (client side); None when shared memory is unavailable."""
    global _stale_swept
    if not available():
        return None
    if not _stale_swept:
        _stale_swept = True
        sweep_stale()
    folder = os.path.join(SHM_ROOT, f"skyward-{os.getpid()}-{next(_counter)}")
    try:
        os.mkdir(folder, 0o700)
    except OSError as exc:
        _log("skyward.shm_unavailable", folder=folder, error=repr(exc))
        return None
    with _owned_lock:
        if not _owned:
            atexit.register(_remove_owned)
        _owned.add(folder)
    return folder


def remove_folder(folder: str) -> None:
    """Remove a channel folder and every segment in it (mappings already made stay valid)."""
    for _ in range(3):  # a peer still alive may add a segment while the tree is removed
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            break
    with _owned_lock:
        _owned.discard(folder)


def _remove_owned() -> None:
    with _owned_lock:
        folders = list(_owned)
    for folder in folders:
        remove_folder(folder)


def sweep_stale() -> None:
    """Remove the channel folders of client processes that no longer exist (killed outright)."""
    try:
        names = os.listdir(SHM_ROOT)
    except OSError:
        return
    now = time.time()
    for name in names:
        match = _FOLDER.fullmatch(name)
        if match is None or _pid_alive(int(match.group(1))):
            continue
        path = os.path.join(SHM_ROOT, name)
        try:
            if now - os.stat(path).st_mtime < STALE_AGE:
                continue
        except OSError:
            continue
        _log("skyward.shm_stale_removed", folder=name)
        shutil.rmtree(path, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SegmentWriter:
    """One channel end's sender: copies a part into a segment and returns its descriptor.

    Thread-safe (worker threads send concurrently): a free segment is claimed by renaming it,
    which only one claimant can do.
    """

    def __init__(self, folder: str, tag: str) -> None:
        self.folder = folder
        self._tag = tag
        self._seq = itertools.count(1)

    def put(self, data: Any) -> bytes | None:
        """Copy `data` into a segment; its descriptor, or None to send the bytes in the pipe."""
        view = memoryview(data).cast("B")
        size = view.nbytes
        try:
            path, fd, capacity = self._claim(size)
        except OSError as exc:  # folder removed (channel closing) or tmpfs unusable
            _log("skyward.shm_put_skipped", error=repr(exc))
            return None
        try:
            if capacity > 2 * size:
                os.ftruncate(fd, size)  # give back the pages this part does not need
                capacity = size
            written = 0
            while written < size:
                written += os.pwrite(fd, view[written:], written)
        except OSError as exc:
            os.close(fd)
            _unlink(path)
            if exc.errno in (errno.ENOSPC, errno.ENOMEM):
                self._trim(0, 0)  # tmpfs is full: free what this sender holds
            _log("skyward.shm_write_failed", size=size, error=repr(exc))
            return None
        os.close(fd)
        flags = RECYCLE if max(capacity, size) <= RECYCLE_MAX else 0
        return DESCRIPTOR.pack(size, flags) + path.encode()

    def _claim(self, size: int) -> tuple[str, int, int]:
        """A segment for `size` bytes: the best free one (already allocated pages), else a new one."""
        free = self._free()
        fits = sorted(f for f in free if f[0] >= size)
        short = sorted((f for f in free if f[0] < size), reverse=True)
        for capacity, name in fits + short:
            path = os.path.join(self.folder, name[: -len(FREE)])
            try:
                os.rename(os.path.join(self.folder, name), path)
            except FileNotFoundError:
                continue  # another thread claimed it
            free.remove((capacity, name))
            self._trim_list(free)
            return path, os.open(path, os.O_RDWR | os.O_CLOEXEC), capacity
        self._trim_list(free)
        while True:
            path = os.path.join(self.folder, f"{self._tag}{next(self._seq)}")
            try:
                return path, os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), 0
            except FileExistsError:
                continue

    def _free(self) -> list[tuple[int, str]]:
        """(size, name) of this sender's segments that the receiver has released."""
        free = []
        with os.scandir(self.folder) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith(self._tag) and name.endswith(FREE):
                    try:
                        free.append((entry.stat().st_size, name))
                    except FileNotFoundError:
                        continue
        return free

    def _trim(self, max_bytes: int, max_count: int) -> None:
        with contextlib.suppress(OSError):
            self._trim_list(self._free(), max_bytes, max_count)

    def _trim_list(
        self, free: list[tuple[int, str]], max_bytes: int | None = None, max_count: int | None = None
    ) -> None:
        """Unlink free segments beyond the budget, keeping the largest (the costliest to refault)."""
        max_bytes = FREE_MAX_BYTES if max_bytes is None else max_bytes
        max_count = FREE_MAX_COUNT if max_count is None else max_count
        kept_bytes = kept = 0
        for capacity, name in sorted(free, reverse=True):
            if kept < max_count and kept_bytes + capacity <= max_bytes:
                kept += 1
                kept_bytes += capacity
            else:
                _unlink(os.path.join(self.folder, name))


def open_segment(descriptor: bytes | bytearray) -> mmap.mmap | bytearray:
    """Map the segment a descriptor names (receiver side), writable, as the part's memory.

    A recycled segment is renamed free when the mapping is collected; any other is unlinked now.
    If the mapping cannot be made (the process is out of mappings), the bytes are read into a
    bytearray instead and the segment is released at once.
    """
    size, flags = DESCRIPTOR.unpack_from(descriptor)
    path = bytes(descriptor[DESCRIPTOR.size :]).decode()
    if not _SEGMENT.fullmatch(path):
        raise ValueError(f"not a skyward shared-memory segment: {path!r}")
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        try:
            mapping: mmap.mmap | bytearray = mmap.mmap(fd, size)
        except OSError as exc:
            _log("skyward.shm_map_failed", size=size, error=repr(exc))
            mapping = _read(fd, size)
            if flags & RECYCLE:
                _release(path, os.getpid())
            else:
                _unlink(path)
            return mapping
    finally:
        os.close(fd)
    if flags & RECYCLE:
        weakref.finalize(mapping, _release, path, os.getpid()).atexit = False
    else:
        _unlink(path)
    return mapping


def _read(fd: int, size: int) -> bytearray:
    data = bytearray(size)
    view = memoryview(data)
    got = 0
    while got < size:
        n = os.preadv(fd, [view[got:]], got)
        if n == 0:
            raise EOFError(f"shared-memory segment shorter than {size} bytes")
        got += n
    return data


def _release(path: str, pid: int) -> None:
    # A forked child dropping its copy of the mapping must not free pages its parent still uses.
    if os.getpid() != pid:
        return
    with contextlib.suppress(OSError):  # the folder is gone: the channel was closed
        os.rename(path, path + FREE)


def _log(event: str, **fields: Any) -> None:
    # Imported here: structlog costs a worker ~90 ms of start-up, and these are rare events.
    import structlog

    structlog.get_logger().debug(event, **fields)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
