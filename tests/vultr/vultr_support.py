"""Helpers the Vultr tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_vultr import FakeVultr

import skyward as sky

#: The fake account's key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "VULTRTESTKEY0123456789ABCDEFGHIJKLMNOP"


def vultr(api: FakeVultr, **kwargs: Any) -> sky.Vultr:
    """`sky.Vultr` pointed at the fake (its API, its sshd port, its address echo), logging in as
    this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    kwargs.setdefault("ip_lookup_url", api.echo_url)
    return sky.Vultr(api_url=api.url, ssh_port=api.ssh_port, **login_here(kwargs))


def vultr_pool(api: FakeVultr, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake Vultr."""
    return quiet_pool(provider or vultr(api), **kwargs)
