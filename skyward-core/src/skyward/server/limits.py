"""What the pool server allows itself and its clients: calls in flight, threads per kind of work,
connections, body sizes, idle connections. Each limit answers a way the server could be starved.

- **Calls and runs in flight** (`max_calls`, `$SKYWARD_SERVER_MAX_CALLS`): a call of an attached
  script (`/call`) or a script run (`/run`) past the cap is refused at once with 429, its message
  naming the cap and how to raise it, rather than queued behind the others without a word.
- **Threads per kind of work**: what must block (starting and ending pools, file transfers,
  history reads, a call's pickling and the dispatch kinds that have no future form) runs on
  threads drawn from a limiter of its own kind, never from one shared pool of threads, so 40 long
  calls cannot keep a `GET`, a `create`, an upload, the idle reaper or the shutdown waiting. A
  plain call (`fn(x) >> pool`) holds no thread while its task runs: the server awaits the pool's
  future (`Pool.run_async`).
- **Connections** (`max_connections`, `$SKYWARD_SERVER_MAX_CONNECTIONS`, uvicorn's
  `limit_concurrency`): past it, new requests get 503.
- **Idle connections** (`idle_connection`): a connection that sends no request for that many
  seconds is closed, also one that never sent any (uvicorn only times out connections between
  two requests: `IdleClosingH11Protocol`), and a request head must arrive whole in that time.
- **Bodies**: a JSON body (a pool table, a script) is at most `MAX_JSON_BYTES`; a call's pickle at
  most `max_call_mb` MiB (`$SKYWARD_SERVER_MAX_CALL_MB`); files go through `sky compute upload`,
  spooled to disk, never whole in memory.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

import attrs
from uvicorn.protocols.http.h11_impl import H11Protocol

from skyward.errors import ConfigurationError

MAX_CALLS_ENV = "SKYWARD_SERVER_MAX_CALLS"
MAX_CONNECTIONS_ENV = "SKYWARD_SERVER_MAX_CONNECTIONS"
MAX_CALL_MB_ENV = "SKYWARD_SERVER_MAX_CALL_MB"
#: The largest JSON body: a pool table, or a script's source with its arguments.
MAX_JSON_BYTES = 16 << 20
#: Threads for starting, ending and reaping pools (a pool's start and stop run on threads of their own).
LIFECYCLE_THREADS = 8
#: Threads for uploads and downloads (each holds one while its pool moves the files).
TRANSFER_THREADS = 8
#: Threads for reading the history (`sky log`, `sky compute view`).
HISTORY_THREADS = 4


@attrs.frozen
class Limits:
    """The server's limits (see the module's doc); `from_environment` reads the overrides."""

    max_calls: int = 64
    max_connections: int = 1000
    idle_connection: int = 5
    max_call_mb: int = 1024

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **given: Any) -> Limits:
        """The defaults, overridden by `$SKYWARD_SERVER_MAX_CALLS` and the like, then by `given`."""
        environ = os.environ if environ is None else environ
        read: dict[str, int] = {}
        for field, variable in (("max_calls", MAX_CALLS_ENV), ("max_connections", MAX_CONNECTIONS_ENV),
                                ("max_call_mb", MAX_CALL_MB_ENV)):
            text = environ.get(variable, "").strip()
            if text:
                read[field] = _positive(variable, text)
        read.update({key: value for key, value in given.items() if value is not None})
        limits = cls(**read)
        if limits.max_connections <= limits.max_calls:
            raise ConfigurationError(
                f"{MAX_CONNECTIONS_ENV}={limits.max_connections} leaves no connection beside "
                f"{limits.max_calls} calls in flight ({MAX_CALLS_ENV}); raise it above the calls' cap"
            )
        return limits

    @property
    def max_call_bytes(self) -> int:
        return self.max_call_mb << 20


def _positive(variable: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigurationError(
            f"{variable}={text!r}: expected a whole number of at least 1, e.g. {variable}=128"
        )
    return value


class IdleClosingH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with its keep-alive timeout also applied before a first request.

    uvicorn arms `timeout_keep_alive` only after a response, so a connection that never sends a
    request (or sends a request head a byte at a time) stays open for ever: enough of them exhaust
    the server's file descriptors. Here the clock runs from the connection's start until its first
    request head is whole.
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_deadline = self.loop.time() + self.timeout_keep_alive
        self._arm(self.timeout_keep_alive)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is None and not self.transport.is_closing():  # no whole request head yet
            self._arm(max(0.0, self._head_deadline - self.loop.time()))

    def _arm(self, delay: float) -> None:
        self._unset_keepalive_if_required()
        self.timeout_keep_alive_task = self.loop.call_later(delay, self.timeout_keep_alive_handler)
