"""Fixtures for the Scaleway tests: a fake Instance API on loopback whose servers are real sshd's.

See fake_scaleway.py. The provider is pointed at it with `Scaleway(api_url=..., ssh_port=...,
ip_lookup_url=...)`; nothing here talks to any address but loopback. Each test gets its own
`SKYWARD_HOME` and an empty Scaleway environment (no variables, no CLI config file), so its pool
keys, logs and credentials are its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_scaleway import FakeScaleway  # noqa: E402
from scaleway_support import PROJECT, SECRET_KEY  # noqa: E402

VARIABLES = (
    "SCW_SECRET_KEY", "SCW_ACCESS_KEY", "SCW_DEFAULT_PROJECT_ID", "SCW_DEFAULT_ORGANIZATION_ID",
    "SCW_API_URL", "SCW_DEFAULT_ZONE", "SCW_DEFAULT_REGION", "SCW_PROFILE",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    monkeypatch.setenv("SCW_CONFIG_PATH", str(tmp_path / "scw" / "config.yaml"))
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def scaleway_api(tmp_path: Path) -> Iterator[FakeScaleway]:
    """The fake API; every server or security group it still has when the test ends is a leak."""
    with serving(FakeScaleway(tmp_path / "servers", SECRET_KEY, PROJECT)) as fake:
        yield fake
