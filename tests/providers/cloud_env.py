"""An environment with no cloud credentials anywhere, for the tests of configs and fall-over.

Every variable of the five clouds (`RUNPOD_*`, `VAST_*`, `VERDA_*`, `NOVITA_*`, `AWS_*`) is
removed and `HOME` is an empty folder, so neither `~/.aws` nor the files `vastai set api-key`
writes are found; the instance metadata service is declared absent (`AWS_EC2_METADATA_DISABLED`,
which is no credential), so boto3's chain answers at once instead of asking the network.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CLOUD_PREFIXES = ("RUNPOD_", "VAST_", "VERDA_", "NOVITA_", "AWS_")


def clear_cloud_credentials(monkeypatch: pytest.MonkeyPatch, root: Path) -> Path:
    """Remove every cloud credential from the environment; returns the new, empty `HOME`."""
    for name in list(os.environ):
        if name.startswith(CLOUD_PREFIXES):
            monkeypatch.delenv(name)
    home = root / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("SKYWARD_HOME", str(root / "skyward-home"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return home
