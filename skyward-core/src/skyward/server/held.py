"""One pool the server holds, as its HTTP handlers see it (`Held`), and what a run or download
holds of it while under way (`Cancel`, `InUse`): see `skyward.server.pools`."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs

from skyward.client.pool import Pool
from skyward.server.feed import EventFeed
from skyward.server.redact import Secret, secret_values, shown_form


class Cancel:
    """Set when the client of a run went away: every remote script stream it watches is closed."""

    def __init__(self) -> None:
        self._set = threading.Event()
        self._remotes: list[Any] = []
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        return self._set.is_set()

    def watch(self, remote: Any) -> None:
        with self._lock:
            self._remotes.append(remote)
        if self._set.is_set():
            remote.close()

    def set(self) -> None:
        self._set.set()
        with self._lock:
            remotes = list(self._remotes)
        for remote in remotes:
            remote.close()


@attrs.define
class Held:
    """One pool the server holds, as the HTTP handlers see it; `config` is its table as sent (with
    its secrets: never stored, never shown, see `describe`)."""

    name: str
    config: dict[str, Any]
    state: str = "starting"
    error: str | None = None
    created: float = attrs.field(factory=time.time)
    last_used: float = attrs.field(factory=time.time)
    pool: Pool | None = None
    running: int = 0
    node_locks: dict[str, threading.Lock] = attrs.field(factory=dict)
    started: threading.Event = attrs.field(factory=threading.Event)
    #: node -> metric name -> its latest sample (`{"value", "unit"}`).
    metrics: dict[str, dict[str, dict[str, Any]]] = attrs.field(factory=dict)
    #: Attached scripts' subscriptions to the pool's live events (`pool.on` in a script).
    feed: EventFeed = attrs.field(factory=EventFeed)
    #: The secrets of `config` (`skyward.server.redact`): masked in every answer about the pool.
    secrets: list[Secret] = attrs.field(factory=list)
    _use_lock: threading.Lock = attrs.field(factory=threading.Lock)

    @property
    def masked(self) -> tuple[str, ...]:
        """The values to mask out of any text about this pool."""
        return secret_values(self.secrets)

    def use(self) -> None:
        """A run, call or transfer starts: the pool is in use (the reaper leaves it)."""
        with self._use_lock:
            self.running += 1
            self.last_used = time.time()

    def release(self) -> None:
        """What `use` started ended: the pool's idle time counts from now."""
        with self._use_lock:
            self.running -= 1
            self.last_used = time.time()

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        self.use()
        try:
            yield
        finally:
            self.release()

    def describe(self) -> dict[str, Any]:
        spec = self.pool.spec if self.pool is not None and self.state == "ready" else None
        return {
            "name": self.name, "state": self.state, "error": self.error,
            "provider": provider_name(self.config), "created": self.created, "last_used": self.last_used,
            "nodes": self.pool.current_nodes() if self.pool is not None and self.state == "ready" else 0,
            "accelerator": None if spec is None else _text(getattr(spec, "accelerator", None)),
            "running": self.running, "config": shown_form(self.config, self.secrets, self.masked),
        }


def provider_name(config: dict[str, Any]) -> str:
    provider = config.get("provider")
    if isinstance(provider, dict):
        return str(provider.get("type", "?"))
    return "local" if provider is None else str(provider)


def _text(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "name", value))


class InUse:
    """A download's chunks, the pool in use until they are all read or `close`d (also when never
    read: a generator that never started would not run its `finally`)."""

    def __init__(self, chunks: Iterator[bytes], held: Held, first: bytes) -> None:
        self._chunks, self._held, self._first, self._closed = chunks, held, [first], False
        self._lock = threading.Lock()

    def __iter__(self) -> InUse:
        return self

    def __next__(self) -> bytes:
        if self._first:
            return self._first.pop()
        try:
            return next(self._chunks)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            self._held.release()
