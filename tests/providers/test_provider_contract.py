"""The provider contract (`skyward.testing.provider_contract`) holds for every provider we ship,
and for the third-party example package in examples/provider-package, installed as a user would."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ssh_hosts import SSHHosts, ssh_provider

import skyward as sky
from skyward.testing.provider_contract import ProviderContract

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "provider-package"


class TestLocal(ProviderContract):
    @pytest.fixture
    def config(self) -> Any:
        return sky.Local()


class TestLocalIsolated(ProviderContract):
    nodes = 1  # each node bootstraps a venv of its own: one shows it

    @pytest.fixture
    def config(self) -> Any:
        return sky.Local(isolated=True)


class TestSSH(ProviderContract):
    @pytest.fixture
    def config(self, ssh_hosts: SSHHosts) -> Any:
        return ssh_provider(ssh_hosts)


def test_the_example_provider_package_passes_the_contract_once_installed(
    tmp_path: Path, venv_seeing_this_python: Callable[[Path], Path]
) -> None:
    python = venv_seeing_this_python(tmp_path / "venv")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", str(EXAMPLE)],
        check=True,
    )
    found = subprocess.run(
        [str(python), "-c", "import skyward as sky; print(sky.Folders().name)"],
        capture_output=True, text=True, timeout=120,
    )
    assert found.stdout.strip() == "folders", found.stderr  # through the entry point, not a path
    result = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
        capture_output=True, text=True, timeout=600, cwd=EXAMPLE,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "9 passed" in result.stdout, result.stdout[-2000:]
