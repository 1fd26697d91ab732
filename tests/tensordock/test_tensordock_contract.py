"""The provider contract (`skyward.testing.provider_contract`) on TensorDock's fake marketplace:
the config, the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_tensordock import FakeTensorDock
from tensordock_support import API_KEY, API_TOKEN, tensordock

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_tensordock.sweep import TensorDockSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestTensorDock(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "RTX_4090"}

    @pytest.fixture
    def config(self, tensordock_api: FakeTensorDock) -> Any:
        return tensordock(tensordock_api)

    @pytest.fixture
    def sweeper(self, tensordock_api: FakeTensorDock, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("TENSORDOCK_API_KEY", API_KEY)
        monkeypatch.setenv("TENSORDOCK_API_TOKEN", API_TOKEN)
        monkeypatch.setenv("TENSORDOCK_API_URL", tensordock_api.url)
        return TensorDockSweeper()
