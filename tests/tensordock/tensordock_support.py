"""Helpers the TensorDock tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_tensordock import FakeTensorDock

import skyward as sky

#: The fake organization's pair: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "tdkey-TESTKEY-0123456789abcdef"
API_TOKEN = "tdtoken-TESTTOKEN-fedcba9876543210SECRET"


def tensordock(api: FakeTensorDock, **kwargs: Any) -> sky.TensorDock:
    """`sky.TensorDock` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    kwargs.setdefault("api_token", API_TOKEN)
    return sky.TensorDock(api_url=api.url, **login_here(kwargs))


def tensordock_pool(api: FakeTensorDock, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake TensorDock, on an RTX 4090 by default."""
    kwargs.setdefault("accelerator", "RTX_4090")
    return quiet_pool(provider or tensordock(api), **kwargs)
