"""Each distribution builds on its own and registers itself in the `skyward` entry-point group."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Every code distribution (the meta distribution, `skyward-meta`, ships none).
DISTRIBUTIONS = sorted(
    path.parent.name.removeprefix("skyward-") for path in ROOT.glob("skyward-*/pyproject.toml")
    if path.parent.name != "skyward-meta"
)


@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_distribution_builds_a_wheel_with_its_entry_point(name: str, release_wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(release_wheels[f"skyward-{name}"]) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        text = archive.read(entry_points).decode()
    assert "[skyward]" in text
    package = "skyward" if name == "core" else f"skyward_{name}"
    assert any(n.startswith(f"{package}/") for n in names)
    assert f"{package}/py.typed" in names


def imported_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter holds once it ran `statement`."""
    code = f"import sys; {statement}; print(','.join(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return [m for m in out.strip().split(",") if m]


def test_importing_skyward_imports_no_framework_or_cloud_sdk() -> None:
    heavy = ("torch", "jax", "boto3", "sklearn", "vastai", "asyncssh", "numpy")
    assert imported_after("import skyward as sky", heavy) == []


def test_core_wheel_installs_alone_into_a_fresh_venv(
    tmp_path: Path, release_wheels: dict[str, Path], venv_seeing_this_python: Callable[[Path], Path]
) -> None:
    """`pip install skyward-core` gives a working `import skyward as sky`, with nothing else."""
    python = venv_seeing_this_python(tmp_path / "venv")  # its dependencies, without a download
    wheel = release_wheels["skyward-core"]
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True)
    code = (
        "import skyward as sky\n"
        "@sky.function\n"
        "def add(a, b):\n    return a + b\n"
        "with sky.Compute(provider=sky.Local(), nodes=1, console=False) as pool:\n"
        "    print(add(2, 3) >> pool)\n"
        "print(sky.__file__)\n"
    )
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path)
    result, location = out.stdout.split()
    assert result == "5"
    assert location.startswith(str(tmp_path / "venv"))  # the wheel, not the editable checkout


def test_loading_every_installed_sweeper_imports_no_ssh_transport() -> None:
    # What `sky ls` and `sky down` load before they list anything: a cloud's sweep reaching the
    # SSH transport (asyncssh) cost every `sky` command 140-300 ms.
    # (Every cloud package of this checkout answers: 14 sweepers at least.)
    loading = "from skyward.cli.sweep import sweepers; assert len(sweepers(None)) >= 14"
    assert imported_after(loading, ("asyncssh",)) == []


def test_a_worker_process_starts_without_asyncio_or_the_client() -> None:
    # `python -m skyward.worker` is on every pool start's critical path, after the round trips:
    # asyncio alone was 25 ms of it (through the relay's folder name).
    heavy = ("asyncio", "asyncssh", "structlog", "rich", "skyward.client.pool")
    assert imported_after("import skyward.worker.main", heavy) == []


def test_the_nodes_keeper_starts_without_the_wire_format_or_the_decorator() -> None:
    # The keeper starts before the worker on every pool start: it carries bytes and needs neither
    # lz4 and cloudpickle (the wire format) nor attrs (the decorator's records).
    heavy = ("lz4", "cloudpickle", "attrs", "skyward.function", "skyward.wire")
    assert imported_after("import skyward._keeper", heavy) == []


def test_sky_function_stays_the_decorator_once_its_submodule_is_imported() -> None:
    code = (
        "import skyward as sky, skyward.function, cloudpickle; "
        "from skyward.function import RemoteFunction; "
        "assert sky.function is sky.compute and callable(sky.function); "
        "assert isinstance(sky.function(lambda: 1), RemoteFunction); "
        "task = lambda: sky.__name__; "  # a task that uses `sky` ships it by name
        "print(cloudpickle.loads(cloudpickle.dumps(task))())"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "skyward", out.stderr


def test_the_sky_commands_modules_load_without_structlog() -> None:
    # `sky --help` loads every command's module, and most `sky` commands log nothing: structlog
    # (which loads rich's tracebacks) was 60-110 ms of each of them, through a path or a secret.
    loading = (
        "import skyward.cli.sweep, skyward.cli.offers, skyward.client.server_home, "
        "skyward.providers.credentials, skyward_vastai.config"
    )
    assert imported_after(loading, ("structlog",)) == []


def test_the_ssh_providers_config_loads_without_the_ssh_transport() -> None:
    # `sky providers` lists `sky.SSH` with the other providers' configs: its transport (asyncssh and
    # the remote nodes' machinery) was a quarter of a second of every such command.
    transport = ("asyncssh", "skyward.providers.remote")
    assert imported_after("from skyward.providers.ssh import SSH", transport) == []
