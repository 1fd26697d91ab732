"""Helpers the Hyperstack tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_infrahub import FakeInfrahub

import skyward as sky

#: The fake account's API key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "hs-TESTKEY0123456789abcdefAPIKEY"


def hyperstack(api: FakeInfrahub, **kwargs: Any) -> sky.Hyperstack:
    """`sky.Hyperstack` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    return sky.Hyperstack(api_url=api.url, ssh_port=api.ssh_port, **login_here(kwargs))


def hyperstack_pool(api: FakeInfrahub, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake Hyperstack."""
    return quiet_pool(provider or hyperstack(api), **kwargs)
