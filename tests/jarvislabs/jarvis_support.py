"""Helpers the JarvisLabs tests share: a config and a pool pointed at the fake API."""

from __future__ import annotations

import sys
from typing import Any

from cloud_workloads import quiet_pool
from fake_jarvis import FakeJarvis

import skyward as sky

#: The fake account's key: long and distinctive, so a leak into a log line cannot hide.
API_KEY = "jl_TESTKEY_0123456789abcdefSECRET"


def jarvis(api: FakeJarvis, **kwargs: Any) -> sky.JarvisLabs:
    """`sky.JarvisLabs` pointed at the fake, logging in as the user its instances' `ssh_str` names
    (this one), venvs from this interpreter."""
    kwargs.setdefault("api_key", API_KEY)
    kwargs.setdefault("python", sys.executable)
    return sky.JarvisLabs(api_url=api.url, **kwargs)


def jarvis_pool(api: FakeJarvis, *, provider: Any = None, **kwargs: Any) -> Any:
    """A quiet pool (not started) on the fake JarvisLabs, on one A100 by default."""
    kwargs.setdefault("accelerator", "A100")
    return quiet_pool(provider or jarvis(api), **kwargs)
