"""Fixtures for the VastAI tests: a fake Vast API on loopback whose instances are real sshds.

Nothing here leaves loopback: the SDK is pointed at the fake with `VastAI(server_url=...)`, and
every instance is an OpenSSH server on 127.0.2.x (see vast_server.py and ../ssh/ssh_hosts.py).
Pools build node venvs from this interpreter (`python=sys.executable`) and share `~/.skyward`
(`$SKYWARD_HOME`) with the SSH tests, so skyward's wheels are built once, not once per test;
each pool's key there is removed when the pool ends.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from ssh_hosts import workers_of  # noqa: E402
from vast_server import FakeVast, offer  # noqa: E402
from vast_support import API_KEY  # noqa: E402

from skyward.providers import cloud  # noqa: E402


@pytest.fixture(autouse=True)
def _no_real_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No real Vast key is read from the environment (tests that need none hide the files too)."""
    monkeypatch.delenv("VAST_API_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))


@pytest.fixture(autouse=True)
def _quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake's machines boot in a fraction of a second; read them back as often."""
    monkeypatch.setattr(cloud, "POLL_INTERVAL", 0.1)


@pytest.fixture
def vast(tmp_path: Path) -> Iterator[FakeVast]:
    """A fake Vast with four single-RTX-4090 offers on four machines (cheapest first: 1, 2, 3, 4)."""
    offers = [offer(i, 100 + i, price=0.30 + i / 100, min_bid=0.10 + i / 100) for i in (1, 2, 3, 4)]
    server = FakeVast(tmp_path / "vast", API_KEY, offers).start()
    try:
        yield server
        left = {i.id: workers_of(i.server.home) for i in server.live if i.server is not None}
        assert not any(left.values()), f"workers left running on Vast instances: {left}"
    finally:
        server.stop()
