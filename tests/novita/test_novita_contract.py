"""The provider contract (`skyward.testing.provider_contract`) on Novita's fake API: the config,
the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_novita import FakeNovita
from novita_support import API_KEY, novita

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_novita.sweep import NovitaSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestNovita(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "RTX_4090"}

    @pytest.fixture
    def config(self, novita_api: FakeNovita) -> Any:
        return novita(novita_api)

    @pytest.fixture
    def sweeper(self, novita_api: FakeNovita, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("NOVITA_API_KEY", API_KEY)
        monkeypatch.setenv("NOVITA_API_URL", novita_api.url)
        return NovitaSweeper()
