"""Helpers the RunPod tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

import getpass
import sys
from typing import Any

from fake_runpod import FakeRunPod

import skyward as sky

#: The fake account's key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "rpa_TESTKEY0123456789abcdefSECRET"


def runpod(api: FakeRunPod, **kwargs: Any) -> sky.RunPod:
    """`sky.RunPod` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    kwargs.setdefault("ssh_user", getpass.getuser())
    kwargs.setdefault("python", sys.executable)
    return sky.RunPod(api_url=api.rest_url, graphql_url=api.graphql_url, **kwargs)


def runpod_pool(api: FakeRunPod, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake RunPod."""
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=provider or runpod(api), **kwargs)
