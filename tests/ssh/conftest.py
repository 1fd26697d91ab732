"""Fixtures for the SSH tests: real OpenSSH servers on loopback, each one a separate "host".

Nothing is installed here: `sshd` (Debian's openssh-server) must be present; scripts/test.sh
installs it, and its absence fails the tests loudly. The servers, their keys and homes live in a
temporary folder and are stopped when the session ends (see ssh_hosts.py). Pools use
`SSH(python=sys.executable)`: node venvs are built from this interpreter, with its site-packages
visible (a venv's as well as a system interpreter's), so a bootstrap takes seconds.

Test modules are not importable on a worker: tests/conftest.py ships each one by value, like a script.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ssh_hosts import SSHHosts, hosts_running, ssh_pool

import skyward as sky


@pytest.fixture(scope="session")
def ssh_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHosts]:
    """Two OpenSSH servers (127.0.0.2 and 127.0.0.3, on free ports) shared by the whole session."""
    with hosts_running(tmp_path_factory.mktemp("sshd"), 2, leak_check=True) as hosts:
        yield hosts


@pytest.fixture(scope="module")
def pool(ssh_hosts: SSHHosts) -> Iterator[sky.Pool]:
    """A two-node pool, one node per host, shared by a module's read-only tests."""
    compute = ssh_pool(ssh_hosts)
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()
