"""How many requests a pool's start waits on: what a slow link multiplies (real sshd hosts).

The wan benchmark (benchmarks/case_wan.py) measures the round trips; these tests pin the shape
that keeps them few, counted here without any timing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
from ssh_hosts import SSHHosts

from skyward import fastpaths
from skyward.transport.ssh_connect import connect


class _AsyncsshLines(logging.Handler):
    """asyncssh's debug lines while it is installed (asyncssh names each auth step it takes)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def asyncssh_lines() -> Iterator[list[str]]:
    import asyncssh

    logger = logging.getLogger("asyncssh")
    handler, level = _AsyncsshLines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    asyncssh.set_debug_level(2)
    try:
        yield handler.lines
    finally:
        asyncssh.set_debug_level(1)
        logger.setLevel(level)
        logger.removeHandler(handler)


def _login(hosts: SSHHosts) -> None:
    server = hosts.servers[0]

    async def main() -> None:
        conn = await connect(
            server.address, server.port, server.user, key_file=hosts.key_file, known_hosts=hosts.known_hosts
        )
        assert (await conn.run("echo in", check=True)).stdout == "in\n"
        conn.close()

    asyncio.run(main())


def test_a_login_with_a_named_key_sends_it_signed_in_its_first_request(
    ssh_hosts: SSHHosts, asyncssh_lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)
    _login(ssh_hosts)
    assert sum("Signing request" in line for line in asyncssh_lines) == 1
    # No `none` request (the server would have answered with its methods) and no unsigned query.
    assert not [line for line in asyncssh_lines if "Remaining auth methods" in line]
    assert not [line for line in asyncssh_lines if "Trying public key auth" in line]


def test_with_fast_paths_off_a_login_asks_first_as_asyncssh_does(
    ssh_hosts: SSHHosts, asyncssh_lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fastpaths.SWITCH, "off")
    _login(ssh_hosts)
    assert [line for line in asyncssh_lines if "Remaining auth methods" in line]
    assert [line for line in asyncssh_lines if "Trying public key auth" in line]
