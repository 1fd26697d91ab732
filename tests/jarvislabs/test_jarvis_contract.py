"""The provider contract (`skyward.testing.provider_contract`) on JarvisLabs' fake API: the
config, the lifecycle, a pool, `sky ls`/`sky down`'s sweeper and the offer source."""

from __future__ import annotations

from typing import Any

import pytest
from fake_jarvis import FakeJarvis
from jarvis_support import API_KEY, jarvis

from skyward.testing.provider_contract import OfferSourceContract, ProviderContract, SweeperContract
from skyward_jarvislabs.sweep import JarvisLabsSweeper

#: Each cloud builds its machines' environments from nothing here, whatever ran before (tests/conftest.py).
pytestmark = pytest.mark.cold_machines


class TestJarvisLabs(ProviderContract, SweeperContract, OfferSourceContract):
    spec_kwargs = {"accelerator": "A100"}

    @pytest.fixture
    def config(self, jarvis_api: FakeJarvis) -> Any:
        return jarvis(jarvis_api)

    @pytest.fixture
    def sweeper(self, jarvis_api: FakeJarvis, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("JL_API_KEY", API_KEY)
        monkeypatch.setenv("JL_API_URL", jarvis_api.url)
        return JarvisLabsSweeper()
