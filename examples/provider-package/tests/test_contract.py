"""The provider contract, run against `sky.Folders()` as installed (found through its entry point)."""

from __future__ import annotations

from pathlib import Path

import pytest

import skyward as sky
from skyward.testing.provider_contract import ProviderContract


class TestFolders(ProviderContract):
    nodes = 2

    @pytest.fixture
    def config(self, tmp_path: Path) -> object:
        return sky.Folders(root=str(tmp_path / "machines"))
