"""Fixtures for the Massed Compute tests: a fake VM API on loopback whose machines are real sshd's.

See fake_massed.py. The provider is pointed at it with `MassedCompute(api_url=..., ssh_port=...)`;
nothing here talks to any address but loopback. Each test gets its own `SKYWARD_HOME`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_massed import FakeMassed  # noqa: E402
from massed_support import API_KEY  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    for name in ("MASSED_API_KEY", "MASSED_API_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def massed_api(tmp_path: Path) -> Iterator[FakeMassed]:
    """The fake API; every machine it still has when the test ends is a leak, and fails the test."""
    with serving(FakeMassed(tmp_path / "machines", API_KEY)) as fake:
        yield fake
