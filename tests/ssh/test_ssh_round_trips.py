"""How many requests a pool's start waits on: what a slow link multiplies (real sshd hosts).

The wan benchmark (benchmarks/case_wan.py) measures the round trips; these tests pin the shape
that keeps them few, counted here without any timing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ssh_hosts import SSHHosts, ssh_pool, wait_until, workers_of

from skyward import fastpaths
from skyward.transport import ssh_archive
from skyward.transport.ssh_commands import SSHRunner
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


def _login_order(hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The login's service acceptance ("accept" in) and user-auth request ("auth" out), in order."""
    import asyncssh.connection
    import asyncssh.packet
    from asyncssh.constants import MSG_SERVICE_ACCEPT, MSG_USERAUTH_REQUEST

    order: list[str] = []
    send = asyncssh.connection.SSHConnection.send_packet
    process = asyncssh.packet.SSHPacketHandler.process_packet

    # asyncssh's own signature: the unpadded fast path checks it (once per class) before wrapping.
    def sending(self: Any, pkttype: int, *args: Any, handler: Any = None) -> Any:
        if pkttype == MSG_USERAUTH_REQUEST:
            order.append("auth")
        return send(self, pkttype, *args, handler=handler)

    def processing(self: Any, pkttype: int, *args: Any) -> Any:
        if pkttype == MSG_SERVICE_ACCEPT:
            order.append("accept")
        return process(self, pkttype, *args)

    monkeypatch.setattr(asyncssh.connection.SSHConnection, "send_packet", sending)
    monkeypatch.setattr(asyncssh.packet.SSHPacketHandler, "process_packet", processing)
    _login(hosts)
    return order


def test_a_login_sends_its_user_auth_request_before_the_service_is_accepted(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)
    assert _login_order(ssh_hosts, monkeypatch) == ["auth", "accept"]


def test_with_fast_paths_off_a_login_waits_for_the_service_to_be_accepted(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fastpaths.SWITCH, "off")
    assert _login_order(ssh_hosts, monkeypatch)[:2] == ["accept", "auth"]


class _Requests:
    """The channels a connection opens ("channel") and its SFTP sessions ("sftp"), recorded on
    the connection itself."""

    def __init__(self, conn: Any) -> None:
        self.opened: list[str] = []
        for name in ("create_session", "start_sftp_client"):
            setattr(conn, name, self._recording(name, getattr(conn, name)))

    def _recording(self, name: str, method: Any) -> Any:
        def record(*args: Any, **kwargs: Any) -> Any:
            self.opened.append("sftp" if name == "start_sftp_client" else "channel")
            return method(*args, **kwargs)

        return record


