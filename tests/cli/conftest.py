"""Fixtures of the CLI tests: `sky`, the command run as a subprocess (see cli_support)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Sky


@pytest.fixture
def sky(tmp_path: Path) -> Sky:
    return Sky(tmp_path)
