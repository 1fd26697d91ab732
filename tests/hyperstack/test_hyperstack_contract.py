"""The provider contract (`skyward.testing.provider_contract`) on the fake Infrahub API: the config,
the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_infrahub import FakeInfrahub
from hyperstack_support import API_KEY, hyperstack

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_hyperstack.sweep import HyperstackSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestHyperstack(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "L40"}

    @pytest.fixture
    def config(self, hyperstack_api: FakeInfrahub) -> Any:
        return hyperstack(hyperstack_api)

    @pytest.fixture
    def sweeper(self, hyperstack_api: FakeInfrahub, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("HYPERSTACK_API_KEY", API_KEY)
        monkeypatch.setenv("HYPERSTACK_API_URL", hyperstack_api.url)
        return HyperstackSweeper()