def test_a_folder_put_is_one_exec_request_whatever_its_depth_and_files(
    ssh_hosts: SSHHosts, tmp_path: Path
) -> None:
    server = ssh_hosts.servers[0]
    for i in range(20):
        (tmp_path / "tree" / f"sub{i % 3}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / f"sub{i % 3}" / f"{i}.txt").write_text(str(i))
    target = f"{server.home}/a/b/c/d/tree"

    async def main() -> list[str]:
        conn = await connect(
            server.address,
            server.port,
            server.user,
            key_file=ssh_hosts.key_file,
            known_hosts=ssh_hosts.known_hosts,
        )
        async with conn:
            requests = _Requests(conn)
            await SSHRunner(conn).put(tmp_path / "tree", target)
            return requests.opened

    assert asyncio.run(main()) == ["channel"]
    assert sorted(p.name for p in Path(target).rglob("*.txt")) == sorted(f"{i}.txt" for i in range(20))
    assert (Path(target) / "sub2" / "5.txt").read_text() == "5"
    shutil.rmtree(server.home / "a")


def test_a_put_on_a_host_without_tar_goes_over_sftp(
    ssh_hosts: SSHHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ssh_hosts.servers[0]
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_text("a")
    # Larger than the channel's window: the host's command ends while the archive is still sent.
    (tmp_path / "tree" / "big.bin").write_bytes(os.urandom(8 << 20))
    # The command the archive is unpacked with, as a host without tar answers it.
    monkeypatch.setattr(ssh_archive, "unpack_command", lambda remote: "exec no-such-tar-here")

    async def main() -> list[str]:
        conn = await connect(
            server.address,
            server.port,
            server.user,
            key_file=ssh_hosts.key_file,
            known_hosts=ssh_hosts.known_hosts,
        )
        async with conn:
            requests = _Requests(conn)
            await SSHRunner(conn).put(tmp_path / "tree", f"{server.home}/untarred/tree")
            return requests.opened

    opened = asyncio.run(main())
    assert opened[0] == "channel" and "sftp" in opened
    assert (server.home / "untarred" / "tree" / "a.txt").read_text() == "a"
    sent = (tmp_path / "tree" / "big.bin").read_bytes()
    assert (server.home / "untarred" / "tree" / "big.bin").read_bytes() == sent
    shutil.rmtree(server.home / "untarred")


def test_a_worker_started_while_its_guardian_failed_is_not_left_running(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's channel opens while the guardian's start ends (not after it): a node whose
    # guardian fails after all still is not used, and the worker started meanwhile is killed.
    import skyward.guardian as guardian_module

    # Wherever it starts (first in the bootstrap's script, or on a request of its own), it answers "nope".
    monkeypatch.setattr(guardian_module, "launch_command", lambda *a, **k: "echo nope")
    with pytest.raises(Exception, match="guardian could not start"), ssh_pool(ssh_hosts, servers=[0]):
        pass
    assert wait_until(lambda: not workers_of(ssh_hosts.servers[0].home), timeout=10)


_KINDS = {
    "getconf _NPROCESSORS_ONLN": "probe",
    "skyward._keeper start": "worker",
    "bash -s": "bootstrap",
    " renew --dir ": "renewal",
    " start --dir ": "guardian",
    "test -f ": "ready check",
}


def _kind(command: str) -> str:
    return next((kind for part, kind in _KINDS.items() if part in command), command[:60])


def _recording_requests(monkeypatch: pytest.MonkeyPatch, opens: bool = False) -> list[str]:
    """The kind of every exec request any connection sends from now on, in order (on a channel of
    its own or on one opened ahead: `skyward.fastpaths.asyncssh_preopen`); with `opens`, each
    channel's open too ("open")."""
    from asyncssh.channel import SSHChannel

    requested: list[str] = []
    send_request, open_channel = SSHChannel._send_request, SSHChannel._open

    def opening(self: Any, *args: Any, **kwargs: Any) -> Any:
        requested.append("open")
        return open_channel(self, *args, **kwargs)

    if opens:
        monkeypatch.setattr(SSHChannel, "_open", opening)

    def recording(self: Any, request: bytes, *args: Any, **kwargs: Any) -> Any:
        if request == b"exec":
            requested.append(_kind(bytes(args[0])[4:].decode(errors="replace")))
        return send_request(self, request, *args, **kwargs)

    monkeypatch.setattr(SSHChannel, "_send_request", recording)
    return requested


def test_a_warm_start_requests_the_worker_and_the_bootstrap_and_nothing_waits_before_them(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a start requests on each node's connection, in order, until the pool is up: two exec
    # requests, sent together right after the login. The host's home comes from what the client
    # recorded at its first start there (no probe); the bootstrap's script starts the guardian and
    # finds its environment itself (no request of their own); the worker's start waits on the
    # node for the script's end, and the lease's renewal opens meanwhile.
    with ssh_pool(ssh_hosts, servers=[0]):  # the host's environment is built: warm from here
        pass
    requested = _recording_requests(monkeypatch)
    with ssh_pool(ssh_hosts, servers=[0]):
        started = list(requested)
    assert started[:2] == ["worker", "bootstrap"]
    assert started[2:] in (["renewal"], [])  # opened meanwhile, waited for by nothing
    assert "renewal" in requested
    assert not {"probe", "guardian", "ready check"} & set(started)


def test_a_starts_two_requests_go_on_channels_opened_as_the_login_ended(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each request then waits for its exec request only: the channels' opens (a round trip) pass
    # while the client renders the bootstrap.
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)
    with ssh_pool(ssh_hosts, servers=[0]):
        pass
    requested = _recording_requests(monkeypatch, opens=True)
    with ssh_pool(ssh_hosts, servers=[0]):
        started = list(requested)
    assert started[:4] == ["open", "open", "worker", "bootstrap"]


def test_a_first_start_on_a_host_probes_its_home_once(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from skyward.providers import remote_login

    # A client that was never there (its record elsewhere).
    monkeypatch.setattr(remote_login, "records_file", lambda: tmp_path / "homes.json")
    requested = _recording_requests(monkeypatch)
    with ssh_pool(ssh_hosts, servers=[0]):
        started = list(requested)
    assert started[:3] == ["probe", "worker", "bootstrap"]
    requested.clear()
    with ssh_pool(ssh_hosts, servers=[0]):
        assert requested[:2] == ["worker", "bootstrap"]


def test_a_recorded_home_that_moved_is_probed_again_and_the_pool_starts_in_the_new_one(
    ssh_hosts: SSHHosts, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from skyward.providers import remote_login

    server = ssh_hosts.servers[0]
    monkeypatch.setattr(remote_login, "records_file", lambda: tmp_path / "homes.json")
    key = f"{server.user} {server.host_key.convert_to_public().get_fingerprint('sha256')}"
    stale = tmp_path / "old-home"
    remote_login.HomeRecords().put(key, remote_login.Home(str(stale), 1, 1.0))
    requested = _recording_requests(monkeypatch)
    with ssh_pool(ssh_hosts, servers=[0]) as pool:
        assert (sky_function_home() >> pool) == str(server.home)
    assert requested[:2] == ["worker", "bootstrap"] and "probe" in requested
    assert not stale.exists()  # nothing was made in the recorded home
    recorded = remote_login.HomeRecords().get(key)
    assert recorded is not None and recorded.folder == str(server.home)


def sky_function_home() -> Any:
    """A task that answers its worker's home folder."""
    import os

    import skyward as sky

    return sky.function(lambda: os.environ["HOME"])()
