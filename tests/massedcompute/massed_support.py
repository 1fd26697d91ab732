"""Helpers the Massed Compute tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_massed import FakeMassed

import skyward as sky

#: The fake account's key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "massed_TESTKEY_0123456789abcdefSECRET"


def massed(api: FakeMassed, **kwargs: Any) -> sky.MassedCompute:
    """`sky.MassedCompute` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    return sky.MassedCompute(api_url=api.url, ssh_port=api.ssh_port, **login_here(kwargs))


def massed_pool(api: FakeMassed, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake Massed Compute, on an L40 by default."""
    kwargs.setdefault("accelerator", "L40")
    return quiet_pool(provider or massed(api), **kwargs)
