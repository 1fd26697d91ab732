"""The bootstrap on SSH hosts: Image.pip, env and includes reach the node; a failure says why."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from ssh_hosts import SSHHosts, processes_of, ssh_pool, workers_of

import skyward as sky


@sky.function
def probe() -> dict[str, Any]:
    import six  # installed by the bootstrap into the node's venv
    import skyward_ssh_include_probe  # shipped with Image.includes

    return {
        "six": six.__file__, "venv": sys.prefix, "include": skyward_ssh_include_probe.VALUE,
        "env": os.environ.get("SKYWARD_SSH_TEST"),
    }


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
