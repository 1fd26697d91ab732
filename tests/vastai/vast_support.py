"""What the VastAI tests build pools with: the fake's API key, the provider and the pool.

A module of its own (not conftest.py), so test modules import it by a name no other test
directory uses.
"""

from __future__ import annotations

from typing import Any

from cloud_workloads import login_here, quiet_pool
from vast_server import FakeVast

import skyward as sky

API_KEY = "vast-test-key-7f3a9c1e5b2d4f6a"


def vast_provider(vast: FakeVast, **kwargs: Any) -> sky.VastAI:
    kwargs.setdefault("api_key", API_KEY)
    return sky.VastAI(server_url=vast.url, **login_here(kwargs))


def vast_pool(vast: FakeVast, *, provider: Any = None, **kwargs: Any) -> sky.Compute:
    kwargs.setdefault("allocation", "on-demand")
    return quiet_pool(provider or vast_provider(vast), **kwargs)
