"""What the VastAI tests build pools with: the fake's API key, the provider and the pool.

A module of its own (not conftest.py), so test modules import it by a name no other test
directory uses.
"""

from __future__ import annotations

import getpass
import sys
from typing import Any

from vast_server import FakeVast

import skyward as sky

API_KEY = "vast-test-key-7f3a9c1e5b2d4f6a"


def vast_provider(vast: FakeVast, **kwargs: Any) -> sky.VastAI:
    kwargs.setdefault("api_key", API_KEY)
    kwargs.setdefault("ssh_user", getpass.getuser())
    kwargs.setdefault("python", sys.executable)
    return sky.VastAI(server_url=vast.url, **kwargs)


def vast_pool(vast: FakeVast, *, provider: Any = None, **kwargs: Any) -> sky.Compute:
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    kwargs.setdefault("allocation", "on-demand")
    return sky.Compute(provider=provider or vast_provider(vast), **kwargs)
