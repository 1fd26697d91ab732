"""Fixtures for the JarvisLabs tests: a fake JarvisLabs API on loopback whose instances are real sshd's.

See fake_jarvis.py. The provider is pointed at it with `JarvisLabs(api_url=...)`;
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
from fake_jarvis import FakeJarvis  # noqa: E402
from jarvis_support import API_KEY  # noqa: E402


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    for name in ("JL_API_KEY", "JL_API_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def jarvis_api(tmp_path: Path) -> Iterator[FakeJarvis]:
    """The fake API; an instance or startup script it still has when the test ends is a leak."""
    with serving(FakeJarvis(tmp_path / "instances", API_KEY)) as fake:
        yield fake
