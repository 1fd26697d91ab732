"""Which SSH host key a machine presents, asked before anyone logs in.

A cloud whose machine starts its own sshd before the pool's host key is installed (a VM's
startup script, Vast's entrypoint) may first answer with a key of the image's making. The
provider asks with `answers_with` and hands the machine over only once it presents the key the
pool pins (or, past a grace, lets the pinned check refuse it): never a key trusted on first use.
"""

from __future__ import annotations

import asyncio


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
