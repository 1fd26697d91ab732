"""Fixtures for the Novita tests: a fake Novita API on loopback whose instances are real sshd's.

See fake_novita.py. The provider is pointed at it with `Novita(api_url=...)`; nothing here talks to
any address but loopback. Each test gets its own `SKYWARD_HOME`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_novita import FakeNovita  # noqa: E402
from novita_support import API_KEY  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    for name in ("NOVITA_API_KEY", "NOVITA_API_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def novita_api(tmp_path: Path) -> Iterator[FakeNovita]:
    """The fake API; every instance it still has when the test ends is a leak, and fails the test."""
    with serving(FakeNovita(tmp_path / "instances", API_KEY)) as fake:
        yield fake
