"""The provider contract (`skyward.testing.provider_contract`) on Massed Compute's fake API: the
config, the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_massed import FakeMassed
from massed_support import API_KEY, massed

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_massedcompute.sweep import MassedComputeSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestMassedCompute(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "L40"}

    @pytest.fixture
    def config(self, massed_api: FakeMassed) -> Any:
        return massed(massed_api)

    @pytest.fixture
    def sweeper(self, massed_api: FakeMassed, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("MASSED_API_KEY", API_KEY)
        monkeypatch.setenv("MASSED_API_URL", massed_api.url)
        return MassedComputeSweeper()
