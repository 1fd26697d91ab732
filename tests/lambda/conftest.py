"""Fixtures for the Lambda Cloud tests: a fake Lambda API on loopback whose VMs are real sshd's.

See fake_lambda.py. The provider is pointed at it with `LambdaCloud(api_url=..., ssh_port=...)`;
nothing here talks to any address but loopback (each xdist worker has its own, `ssh_hosts`).
Pools build their venvs from this interpreter, and each test gets its own `SKYWARD_HOME`, so its
pool keys and logs are its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_lambda import FakeLambda  # noqa: E402
from lambda_support import API_KEY  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    for name in ("LAMBDA_API_KEY", "LAMBDA_GUARDIAN_API_KEY", "LAMBDA_API_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def lambda_api(tmp_path: Path) -> Iterator[FakeLambda]:
    """The fake API; every VM or SSH key it still has when the test ends is a leak."""
    with serving(FakeLambda(tmp_path / "vms", API_KEY)) as fake:
        yield fake
