"""A machine is handed over once it presents the pool's pinned host key, or past a grace while it
presents another (so that the pinned check refuses it), never while it cannot be asked
(`providers.probe.PinnedKeyWait`, against a real SSH server on loopback)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncssh

from skyward.providers.probe import PinnedKeyWait


def _key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519")


@asynccontextmanager
async def sshd(host_key: asyncssh.SSHKey) -> AsyncIterator[int]:
    server = await asyncssh.listen("127.0.0.1", 0, server_host_keys=[host_key])
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def public(key: asyncssh.SSHKey) -> str:
    return key.export_public_key().decode()


def test_a_machine_presenting_the_pinned_key_is_ready_at_once() -> None:
    pinned = _key()

    async def ask() -> bool:
        async with sshd(pinned) as port:
            return await PinnedKeyWait(grace=3600).ready("m1", "127.0.0.1", port, public(pinned))

    assert asyncio.run(ask()) is True


def test_a_machine_presenting_another_key_waits_out_the_grace() -> None:
    pinned, other = _key(), _key()

    async def ask(grace: float) -> bool:
        async with sshd(other) as port:
            return await PinnedKeyWait(grace=grace).ready("m1", "127.0.0.1", port, public(pinned))

    assert asyncio.run(ask(3600)) is False
    assert asyncio.run(ask(0)) is True, "past the grace it is handed over, for the pinned check to refuse"


def test_a_machine_that_cannot_be_asked_is_not_ready() -> None:
    async def ask() -> bool:
        async with sshd(_key()) as port:
            pass
        return await PinnedKeyWait(grace=0).ready("m1", "127.0.0.1", port, public(_key()))

    assert asyncio.run(ask()) is False
