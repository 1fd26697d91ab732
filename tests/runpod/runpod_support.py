"""Helpers the RunPod tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_runpod import FakeRunPod

import skyward as sky

#: The fake account's key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "rpa_TESTKEY0123456789abcdefSECRET"


def runpod(api: FakeRunPod, **kwargs: Any) -> sky.RunPod:
    """`sky.RunPod` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    return sky.RunPod(api_url=api.rest_url, graphql_url=api.graphql_url, **login_here(kwargs))


def runpod_pool(api: FakeRunPod, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake RunPod."""
    return quiet_pool(provider or runpod(api), **kwargs)
