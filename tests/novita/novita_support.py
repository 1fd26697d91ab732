"""Helpers the Novita tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from fake_novita import FakeNovita

import skyward as sky

#: The fake account's key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "sk_novita_TESTKEY0123456789abcdefSECRET"


def novita(api: FakeNovita, **kwargs: Any) -> sky.Novita:
    """`sky.Novita` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    return sky.Novita(api_url=api.url, **login_here(kwargs))


def novita_pool(api: FakeNovita, *, provider: Any = None, **kwargs: Any) -> Any:
    return quiet_pool(provider or novita(api), **kwargs)
