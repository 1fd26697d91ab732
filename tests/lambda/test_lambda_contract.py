"""The provider contract (`skyward.testing.provider_contract`) on Lambda's fake API: the config,
the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_lambda import FakeLambda
from lambda_support import API_KEY, lambda_cloud

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_lambda.sweep import LambdaSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestLambdaCloud(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "H100"}

    @pytest.fixture
    def config(self, lambda_api: FakeLambda) -> Any:
        return lambda_cloud(lambda_api)

    @pytest.fixture
    def sweeper(self, lambda_api: FakeLambda, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("LAMBDA_API_KEY", API_KEY)
        monkeypatch.setenv("LAMBDA_API_URL", lambda_api.url)
        return LambdaSweeper()
