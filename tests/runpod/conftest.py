"""Fixtures for the RunPod tests: a fake RunPod API on loopback whose pods are real sshd's.

See fake_runpod.py. The provider is pointed at it with `RunPod(api_url=..., graphql_url=...)`;
nothing here talks to any address but loopback. Pools build their venvs from this interpreter
(`python=sys.executable`), and each test gets its own `SKYWARD_HOME`, so its pool keys and logs
are its own. Test modules are shipped to workers by value, like scripts.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_runpod import FakeRunPod  # noqa: E402
from runpod_support import API_KEY  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)


@pytest.fixture
def runpod_api(tmp_path: Path) -> Iterator[FakeRunPod]:
    """The fake API; every pod it still has when the test ends is a leak, and fails the test."""
    with serving(FakeRunPod(tmp_path / "pods", API_KEY)) as fake:
        yield fake

