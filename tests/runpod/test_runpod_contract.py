"""The provider contract (`skyward.testing.provider_contract`) on RunPod's fake API: the config,
the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_runpod import FakeRunPod
from runpod_support import API_KEY, runpod

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_runpod.sweep import RunPodSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestRunPod(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "A100"}

    @pytest.fixture
    def config(self, runpod_api: FakeRunPod) -> Any:
        return runpod(runpod_api)

    @pytest.fixture
    def sweeper(self, runpod_api: FakeRunPod, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("RUNPOD_API_KEY", API_KEY)
        monkeypatch.setenv("RUNPOD_API_URL", runpod_api.rest_url)
        monkeypatch.setenv("RUNPOD_GRAPHQL_URL", runpod_api.graphql_url)
        return RunPodSweeper()
