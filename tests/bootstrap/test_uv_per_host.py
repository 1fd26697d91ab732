"""uv on a host without one: installed once per host under ~/.skyward/uv, or sent by the client.

Each test bootstraps for real on this machine (`LocalRunner`) with a login environment that has
no uv: a PATH of the system's folders plus a folder holding only `python3`, and a fresh HOME, as
on a new cloud VM (`skyward.bootstrap.uv`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bootstrap_support import Events, bootstrap, setup_for

import skyward as sky
from skyward.bootstrap.runner import LocalRunner
from skyward.bootstrap.uv import UV_VERSION, parse_request
from skyward.errors import BootstrapFailed

PIP_INSTALL = f"pip install --target ~/.skyward/uv/{UV_VERSION} uv=={UV_VERSION}"
UNPACK = f"unpack the uv {UV_VERSION} wheel the client sent"


def host_without_uv(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A login environment with no uv anywhere it looks and a new HOME (no pip cache either)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for name in ("python3", minor):
        if not (bindir / name).exists():
            (bindir / name).symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYENV", "UV_CACHE"))}
    env.update(PATH=f"{bindir}:/usr/bin:/bin", HOME=str(tmp_path / "home"), PIP_NO_CACHE_DIR="1", **extra)
    check = subprocess.run(["bash", "-c", "command -v uv"], env=env, capture_output=True, check=False)
    assert check.returncode != 0, "uv must not be reachable for this test"
    return env


def managed_uv(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".skyward" / "uv" / UV_VERSION / "bin" / "uv"


@pytest.mark.slow
def test_a_host_without_uv_installs_the_pinned_one_under_its_home(tmp_path: Path) -> None:
    env = host_without_uv(tmp_path)
    events = Events()
    workdir = tmp_path / "pool-a"
    script = bootstrap(setup_for(sky.Image(), emit=events), workdir, runner=LocalRunner(env=env))
    assert PIP_INSTALL in events.commands()
    assert managed_uv(env).exists()
    assert (workdir / "bin" / "uv").resolve() == managed_uv(env).resolve()
    assert not (workdir / ".uv").exists()  # nothing per pool
    assert Path(script.python_bin).exists()
    version = subprocess.run([str(managed_uv(env)), "--version"], capture_output=True, text=True, check=True)
    assert UV_VERSION in version.stdout


@pytest.mark.slow
def test_the_next_pool_on_that_host_finds_its_uv_and_installs_none(tmp_path: Path) -> None:
    env = host_without_uv(tmp_path)
    bootstrap(setup_for(sky.Image(), emit=Events()), tmp_path / "pool-a", runner=LocalRunner(env=env))
    installed = managed_uv(env).stat().st_mtime_ns
    events = Events()
    bootstrap(setup_for(sky.Image(), emit=events), tmp_path / "pool-b", runner=LocalRunner(env=env))
    assert PIP_INSTALL not in events.commands()
    assert f"skyward bootstrap: uv is {managed_uv(env)}" in events.console()
    assert managed_uv(env).stat().st_mtime_ns == installed


@pytest.mark.slow
def test_a_host_that_cannot_reach_the_index_gets_uv_from_the_client(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("SKYWARD_CACHE_DIR", str(tmp_path / "client"))  # the client's wheel cache starts empty
    env = host_without_uv(tmp_path, PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull)
    events = Events()
    script = bootstrap(setup_for(sky.Image(), emit=events), tmp_path / "pool-a", runner=LocalRunner(env=env))
    assert UNPACK in events.commands()
    assert any("could not be installed from the package index here" in line for line in events.console())
    assert managed_uv(env).exists()
    assert Path(script.python_bin).exists()  # the venv was built with the uv the client sent
    kept = list((tmp_path / "client" / "wheels" / "uv").glob(f"uv-{UV_VERSION}-*.whl"))
    assert len(kept) == 1  # the next host that asks is served from here
    assert not list((tmp_path / "pool-a").glob("uv-*.whl*"))  # the request's files are gone


def test_when_neither_the_host_nor_the_client_can_get_uv_the_bootstrap_fails_saying_why(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("SKYWARD_CACHE_DIR", str(tmp_path / "client"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the client's pip download finds nothing either
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    env = host_without_uv(tmp_path, PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull)
    with pytest.raises(BootstrapFailed) as caught:
        setup = setup_for(sky.Image(), emit=Events(), timeout=120)
        bootstrap(setup, tmp_path / "pool-a", runner=LocalRunner(env=env))
    assert caught.value.phase == "uv"
    assert "could not download uv" in str(caught.value)
    assert "install uv on the host" in str(caught.value)


def test_a_request_marker_names_what_the_machine_and_where() -> None:
    line = "::skyward-need:uv:aarch64:/home/u/n/uv.whl"
    assert parse_request(line) == ("uv", "aarch64", "/home/u/n/uv.whl")
    assert parse_request("::skyward-need:uv:x86_64:relative/path") is None
    assert parse_request("::skyward-phase:uv:start") is None


def test_the_warm_check_comes_before_the_uv_phase() -> None:
    from skyward.bootstrap.render import render_script

    text = render_script(sky.Image(), (), workdir="/W", environment="/h/.skyward/envs/k").text
    assert text.index("__sky_warm=1") < text.index("__sky_begin uv")
    assert "none needed: the environment is built" in text
