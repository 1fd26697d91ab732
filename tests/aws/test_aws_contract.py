"""The provider contract (`skyward.testing.provider_contract`) on moto's EC2, with a real sshd
behind each instance: the config, the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the
offer source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cloud import FaultProxy, Machines, Network, aws_provider

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_aws.sweep import AWSSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestAWS(ProviderContract, SweeperContract, OfferSourceContract):
    @pytest.fixture
    def config(self, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path) -> Any:
        return aws_provider(faults, network, machines)

    @pytest.fixture
    def sweeper(self, faults: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("AWS_ENDPOINT_URL", faults.url)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        return AWSSweeper()
