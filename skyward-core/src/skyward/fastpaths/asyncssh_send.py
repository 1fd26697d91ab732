"""No SSH_MSG_IGNORE before each packet where the cipher makes it pointless (an asyncssh internal).

asyncssh sends an empty SSH_MSG_IGNORE before every packet of an encrypted connection, the
countermeasure RFC 4251 (9.3.1) gives for CBC, whose next IV an eavesdropper knows. AES-GCM (which
`ssh_connect.ciphers` puts first), chacha20-poly1305 and CTR need none, and OpenSSH sends none.
Each one costs a second encryption and a second socket write per packet, and wakes sshd a second
time.

asyncssh has no option for it: `without_ignore_padding` sets an attribute of the one connection
over `SSHConnection.send_packet`, through which asyncssh sends them (`self.send_packet`), and drops
exactly the empty IGNORE. It does so only where `send_packet` takes what asyncssh 2.x passes it
(`pkttype, *args, handler=...`); otherwise, or with `SKYWARD_FAST_PATHS=off`, the connection keeps
its padding and works as asyncssh made it.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import structlog

from skyward import fastpaths

__all__ = ["NAME", "UNPADDED_CIPHERS", "detect", "send_packet_fits", "without_ignore_padding"]

NAME = "asyncssh-unpadded"
#: Ciphers whose packets need no SSH_MSG_IGNORE before them: AEAD and counter modes, whose next
#: packet an eavesdropper cannot prepare a block for (only CBC's chained IV allowed that).
UNPADDED_CIPHERS = ("-gcm@openssh.com", "chacha20-poly1305@openssh.com", "-ctr")
#: The payload of the empty SSH_MSG_IGNORE asyncssh sends before each packet (an empty SSH string).
_EMPTY_STRING = b"\0\0\0\0"

log = structlog.get_logger(__name__)


@functools.lru_cache(maxsize=8)
def send_packet_fits(cls: type) -> bool:
    """Whether `cls.send_packet` takes `(pkttype, *args, handler=...)`, as the wrapper calls it."""
    method = getattr(cls, "send_packet", None)
    if not callable(method):
        return False
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = {p.name: p.kind for p in parameters}
    return "handler" in kinds and inspect.Parameter.VAR_POSITIONAL in kinds.values()


def detect(conn: Any) -> bool:
    """Whether `conn`'s IGNORE padding may be dropped: fast paths on, a cipher that needs none, and
    a `send_packet` the wrapper fits."""
    if not fastpaths.enabled(NAME):
        return False
    cipher = str(conn.get_extra_info("send_cipher") or "")
    if not any(kind in cipher for kind in UNPADDED_CIPHERS):
        return False
    if not send_packet_fits(type(conn)):
        log.info("fast path not used", fast_path=NAME, missing="send_packet(pkttype, *args, handler=...)")
        return False
    return True


def without_ignore_padding(conn: Any) -> bool:
    """Stop `conn` from sending an empty SSH_MSG_IGNORE before each of its packets where `detect`
    allows; True if it was stopped, False where it keeps them (see the module's docstring)."""
    if not detect(conn):
        return False
    from asyncssh.constants import MSG_IGNORE

    send = conn.send_packet

    def send_packet(pkttype: int, *args: bytes, handler: Any = None) -> None:
        if pkttype == MSG_IGNORE and args == (_EMPTY_STRING,):
            return
        send(pkttype, *args, handler=handler)

    conn.send_packet = send_packet
    return True
