"""The provider contract (`skyward.testing.provider_contract`) on the test cluster: the config,
the lifecycle driven by hand, a pool, and `sky ls`/`sky down`'s sweeper."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import slurm_provider
from slurm_cluster import SlurmCluster

from skyward.testing.provider_contract import ProviderContract, SweeperContract
from skyward_slurm.sweep import SlurmSweeper


class TestSlurm(ProviderContract, SweeperContract):
    nodes = 2

    @pytest.fixture
    def config(self, slurm: SlurmCluster) -> Any:
        return slurm_provider(slurm)

    @pytest.fixture
    def sweeper(self, slurm: SlurmCluster) -> Any:
        return SlurmSweeper()
