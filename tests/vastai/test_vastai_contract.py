"""The provider contract (`skyward.testing.provider_contract`) on the fake Vast.ai server: the
config, the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from vast_server import FakeVast
from vast_support import API_KEY, vast_provider

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_vastai.sweep import VastSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestVastAI(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "RTX 4090"}

    @pytest.fixture
    def config(self, vast: FakeVast) -> Any:
        return vast_provider(vast)

    @pytest.fixture
    def sweeper(self, vast: FakeVast, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("VAST_API_KEY", API_KEY)
        monkeypatch.setenv("VAST_SERVER_URL", vast.url)
        return VastSweeper()
