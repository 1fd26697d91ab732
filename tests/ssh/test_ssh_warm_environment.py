"""Warm environments on an SSH host: the next pool with the same image reuses the venv the last one built.

Each test has a new host (a real sshd, no environment built yet); a pool's bootstrap commands
(`BootstrapCommand`) and lines (`BootstrapConsole`) say what it built, and a task on the node says
whether the client uploaded its wheels there (`skyward.bootstrap.environments`). The host of the
test of uv's install is fresh, as a new cloud VM (`start_hosts(fresh=True)`: no uv, no caches);
the others have uv and this machine's uv cache, which the environments' behaviour does not depend
on, so they do not download and unpack uv and numpy again (most of a fresh host's CPU).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ssh_hosts import SSHHosts, hosts_running, ssh_pool

import skyward as sky
from skyward.bootstrap.uv import UV_VERSION

IMAGE = sky.Image(pip=["numpy"])


@pytest.fixture
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHosts]:
    with hosts_running(tmp_path_factory.mktemp("warm"), 1) as hosts:
        yield hosts


@pytest.fixture
def host_without_uv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHosts]:
    with hosts_running(tmp_path_factory.mktemp("warm"), 1, fresh=True) as hosts:
        yield hosts


@sky.function
def node_folder() -> dict[str, Any]:
    workdir = os.environ["SKYWARD_WORKDIR"]
    wheels = os.path.isdir(os.path.join(workdir, "wheels"))
    return {"wheels": wheels, "venv": os.path.realpath(workdir + "/venv")}


def run_pool(hosts: SSHHosts, image: sky.Image = IMAGE) -> dict[str, Any]:
    """One pool on the host: what its bootstrap ran and said, and what its node folder held."""
    commands: list[str] = []
    said: list[str] = []
    pool = ssh_pool(hosts, image=image)
    pool.on(sky.BootstrapCommand, lambda event: commands.append(event.command))
    pool.on(sky.BootstrapConsole, lambda event: said.append(event.line))
    with pool:
        folder = node_folder() >> pool
    return {"commands": commands, "said": said, **folder}


def built(run: dict[str, Any]) -> bool:
    return any(command.startswith("uv venv") for command in run["commands"])


def environments(hosts: SSHHosts) -> list[Path]:
    root = hosts.servers[0].home / ".skyward" / "envs"
    return sorted(p for p in root.iterdir() if p.is_dir())


def test_a_second_pool_with_the_same_image_reuses_the_environment_without_uploading_wheels(
    host: SSHHosts,
) -> None:
    first = run_pool(host)
    second = run_pool(host)

    assert built(first) and first["wheels"]
    assert not built(second), second["commands"]
    assert not any(c.startswith("uv pip install") for c in second["commands"])
    assert any("reusing the environment" in line for line in second["said"])
    assert not second["wheels"], "the client uploaded its wheels to a warm node"
    (environment,) = environments(host)
    assert first["venv"] == second["venv"] == str(environment / "venv")


def installed_uv(run: dict[str, Any]) -> bool:
    return any(command.startswith("pip install --target ~/.skyward/uv/") for command in run["commands"])


def test_only_the_first_pool_on_a_host_without_uv_installs_uv(host_without_uv: SSHHosts) -> None:
    host = host_without_uv
    first = run_pool(host)
    second = run_pool(host)
    other = run_pool(host, sky.Image(pip=["six"]))  # a cold environment: it builds, with the host's uv

    assert installed_uv(first)
    assert not installed_uv(second) and not installed_uv(other)
    assert built(other)
    uv = host.servers[0].home / ".skyward" / "uv"
    assert [p.name for p in uv.iterdir() if p.is_dir()] == [UV_VERSION]
    assert any(line.endswith(f"/.skyward/uv/{UV_VERSION}/bin/uv") for line in other["said"])


def test_an_image_that_installs_something_else_builds_an_environment_of_its_own(host: SSHHosts) -> None:
    run_pool(host)
    other = run_pool(host, sky.Image(pip=["numpy", "six"]))
    assert built(other)
    assert len(environments(host)) == 2


def test_an_environment_without_its_ready_mark_is_built_again_from_nothing(host: SSHHosts) -> None:
    run_pool(host)
    (environment,) = environments(host)
    (environment / ".ready").unlink()  # what a bootstrap cut off mid-build leaves
    (environment / "stale-file").write_text("left by the cut-off build")

    again = run_pool(host)
    assert built(again)
    assert not (environment / "stale-file").exists()
    assert (environment / ".ready").exists()


def test_two_pools_starting_at_once_on_one_host_build_the_environment_once(host: SSHHosts) -> None:
    runs: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            runs.append(run_pool(host))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not errors, errors
    assert sorted(built(run) for run in runs) == [False, True]


def test_a_worker_that_cannot_import_fails_the_start_with_its_traceback_and_is_built_again(
    host: SSHHosts, tmp_path: Path
) -> None:
    # The worker's start is the environment's import check: here the node's env puts a broken lz4
    # (which the worker imports) ahead of the venv's.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "lz4.py").write_text("raise ImportError('lz4 is broken on this node')\n")
    with pytest.raises(Exception, match="lz4 is broken on this node"):
        run_pool(host, sky.Image(pip=["numpy"], env={"PYTHONPATH": str(broken)}))
    (environment,) = environments(host)
    assert not (environment / ".ready").exists()

    again = run_pool(host)  # the same environment key: built again from nothing, and it works
    assert built(again)
    assert again["venv"] == str(environment / "venv")
