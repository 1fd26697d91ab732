"""Helpers the Scaleway tests share: credentials, a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_scaleway import FakeScaleway

import skyward as sky

#: The fake account's credentials, in the shapes the SDK checks (the secret a UUID: distinctive
#: enough that a leak into a log line cannot hide).
SECRET_KEY = "5c0ffee5-1234-4abc-9def-0123456789ab"
ACCESS_KEY = "SCWSKYWARDTESTKEY0AB"
PROJECT = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
CREDENTIALS = {"SCW_SECRET_KEY": SECRET_KEY, "SCW_ACCESS_KEY": ACCESS_KEY, "SCW_DEFAULT_PROJECT_ID": PROJECT}


def scaleway(api: FakeScaleway, **kwargs: Any) -> sky.Scaleway:
    """`sky.Scaleway` pointed at the fake (its API, its sshd port, its address echo), logging in
    as this user, venvs from this interpreter."""
    kwargs.setdefault("secret_key", SECRET_KEY)
    kwargs.setdefault("access_key", ACCESS_KEY)
    kwargs.setdefault("project_id", PROJECT)
    kwargs.setdefault("ip_lookup_url", api.echo_url)
    return sky.Scaleway(api_url=api.url, ssh_port=api.ssh_port, **login_here(kwargs))


def scaleway_pool(api: FakeScaleway, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake Scaleway."""
    return quiet_pool(provider or scaleway(api), **kwargs)
