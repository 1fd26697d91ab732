"""Fixtures of the pool server tests: a real server (`sky server start`) on loopback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ssh"))  # the OpenSSH fixture: ssh_hosts.py

from server_support import Server  # noqa: E402
from ssh_hosts import SSHHosts, hosts_running  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One daemonized server shared by a module's tests, stopped at the end."""
    started = Server(tmp_path_factory.mktemp("server")).start()
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Server]:
    """A server of this test's own (started by the test), stopped or killed at the end."""
    own = Server(tmp_path)
    try:
        yield own
    finally:
        own.close()


@pytest.fixture(scope="module")
def ssh_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHosts]:
    """One real OpenSSH server on loopback (tests/ssh/ssh_hosts.py), for a module's tests."""
    with hosts_running(tmp_path_factory.mktemp("sshd"), 1) as hosts:
        yield hosts
