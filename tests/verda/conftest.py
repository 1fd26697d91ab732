"""Fixtures for the Verda tests: a fake Verda API on loopback whose VMs are real sshd's.

See fake_verda.py. The provider is pointed at it with `Verda(api_url=..., ssh_port=...)`; nothing
here talks to any address but loopback. Pools build their venvs from this interpreter, and each
test gets its own `SKYWARD_HOME`, so its pool keys and logs are its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_verda import FakeVerda  # noqa: E402
from verda_support import CLIENT_ID, CLIENT_SECRET  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    for name in ("VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET", "VERDA_API_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def verda_api(tmp_path: Path) -> Iterator[FakeVerda]:
    """The fake API; every VM, script or key it still has when the test ends is a leak."""
    with serving(FakeVerda(tmp_path / "vms", CLIENT_ID, CLIENT_SECRET)) as fake:
        yield fake
