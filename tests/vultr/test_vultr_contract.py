"""The provider contract (`skyward.testing.provider_contract`) on Vultr's fake API: the config,
the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_vultr import FakeVultr
from vultr_support import API_KEY, vultr

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_vultr.sweep import VultrSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestVultr(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "A100"}

    @pytest.fixture
    def config(self, vultr_api: FakeVultr) -> Any:
        return vultr(vultr_api)

    @pytest.fixture
    def sweeper(self, vultr_api: FakeVultr, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("VULTR_API_KEY", API_KEY)
        monkeypatch.setenv("VULTR_API_URL", vultr_api.url)
        return VultrSweeper()
