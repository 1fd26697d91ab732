"""A distribution outside the repository registers a provider and a plugin, and a pool uses both
without any change to core; a broken distribution is reported and skipped."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, venv_seeing_this_python: Callable[[Path], Path]) -> Path:
    """A venv that sees this checkout's Skyward plus the two fixture distributions, built as wheels."""
    root = tmp_path_factory.mktemp("thirdparty")
    wheels = root / "wheels"
    for name in ("skyward-echo", "skyward-broken"):
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "--wheel-dir", str(wheels), str(FIXTURES / name)],
            check=True,
        )
    python = venv_seeing_this_python(root / "venv")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", *map(str, wheels.glob("*.whl"))],
        check=True,
    )
    return python


def run(python: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120)


SCRIPT = """
import skyward as sky

@sky.function
def hello():
    info = sky.instance_info()
    return f"hello from {info.provider} on {info.instance_type}"

with sky.Compute(provider=sky.Echo(), nodes=2, plugins=[sky.plugins.shout()], console=False) as pool:
    print(hello() @ pool)
"""


def test_third_party_provider_and_plugin_are_used_by_a_pool(venv: Path) -> None:
    result = run(venv, SCRIPT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['HELLO FROM ECHO ON ECHO-BOX', 'HELLO FROM ECHO ON ECHO-BOX']"


def test_broken_distribution_is_named_in_a_warning_and_other_pools_still_run(venv: Path) -> None:
    result = run(venv, SCRIPT)
    assert result.returncode == 0
    assert "skyward-broken:broken failed to import" in result.stderr
    assert "a_module_that_does_not_exist" in result.stderr


def test_missing_name_error_mentions_the_broken_distribution(venv: Path) -> None:
    code = "import skyward as sky\ntry:\n    sky.plugins.nothing\nexcept AttributeError as e:\n    print(e)"
    result = run(venv, code)
    assert "No plugin named 'nothing'" in result.stdout
    assert "shout" in result.stdout
    assert "skyward-broken:broken" in result.stdout


def test_autoload_can_be_disabled_for_third_party_distributions(venv: Path) -> None:
    code = "import os, skyward.extension.registry as r\nprint(sorted(r.providers()))"
    result = subprocess.run(
        [str(venv), "-c", code], capture_output=True, text=True, timeout=60,
        env={"SKYWARD_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.stdout.strip() == "['Local', 'SSH']"
