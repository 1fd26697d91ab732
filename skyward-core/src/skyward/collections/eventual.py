"""`consistency="eventual"`: writes buffered on the node, reads from a local copy that may be stale.

Each process (a worker, or one of its task subprocesses) keeps, per collection it reads, a replica
fetched from the store, and an outbox of the writes it made that the store has not seen. A write
is applied to the replica at once (a process reads its own writes) and queued; the outbox goes to
the store as one batch every `FLUSH_EVERY` seconds, when it holds `MAX_BATCH` writes, before any
request the process makes (so the store sees a process's operations in the order it made them),
and before its task's outcome is sent (so whoever has a task's result can read what it wrote). A
read uses the replica while it is younger than `STALE_AFTER`, else fetches a fresh one first.
Consecutive increments of one counter travel as one.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from skyward.collections import ops

if TYPE_CHECKING:
    from skyward.collections.transport import RequestClient

#: How often buffered writes are sent while a process makes them (seconds).
FLUSH_EVERY = 0.01
#: Buffered writes sent at once, without waiting for the next flush.
MAX_BATCH = 1024
#: How old a replica may be before a read fetches a fresh one (seconds).
STALE_AFTER = 0.1


class Eventual:
    """One process's replicas and outbox."""

    def __init__(self, client: RequestClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        #: Writes not sent yet: (kind, name, op, args), in the order they were made.
        self.outbox: list[tuple[str, str, str, tuple[Any, ...]]] = []
        #: (kind, name) -> (local state, when it was fetched).
        self._replicas: dict[tuple[str, str], tuple[Any, float]] = {}
        self._flusher: threading.Thread | None = None

    def write(self, kind: str, name: str, op: str, args: tuple[Any, ...]) -> None:
        with self._lock:
            replica = self._replicas.get((kind, name))
            if replica is not None:
                ops.apply(kind, replica[0], op, args)
            outbox = self.outbox
            last = outbox[-1] if outbox else None
            if kind == "counter" and op == "add" and last is not None and last[:3] == (kind, name, "add"):
                outbox[-1] = (kind, name, "add", (last[3][0] + args[0],))
            else:
                outbox.append((kind, name, op, args))
            full = len(outbox) >= MAX_BATCH
        if full:
            self.flush()
        elif self._flusher is None:
            self._start_flusher()

    def read(self, kind: str, name: str, op: str, args: tuple[Any, ...]) -> Any:
        key = (kind, name)
        with self._lock:
            replica = self._replicas.get(key)
            if replica is not None and time.monotonic() - replica[1] < STALE_AFTER:
                return ops.apply(kind, replica[0], op, args)
        fetched = time.monotonic()
        copy = self._client.call((0, "", "", "snapshot", (kind, name, [])))  # after the outbox
        with self._lock:
            state = ops.replica(kind, copy)
            for pending in self.outbox:  # written meanwhile by another thread: still ours to see
                if pending[0] == kind and pending[1] == name:
                    ops.apply(kind, state, pending[2], pending[3])
            self._replicas[key] = (state, fetched)
            return ops.apply(kind, state, op, args)

    def forget(self, kind: str, name: str) -> None:
        """Drop the replica of a collection a strong request just changed: the next read fetches."""
        with self._lock:
            self._replicas.pop((kind, name), None)

    @property
    def used(self) -> bool:
        """Whether this process made an eventual write (then its flusher runs)."""
        return self._flusher is not None

    def flush(self, wait: bool = False) -> None:
        """Send the outbox (`wait`: and wait until the store applied it, and every batch before).

        The lock is held while a batch is sent, so a flush returns only once a batch the flusher
        thread took meanwhile is on its way too: what is sent after a flush comes after them all.
        """
        if not self.used and not self.outbox:
            return
        with self._lock:
            batch, self.outbox = self.outbox, []
            if batch and not wait:
                self._client.post((0, "", "", "batch", (batch,)))
        if wait:
            self._client.call((0, "", "", "batch", (batch,)))

    def _start_flusher(self) -> None:
        with self._lock:
            if self._flusher is not None:
                return
            self._flusher = threading.Thread(target=self._flush_often, name="skyward-eventual", daemon=True)
        self._flusher.start()

    def _flush_often(self) -> None:
        while True:
            time.sleep(FLUSH_EVERY)
            if self.outbox:
                try:
                    self.flush()
                except BaseException:  # noqa: BLE001 - the way to the store is gone: nothing to send to
                    return
