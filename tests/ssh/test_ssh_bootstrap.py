"""The bootstrap on SSH hosts: Image.pip, env and includes reach the node; a failure says why."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from ssh_hosts import SSHHosts, SSHServer, processes_of, ssh_pool, start_hosts, workers_of

import skyward as sky
from skyward.bootstrap.ops import Op


@sky.function
def probe() -> dict[str, Any]:
    import six  # installed by the bootstrap into the node's venv
    import skyward_ssh_include_probe  # shipped with Image.includes

    return {
        "six": six.__file__, "venv": sys.prefix, "include": skyward_ssh_include_probe.VALUE,
        "env": os.environ.get("SKYWARD_SSH_TEST"),
    }


@sky.function
def probe_home() -> str:
    return os.environ["HOME"]


def test_image_pip_env_and_includes_reach_the_node(ssh_hosts: SSHHosts, tmp_path: Path) -> None:
    module = tmp_path / "skyward_ssh_include_probe.py"
    module.write_text("VALUE = 42\n")
    image = sky.Image(pip=["six"], env={"SKYWARD_SSH_TEST": "it's here"}, includes=[str(module)])
    phases: list[sky.BootstrapPhase] = []
    staging_before = set(Path(tempfile.gettempdir()).glob("skyward-includes-*"))
    compute = ssh_pool(ssh_hosts, servers=[0], image=image)
    compute.on(sky.BootstrapPhase, phases.append)
    with compute:
        found = probe() >> compute
    assert found["six"].startswith(found["venv"] + "/")  # the venv's own copy, not the client's
    assert found["include"] == 42
    assert found["env"] == "it's here"
    completed = {p.phase for p in phases if p.event == "completed"}
    assert completed >= {"venv", "pip", "env", "includes", "skyward"}
    assert set(Path(tempfile.gettempdir()).glob("skyward-includes-*")) <= staging_before  # staging removed


def test_a_package_that_does_not_exist_fails_the_bootstrap_with_its_output(ssh_hosts: SSHHosts) -> None:
    missing = "skyward-no-such-package-4b1d"
    compute = ssh_pool(ssh_hosts, servers=[1], image=sky.Image(pip=[missing]))
    with pytest.raises(sky.BootstrapFailed) as caught:
        compute.start()
    message = str(caught.value)
    assert "node 0" in message and "'pip'" in message
    assert missing in message  # the failing command and uv's own words about the package
    server = ssh_hosts.servers[1]
    assert workers_of(server.home) == []
    assert not (server.home / ".skyward" / "pools" / compute.name).exists()  # cleaned up after the failure


def test_a_node_whose_bootstrap_fails_stops_the_other_nodes_bootstrap(ssh_hosts: SSHHosts) -> None:
    # node 0 fails at once; node 1 would take a minute.
    op = 'case "$PWD" in */node-0) echo broken >&2; exit 5;; *) sleep 60; echo slow-done;; esac'
    plugin = sky.plugins.Plugin.create("setup").with_bootstrap(lambda cluster: op)
    compute = ssh_pool(ssh_hosts, plugins=[plugin])
    phases: list[tuple[int, str, str]] = []
    compute.on(sky.BootstrapPhase, lambda e: phases.append((e.node, e.phase, e.event)))
    with pytest.raises(sky.BootstrapFailed) as caught:
        compute.start()
    assert (caught.value.node, caught.value.phase) == (0, "setup")
    assert (1, "setup", "completed") not in phases  # stopped, not waited for
    for server in ssh_hosts.servers:
        assert processes_of(server.home) == []  # node 1's sleep was killed with its bootstrap


def _drop_connections_when(server: SSHServer, line: str, events: list[sky.Event]) -> Any:
    """An event handler that kills the host's sshd sessions (the connection drops) the first time
    the bootstrap prints `line`; it runs on the pool's loop, so the op is still running then."""
    dropped: list[int] = []

    def handler(event: sky.Event) -> None:
        events.append(event)
        if isinstance(event, sky.BootstrapConsole) and event.line == line and not dropped:
            for pid in server.session_pids():
                dropped.append(pid)
                os.kill(pid, signal.SIGKILL)

    return handler


def test_a_connection_dropped_during_the_bootstrap_resumes_it_on_a_new_connection(
    ssh_hosts: SSHHosts,
) -> None:
    server = ssh_hosts.servers[0]
    record = server.home / "slow-op-runs"  # each run of the slow op: its pid, then "done" if it ended
    first = Op(name="first", script="echo first-op-ran")
    slow = Op(name="slow", script=(
        f"echo $$ >> {record}; echo slow-op-begins; sleep 3; echo $$ done >> {record}; echo slow-op-ends"
    ))
    plugin = sky.plugins.Plugin.create("setup").with_bootstrap(lambda cluster: (first, slow))
    events: list[sky.Event] = []
    compute = ssh_pool(ssh_hosts, servers=[0], plugins=[plugin], on_event=_drop_connections_when(
        server, "slow-op-begins", events))
    try:
        with compute:
            assert probe_home() >> compute == str(server.home)
        lines = [e.line for e in events if isinstance(e, sky.BootstrapConsole)]
        assert lines.count("slow-op-begins") == 2  # cut off, then run again from its start
        assert lines.count("slow-op-ends") == 1
        assert lines.count("first-op-ran") == 1  # it had completed: the resumed run skips it
        assert any("first completed before the connection was lost" in line for line in lines)
        assert any("was lost" in line and "reconnecting" in line for line in lines)
        assert not any(isinstance(e, sky.BootstrapError) for e in events)
        # The cut-off run was killed on the host before the resumed one started: it never ended.
        cut_off, resumed, ended = record.read_text().splitlines()
        assert ended == f"{resumed} done" and cut_off != resumed
        assert workers_of(server.home) == []
    finally:
        record.unlink(missing_ok=True)


def test_a_connection_that_cannot_be_restored_fails_the_bootstrap_naming_host_and_phase(
    tmp_path: Path,
) -> None:
    hosts = start_hosts(tmp_path, 1)  # a server of its own: this test stops it
    try:
        server = hosts.servers[0]
        slow = Op(name="slow", script="echo slow-op-begins; sleep 30")
        plugin = sky.plugins.Plugin.create("setup").with_bootstrap(lambda cluster: (slow,))
        events: list[sky.Event] = []

        def stop_host(event: sky.Event) -> None:
            events.append(event)
            if isinstance(event, sky.BootstrapConsole) and event.line == "slow-op-begins":
                server.stop()  # sshd and its connections, gone for good

        compute = ssh_pool(hosts, plugins=[plugin], on_event=stop_host, ssh_timeout=2, ssh_retry_interval=0.5)
        with pytest.raises(sky.BootstrapFailed) as caught:
            compute.start()
        failure = caught.value
        assert (failure.node, failure.phase) == (0, "slow")
        message = str(failure)
        assert f"{server.address}:{server.port}" in message
        assert "connection" in message and "was lost" in message and "reconnecting failed" in message
        assert "ssh_timeout" in message  # what to do about it
        assert "slow-op-begins" in message  # the output so far
    finally:
        hosts.stop()
