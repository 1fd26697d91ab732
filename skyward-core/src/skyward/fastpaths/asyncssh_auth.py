"""A login in one user-auth round trip where the key is known (asyncssh internals).

asyncssh authenticates in three round trips: a `none` request (to learn the server's methods),
then, per key, a public key query without a signature (does the server accept this key?), then
the signed request. RFC 4252 (7) lets a client send the signed request at once, and with one key
named (`SSH(key_file=...)`, a cloud pool's own key) there is nothing to choose: the query only
waits. Across a 50-150 ms link those two round trips are a large part of a pool's start.

`sign_first(conn)`, called from the connection's `SSHClient.begin_auth` (just before asyncssh
picks its first method), starts the connection at `publickey` instead of `none` and marks it, so
that this module's public key handler sends the signed request without the query. The handler
replaces asyncssh's `publickey` one and acts as asyncssh's own on every connection not marked.
A server that refuses the key answers with its methods, and asyncssh goes on with them as usual.

Used only where the internals are as this module expects (`detect`), and not at all with
`SKYWARD_FAST_PATHS=off`: then the login takes asyncssh's three round trips.
"""

from __future__ import annotations

import functools
from typing import Any

import structlog

from skyward import fastpaths

__all__ = ["NAME", "detect", "sign_first"]

NAME = "asyncssh-sign-first"
#: The attribute that marks a connection whose public key auth sends the signed request first.
_MARK = "_skyward_sign_first"

log = structlog.get_logger(__name__)


@functools.lru_cache(maxsize=1)
def _handler() -> type | None:
    """asyncssh's public key handler, replaced by one that signs first on marked connections; None
    when asyncssh lacks what it relies on (the handler table, `_start`, `_send_signed_request`)."""
    try:
        from asyncssh import auth
    except ImportError:
        return None
    handlers = getattr(auth, "_client_auth_handlers", None)
    base = handlers.get(b"publickey") if isinstance(handlers, dict) else None
    if base is None or not all(hasattr(base, name) for name in ("_start", "_send_signed_request")):
        return None
    if getattr(base, _MARK, False):
        return base

    class SignFirst(base):  # type: ignore[misc, valid-type]
        async def _start(self) -> None:
            if not getattr(self._conn, _MARK, False):
                await super()._start()
                return
            self._keypair = await self._conn.public_key_auth_requested()
            if self._keypair is None:
                self._conn.try_next_auth(next_method=True)
                return
            await self._send_signed_request()

    setattr(SignFirst, _MARK, True)
    handlers[b"publickey"] = SignFirst
    return SignFirst


def detect(conn: Any) -> bool:
    """Whether `conn` may skip the `none` request and the key query: fast paths on, and asyncssh's
    internals as expected (the connection's `_auth_methods` list, the public key handler)."""
    if not fastpaths.enabled(NAME):
        return False
    if not isinstance(getattr(conn, "_auth_methods", None), list) or _handler() is None:
        log.info("fast path not used", fast_path=NAME, missing="asyncssh auth internals")
        return False
    return True


def sign_first(conn: Any) -> bool:
    """Make `conn`'s login try its key, signed, in its first request (see the module's docstring);
    call it from `SSHClient.begin_auth`. True if it will, False where asyncssh's own login runs."""
    if not detect(conn):
        return False
    conn._auth_methods = [b"publickey"]
    setattr(conn, _MARK, True)
    return True
