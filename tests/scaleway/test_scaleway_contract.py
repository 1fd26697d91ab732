"""The provider contract (`skyward.testing.provider_contract`) on Scaleway's fake Instance API:
the config, the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_scaleway import FakeScaleway
from scaleway_support import CREDENTIALS, scaleway

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_scaleway.sweep import ScalewaySweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestScaleway(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "L4"}

    @pytest.fixture
    def config(self, scaleway_api: FakeScaleway) -> Any:
        return scaleway(scaleway_api)

    @pytest.fixture
    def sweeper(self, scaleway_api: FakeScaleway, monkeypatch: pytest.MonkeyPatch) -> Any:
        for name, value in CREDENTIALS.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("SCW_API_URL", scaleway_api.url)
        return ScalewaySweeper()
