"""The provider contract (`skyward.testing.provider_contract`) on Verda's fake API: the config,
the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_verda import FakeVerda
from verda_support import CLIENT_ID, CLIENT_SECRET, verda

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_verda.sweep import VerdaSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestVerda(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "A100"}

    @pytest.fixture
    def config(self, verda_api: FakeVerda) -> Any:
        return verda(verda_api)

    @pytest.fixture
    def sweeper(self, verda_api: FakeVerda, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("VERDA_CLIENT_ID", CLIENT_ID)
        monkeypatch.setenv("VERDA_CLIENT_SECRET", CLIENT_SECRET)
        monkeypatch.setenv("VERDA_API_URL", verda_api.url)
        return VerdaSweeper()
