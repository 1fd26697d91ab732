"""Helpers the Novita tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

import getpass
import sys
from typing import Any

from fake_novita import FakeNovita

import skyward as sky

#: The fake account's key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "sk_novita_TESTKEY0123456789abcdefSECRET"


def novita(api: FakeNovita, **kwargs: Any) -> sky.Novita:
    """`sky.Novita` pointed at the fake, logging in as this user, venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    kwargs.setdefault("ssh_user", getpass.getuser())
    kwargs.setdefault("python", sys.executable)
    return sky.Novita(api_url=api.url, **kwargs)


def novita_pool(api: FakeNovita, *, provider: Any = None, **kwargs: Any) -> Any:
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=provider or novita(api), **kwargs)
