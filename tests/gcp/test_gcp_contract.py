"""The provider contract (`skyward.testing.provider_contract`) on the fake Compute Engine: the
config, the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_gcp import FakeGCP
from gcp_support import gcp

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_gcp.sweep import GCPSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestGCP(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "T4"}

    @pytest.fixture
    def config(self, gcp_api: FakeGCP) -> Any:
        return gcp(gcp_api)

    @pytest.fixture
    def sweeper(self, gcp_api: FakeGCP, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("GCP_API_ENDPOINT", gcp_api.url)
        return GCPSweeper()
