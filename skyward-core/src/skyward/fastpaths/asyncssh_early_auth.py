"""The user-auth request sent with the service request, not after its answer (asyncssh internals).

After the key exchange, an SSH client asks for the `ssh-userauth` service and asyncssh waits for
the server's SERVICE_ACCEPT before it sends its first user-auth request: a round trip that only
waits. A server processes a connection's packets in order, and OpenSSH's sshd answers the service
request by installing its user-auth handler before it reads the next packet, so a user-auth
request that follows the service request on the wire finds it there (RFC 4253 section 10 has the
client send the request and the server answer it; nothing has the server refuse what follows).

`early_auth(conn)`, called as the connection is made, has the client begin its login as soon as
the server's extension info arrives (right after its NEWKEYS, where asyncssh learns which
signature algorithms the server takes), and the server's SERVICE_ACCEPT, when it comes, is only
checked. A server that sends no extension info is logged in to as asyncssh does.

Used only where asyncssh's internals are as this module expects (`detect`), and not at all with
`SKYWARD_FAST_PATHS=off`: then the login waits for the service's acceptance.
"""

from __future__ import annotations

from typing import Any

import structlog

from skyward import fastpaths

__all__ = ["NAME", "detect", "early_auth"]

NAME = "asyncssh-early-auth"
_USERAUTH = b"ssh-userauth"
#: Marks a connection whose login began before the service's acceptance.
_BEGUN = "_skyward_auth_begun"

log = structlog.get_logger(__name__)


def detect(conn: Any) -> bool:
    """Whether `conn` may begin its login early: fast paths on, and asyncssh's packet handlers and
    login internals as expected."""
    if not fastpaths.enabled(NAME):
        return False
    try:
        from asyncssh.constants import MSG_EXT_INFO, MSG_SERVICE_ACCEPT
    except ImportError:
        return False
    handlers = getattr(type(conn), "_packet_handlers", None)
    ok = (
        isinstance(handlers, dict)
        and MSG_EXT_INFO in handlers
        and MSG_SERVICE_ACCEPT in handlers
        and all(hasattr(conn, name) for name in ("try_next_auth", "_next_service", "_auth_in_progress"))
    )
    if not ok:
        log.info("fast path not used", fast_path=NAME, missing="asyncssh login internals")
    return ok


def early_auth(conn: Any) -> bool:
    """Have `conn` begin its login with its service request (the module's docstring); call it as
    the connection is made. False where asyncssh's own login runs."""
    if not detect(conn):
        return False
    from asyncssh.constants import MSG_EXT_INFO, MSG_SERVICE_ACCEPT

    handlers = dict(type(conn)._packet_handlers)
    ext_info, service_accept = handlers[MSG_EXT_INFO], handlers[MSG_SERVICE_ACCEPT]

    def on_ext_info(self: Any, pkttype: int, pktid: int, packet: Any) -> Any:
        result = ext_info(self, pkttype, pktid, packet)
        waiting = self._next_service == _USERAUTH and not self._auth_in_progress
        if waiting and not getattr(self, _BEGUN, False):
            setattr(self, _BEGUN, True)
            self.logger.info("Beginning auth for user %s (with the service request)", self._username)
            self._auth_in_progress = True
            if self._owner is not None:
                self._owner.begin_auth(self._username)
            self.try_next_auth()
        return result

    def on_service_accept(self: Any, pkttype: int, pktid: int, packet: Any) -> Any:
        if not getattr(self, _BEGUN, False):
            return service_accept(self, pkttype, pktid, packet)
        from asyncssh.misc import ServiceNotAvailable

        service = packet.get_string()
        packet.check_end()
        if service != _USERAUTH:
            raise ServiceNotAvailable("Unexpected service in service accept")
        self._next_service = None
        return None

    handlers[MSG_EXT_INFO], handlers[MSG_SERVICE_ACCEPT] = on_ext_info, on_service_accept
    conn._packet_handlers = handlers
    return True
