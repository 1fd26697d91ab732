"""Helpers the Verda tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_verda import FakeVerda

import skyward as sky

#: The fake account's credentials: long and distinctive, so a leak into a log line cannot hide.
CLIENT_ID = "verda-client-TESTID0123"
CLIENT_SECRET = "vsec_TESTSECRET0123456789abcdefSECRET"


def verda(api: FakeVerda, **kwargs: Any) -> sky.Verda:
    """`sky.Verda` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("client_id", CLIENT_ID)
    kwargs.setdefault("client_secret", CLIENT_SECRET)
    return sky.Verda(api_url=api.url, ssh_port=api.ssh_port, **login_here(kwargs))


def verda_pool(api: FakeVerda, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake Verda."""
    return quiet_pool(provider or verda(api), **kwargs)
