"""Fixtures for the TensorDock tests: a fake marketplace API on loopback whose VMs are real sshd's
behind the ports it forwards.

See fake_tensordock.py. The provider is pointed at it with `TensorDock(api_url=...)`; nothing here
talks to any address but loopback. Each test gets its own `SKYWARD_HOME`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_tensordock import FakeTensorDock  # noqa: E402
from tensordock_support import API_KEY, API_TOKEN  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    for name in ("TENSORDOCK_API_KEY", "TENSORDOCK_API_TOKEN", "TENSORDOCK_API_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def tensordock_api(tmp_path: Path) -> Iterator[FakeTensorDock]:
    """The fake API; every VM it still has when the test ends is a leak, and fails the test."""
    with serving(FakeTensorDock(tmp_path / "vms", API_KEY, API_TOKEN)) as fake:
        yield fake
