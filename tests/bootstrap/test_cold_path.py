"""The cold bootstrap's shortcuts keep what they replace: each phase's shell runs here with bash,
against stand-ins for uv and the interpreters (scripts that record being started), so that what
runs, and what fails the phase, is seen without installing anything."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bootstrap_support import needs_uv

import skyward as sky
from skyward.bootstrap.phases import PRELUDE, pip_phase, venv_phase
from skyward.bootstrap.skyward_installs import SkywardInstalls, skyward_installs, skyward_phase

WHEELS = ("/nowhere/skyward_core-0.1.0-py3-none-any.whl", "/nowhere/skyward_aws-0.1.0-py3-none-any.whl")


def recorder(path: Path, log: Path, status: int = 0) -> Path:
    """An executable that appends its name and arguments to `log`, then exits with `status`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> {log}\nexit {status}\n')
    path.chmod(0o755)
    return path


def run_phase(phase: str, workdir: Path, venv: Path) -> subprocess.CompletedProcess[str]:
    script = PRELUDE + f"W={workdir}\nV={venv}\n__sky_main() {{\n{phase}}}\n__sky_main\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


@pytest.fixture
def node(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A node folder whose uv "makes" a venv holding an interpreter stand-in; the log of starts."""
    log = tmp_path / "started.log"
    log.touch()
    workdir, venv = tmp_path / "node", tmp_path / "node" / "venv"
    uv = workdir / "bin" / "uv"
    uv.parent.mkdir(parents=True)
    uv.write_text(
        f'#!/bin/sh\necho "$0 $*" >> {log}\n'
        f'if [ "$1" = venv ]; then mkdir -p {venv}/bin && printf \'#!/bin/sh\\necho "$0 $*" >> {log}\\n\' '
        f"> {venv}/bin/python && chmod 755 {venv}/bin/python; fi\n"
    )
    uv.chmod(0o755)
    return workdir, venv, log


def test_a_host_interpreter_that_is_no_venv_is_never_started(
    tmp_path: Path, node: tuple[Path, Path, Path]
) -> None:
    workdir, venv, log = node
    python = recorder(tmp_path / "usr" / "bin" / "python3", log)
    result = run_phase(venv_phase(str(python), system_site_packages=True), workdir, venv)
    assert result.returncode == 0, result.stderr
    started = log.read_text().splitlines()
    assert any("uv venv --system-site-packages" in line for line in started)
    # neither the host's interpreter nor the node venv's (asked for its site-packages) ran
    assert not [line for line in started if line.startswith((f"{python} ", f"{venv}/bin/python "))]
    assert "add the site-packages" not in result.stdout


def test_a_host_venv_interpreter_is_asked_for_its_site_packages(
    tmp_path: Path, node: tuple[Path, Path, Path]
) -> None:
    workdir, venv, log = node
    python = recorder(tmp_path / "opt" / "venv" / "bin" / "python", log)
    (tmp_path / "opt" / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    result = run_phase(venv_phase(str(python), system_site_packages=True), workdir, venv)
    assert result.returncode == 0, result.stderr
    assert any(line.startswith(f"{python} -c") for line in log.read_text().splitlines())
    assert "add the site-packages" in result.stdout


def test_the_skyward_phase_starts_no_interpreter_when_pip_installed_skyward(
    node: tuple[Path, Path, Path]
) -> None:
    workdir, venv, log = node
    recorder(venv / "bin" / "python", log)
    result = run_phase(skyward_phase(sky.Image(), WHEELS, core_in_pip=True), workdir, venv)
    assert result.returncode == 0, result.stderr
    assert "::skyward-phase:skyward:done" in result.stdout
    assert log.read_text() == ""  # the worker's own start is the import check (skyward.worker.__main__)


@pytest.mark.parametrize("module", ["cloudpickle", "lz4"])  # imported by `skyward`, by the worker only
def test_a_worker_that_cannot_import_takes_its_environments_ready_mark_away(
    tmp_path: Path, module: str
) -> None:
    from skyward.bootstrap.environments import READY

    environment = tmp_path / "envs" / "key"
    environment.mkdir(parents=True)
    (environment / READY).touch()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / f"{module}.py").write_text(f"raise ImportError('{module} is broken here')\n")
    env = {**os.environ, "SKYWARD_ENVIRONMENT": str(environment),
           "PYTHONPATH": os.pathsep.join([str(broken), *sys.path])}
    result = subprocess.run(
        [sys.executable, "-m", "skyward.worker"], env=env, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=60,
    )
    assert result.returncode != 0
    assert f"{module} is broken here" in result.stderr  # the traceback, for the node's start error
    assert "the next pool builds it again" in result.stderr
    assert not (environment / READY).exists()


def test_skyward_and_image_pip_install_in_one_uv_run(node: tuple[Path, Path, Path]) -> None:
    workdir, venv, log = node
    (venv / "bin").mkdir(parents=True)
    installs = skyward_installs(sky.Image(), WHEELS)
    result = run_phase(pip_phase(("six",), (), installs), workdir, venv)
    assert result.returncode == 0, result.stderr
    runs = [line for line in log.read_text().splitlines() if " pip install " in line]
    assert len(runs) == 1
    assert all(wheel in runs[0] for wheel in WHEELS) and runs[0].endswith(" six")
    assert "--no-deps" not in runs[0]  # the siblings' dependencies are left out by name instead
    toml = (workdir / "requirements" / "pyproject.toml").read_text()
    assert '[[tool.uv.dependency-metadata]]\nname = "skyward-aws"\nrequires-dist = []' in toml
    assert "skyward-core" not in toml  # skyward-core keeps its dependencies


@needs_uv
def test_a_sibling_installs_without_its_dependencies_in_the_one_resolve(tmp_path: Path) -> None:
    """Real uv, offline, with an empty cache: skyward-aws resolves only if boto3 is left out."""
    from skyward.bootstrap.wheels import local_wheels, wheel_cache_dir

    aws = [str(w) for w in local_wheels(wheel_cache_dir()) if w.name.startswith("skyward_aws-")]
    if not aws:
        pytest.fail("skyward-aws is not installed here: scripts/install.sh installs every distribution")
    workdir, venv = tmp_path / "node", tmp_path / "node" / "venv"
    (workdir / "bin").mkdir(parents=True)
    (workdir / "bin" / "uv").symlink_to(shutil.which("uv"))
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    installs = SkywardInstalls("local", (), tuple(aws), ())
    env = {**os.environ, "UV_OFFLINE": "1", "UV_CACHE_DIR": str(tmp_path / "cache")}
    phase = pip_phase((), (), installs)
    script = PRELUDE + f"W={workdir}\nV={venv}\n__sky_main() {{\n{phase}}}\n__sky_main\n"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    listed = subprocess.run(["uv", "pip", "list", "--python", str(venv / "bin" / "python")],
                            capture_output=True, text=True, check=True).stdout
    assert "skyward-aws" in listed and "boto3" not in listed


def test_the_script_waits_for_what_must_come_before_it(tmp_path: Path) -> None:
    """`before_script` (the node's guardian starting) overlaps the uploads, never the script: a
    value the script computes in its env phase sees what `before_script` did first."""
    import asyncio

    from bootstrap_support import Events, setup_for, use_shared_uv_cache

    from skyward.bootstrap.prepare import prepare_node
    from skyward.bootstrap.runner import LocalRunner

    marker = tmp_path / "guardian-up"

    async def guardian_starting() -> None:
        await asyncio.sleep(0.5)
        marker.touch()

    async def run() -> None:
        image = sky.Image(shell_vars={"SEEN": f"test -e {marker} && echo yes || echo no"})
        setup = setup_for(image, emit=Events())
        gate = asyncio.ensure_future(guardian_starting())
        script = await prepare_node(
            LocalRunner(), setup, node=0, workdir=str(tmp_path / "n0"), python=None, before_script=gate
        )
        assert "export SEEN='yes'" in Path(script.env_file).read_text()

    with pytest.MonkeyPatch.context() as mp:
        use_shared_uv_cache(mp)
        asyncio.run(run())


@pytest.fixture
def apt(tmp_path: Path) -> tuple[Path, Path]:
    """A PATH whose apt-get (and sudo, for a user that is not root) only log; the log."""
    log = tmp_path / "apt.log"
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text(
        f'#!/bin/sh\nif [ "$1" = update ]; then echo "update start" >> {log}; sleep 0.5; '
        f'echo "update end" >> {log}; echo "Hit: the index"; exit "${{APT_UPDATE_STATUS:-0}}"; fi\n'
        f'echo "install $*" >> {log}\n'
    )
    (bin_dir / "sudo").write_text('#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
    for tool in ("apt-get", "sudo"):
        (bin_dir / tool).chmod(0o755)
    return bin_dir, log


def run_apt(bin_dir: Path, log: Path, workdir: Path, status: int = 0) -> subprocess.CompletedProcess[str]:
    from skyward.bootstrap.phases import apt_phase, apt_update_early

    workdir.mkdir()
    middle = f'echo "the venv phase" >> {log}\n'
    script = PRELUDE + f"W={workdir}\n__sky_main() {{\n{apt_update_early()}{middle}{apt_phase(('curl',))}}}\n"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "APT_UPDATE_STATUS": str(status)}
    return subprocess.run(["bash", "-c", script + "__sky_main\n"], capture_output=True, text=True, env=env)


def test_apt_get_update_overlaps_the_venv_phase_and_the_apt_phase_waits_for_it(
    apt: tuple[Path, Path], tmp_path: Path
) -> None:
    bin_dir, log = apt
    result = run_apt(bin_dir, log, tmp_path / "node")
    assert result.returncode == 0, result.stderr
    lines = log.read_text().splitlines()
    assert sorted(lines[:2]) == ["the venv phase", "update start"], lines  # at the same time
    assert lines[2:] == ["update end", "install install -y --no-install-recommends -- curl"], lines
    assert "Hit: the index" in result.stdout  # its output is shown in the apt phase
    assert "::skyward-command:apt-get update" in result.stdout


def test_a_failed_early_apt_get_update_fails_the_apt_phase_with_its_code(
    apt: tuple[Path, Path], tmp_path: Path
) -> None:
    bin_dir, log = apt
    result = run_apt(bin_dir, log, tmp_path / "node", status=100)
    assert result.returncode == 100
    assert "::skyward-phase:apt:fail:100" in result.stdout
    assert "install" not in log.read_text()


class SlowUploads:
    """`LocalRunner`, but each copy of a folder takes `delay` seconds more (a slow network), and
    fails with `error` when one is given; notes when the copies ended."""

    def __init__(self, delay: float, error: Exception | None = None) -> None:
        from skyward.bootstrap.runner import LocalRunner

        self.local = LocalRunner()
        self.delay = delay
        self.error = error
        self.copied_at: list[float] = []

    async def run(self, command: str, **kwargs: Any) -> int:
        return await self.local.run(command, **kwargs)

    async def put(self, local: Path, remote: str) -> None:
        import asyncio
        import time

        if Path(local).is_dir():
            await asyncio.sleep(self.delay)
            if self.error is not None:
                raise self.error
        await self.local.put(local, remote)
        self.copied_at.append(time.time())


def test_the_first_phases_run_while_the_wheels_upload_and_the_install_waits_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from bootstrap_support import Events, setup_for, use_shared_uv_cache

    from skyward.bootstrap.prepare import prepare_node
    from skyward.observe.events import BootstrapPhase

    use_shared_uv_cache(monkeypatch)
    events = Events()
    runner = SlowUploads(delay=2.0)
    asyncio.run(prepare_node(
        runner, setup_for(sky.Image(), emit=events), node=0, workdir=str(tmp_path / "n0"), python=None
    ))
    at = {(e.phase, e.event): e.time for e in events if isinstance(e, BootstrapPhase)}
    uploaded = max(runner.copied_at)  # the marker, after the wheels
    assert at[("venv", "completed")] < uploaded  # the venv was made while the wheels were on their way
    assert uploaded <= at[("skyward", "started")]  # skyward installed from them once they were there
    assert "skyward bootstrap: waiting for the uploads (wheels, includes)" in events.console()


def test_an_upload_that_fails_stops_the_script_that_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from bootstrap_support import Events, setup_for, use_shared_uv_cache

    from skyward.bootstrap.prepare import prepare_node

    use_shared_uv_cache(monkeypatch)
    events = Events()
    runner = SlowUploads(delay=0.5, error=OSError("no space left on the node"))
    with pytest.raises(OSError, match="no space left on the node"):
        asyncio.run(asyncio.wait_for(prepare_node(
            runner, setup_for(sky.Image(), emit=events), node=0, workdir=str(tmp_path / "n0"), python=None
        ), 60))
    assert ("skyward", "started") not in events.phases()
    assert not processes_in(tmp_path / "n0")  # the script, waiting at the gate, was stopped


def processes_in(folder: Path) -> list[int]:
    """The processes whose working directory is `folder` (the bootstrap script cds there)."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error):
            if Path(process.cwd()) == folder:
                found.append(process.pid)
    return found
