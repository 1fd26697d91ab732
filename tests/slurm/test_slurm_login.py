"""`Slurm(login="user@login")`: every Slurm command goes over SSH to the login node (its host key
pinned in known_hosts), and the workers' streams come back over that same connection."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import slurm_pool, slurm_provider
from slurm_cluster import SlurmCluster
from ssh_hosts import SSHHosts, hosts_running, pid_alive, wait_until

import skyward as sky
from skyward.errors import HostKeyError


@pytest.fixture(scope="module")
def login_node(slurm: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHosts]:
    """A loopback sshd standing for the cluster's login node, where `SLURM_CONF` names the cluster."""
    with hosts_running(tmp_path_factory.mktemp("login"), 1, env={"SLURM_CONF": slurm.conf}) as hosts:
        yield hosts


def _over_login(slurm: SlurmCluster, hosts: SSHHosts, **kwargs: Any) -> Any:
    kwargs.setdefault("known_hosts", str(hosts.known_hosts))
    return slurm_provider(slurm, login=hosts.targets[0], key_file=str(hosts.key_file), **kwargs)


@sky.function
def where() -> dict[str, Any]:
    return {"node": os.environ.get("SLURMD_NODENAME"), "home": os.environ.get("HOME"), "cwd": os.getcwd()}


def test_a_pool_runs_through_the_login_node(
    slurm: SlurmCluster, login_node: SSHHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLURM_CONF")  # only the login node knows the cluster
    with slurm_pool(slurm, provider=_over_login(slurm, login_node)) as pool:
        seen = where() @ pool
    home = str(login_node.servers[0].home)
    assert [s["node"] for s in seen] == list(slurm.nodes)
    assert all(s["cwd"].startswith(home) for s in seen)
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    slurm.wait_idle()


@sky.function
def pid() -> int:
    return os.getpid()


@sky.function
def sleep_for(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def test_a_stuck_worker_behind_the_login_node_is_killed_and_started_again(
    slurm: SlurmCluster, login_node: SSHHosts
) -> None:
    with slurm_pool(slurm, provider=_over_login(slurm, login_node)) as pool:
        before = pid() @ pool
        with pytest.raises(TimeoutError, match="did not finish within"):
            sleep_for(60).with_timeout(1) >> pool
        assert wait_until(lambda: sum(pid_alive(p) for p in before) == 1, timeout=30)
        assert wait_until(lambda: pool.current_nodes() == 2, timeout=30)
        after = pid() @ pool
    assert len(set(after) - set(before)) == 1
    slurm.wait_idle()


def test_a_login_node_with_an_unknown_host_key_is_refused(
    slurm: SlurmCluster, login_node: SSHHosts, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    pool = slurm_pool(slurm, provider=_over_login(slurm, login_node, known_hosts=str(empty)))
    with pytest.raises(HostKeyError), pool:
        pass
    assert slurm.jobs() == []
