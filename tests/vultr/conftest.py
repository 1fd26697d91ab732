"""Fixtures for the Vultr tests: a fake Vultr API v2 on loopback whose instances are real sshd's.

See fake_vultr.py. The provider is pointed at it with `Vultr(api_url=..., ssh_port=...,
ip_lookup_url=...)`; nothing here talks to any address but loopback. Pools build their venvs from
this interpreter, and each test gets its own `SKYWARD_HOME`, so its pool keys and logs are its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_vultr import FakeVultr  # noqa: E402
from vultr_support import API_KEY  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    for name in ("VULTR_API_KEY", "VULTR_API_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vultr_api(tmp_path: Path) -> Iterator[FakeVultr]:
    """The fake API; every instance, key or firewall group it still has when the test ends is a leak."""
    with serving(FakeVultr(tmp_path / "instances", API_KEY)) as fake:
        yield fake
