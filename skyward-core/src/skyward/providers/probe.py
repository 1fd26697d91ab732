"""Which SSH host key a machine presents, asked before anyone logs in.

A cloud whose machine starts its own sshd before the pool's host key is installed (a VM's
startup script, Vast's entrypoint) may first answer with a key of the image's making. The
provider asks with `answers_with` and hands the machine over only once it presents the key the
pool pins (or, past a grace, lets the pinned check refuse it): never a key trusted on first use.
`PinnedKeyWait` keeps that grace per machine, for a provider's `refresh`.
"""

from __future__ import annotations

import asyncio
import time

#: How long a machine may answer with its image's host key before it is handed over anyway (and
#: then refused by the pinned check): a startup script restarts sshd with the pool's within seconds.
HOST_KEY_GRACE = 300.0


async def answers_with(host: str, port: int, public_key: str, timeout: float = 10.0) -> bool | None:
    """Whether the sshd at host:port presents `public_key` (True), another key (False), or cannot
    be asked yet (None). Only the key exchange runs: nothing is authenticated or sent."""
    import asyncssh  # heavy; loaded when a machine is asked

    try:
        key = await asyncio.wait_for(
            asyncssh.get_server_host_key(host, port, server_host_key_algs=["ssh-ed25519"]), timeout
        )
    except (TimeoutError, OSError, asyncssh.Error):
        return None
    if key is None:
        return None
    presented = key.export_public_key().decode().split()[:2]
    return presented == public_key.split()[:2]


class PinnedKeyWait:
    """Whether each machine is ready to be handed over, as far as its host key goes: at once when
    it presents the pinned key; not while it cannot be asked; and, while it presents another key,
    only once `grace` seconds have passed since it first did (the pinned check then refuses it)."""

    def __init__(self, grace: float = HOST_KEY_GRACE) -> None:
        self.grace = grace
        self._foreign_since: dict[str, float] = {}

    async def ready(self, machine: str, host: str, port: int, public_key: str) -> bool:
        answer = await answers_with(host, port, public_key)
        if answer is None:
            return False
        if answer:
            return True
        first = self._foreign_since.setdefault(machine, time.monotonic())
        return time.monotonic() - first >= self.grace

    def forget(self, machine: str) -> None:
        """Drop what is known of a machine that is gone."""
        self._foreign_since.pop(machine, None)
