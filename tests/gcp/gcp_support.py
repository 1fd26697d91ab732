"""Helpers the GCP tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_gcp import FakeGCP

import skyward as sky


def gcp(api: FakeGCP, **kwargs: Any) -> sky.GCP:
    """`sky.GCP` pointed at the fake (zone us-central1-a unless told), SSH open to loopback only,
    logging in as this user, venvs from this interpreter."""
    if "region" not in kwargs:
        kwargs.setdefault("zone", "us-central1-a")
    kwargs.setdefault("ssh_cidr", "127.0.0.1/32")
    return sky.GCP(api_endpoint=api.url, ssh_port=api.ssh_port, **login_here(kwargs))


def gcp_pool(api: FakeGCP, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake Compute Engine."""
    return quiet_pool(provider or gcp(api), **kwargs)
