"""Fixtures for the Hyperstack tests: a fake Infrahub API on loopback whose VMs are real sshd's.

See fake_infrahub.py. The provider is pointed at it with `Hyperstack(api_url=..., ssh_port=...)`;
nothing here talks to any address but loopback. Pools build their venvs from this interpreter, and
each test gets its own `SKYWARD_HOME`, so its pool keys and logs are its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_infrahub import FakeInfrahub  # noqa: E402
from hyperstack_support import API_KEY  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    for name in ("HYPERSTACK_API_KEY", "HYPERSTACK_API_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def hyperstack_api(tmp_path: Path) -> Iterator[FakeInfrahub]:
    """The fake API; every VM, keypair or access key it still has when the test ends is a leak."""
    with serving(FakeInfrahub(tmp_path / "vms", api_key=API_KEY)) as fake:
        yield fake
