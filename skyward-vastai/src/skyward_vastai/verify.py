"""`sky providers --check` for Vast.ai: one cheap authenticated call that says whether the key works.

It lists the account's instances (`GET /api/v1/instances/`, the sweeper's call): nothing is
rented, and a refused key answers 401/403, which `api.VastAPI` turns into the error shown.
`$VAST_SERVER_URL` points it at another server, as it does `sky ls`.
"""

from __future__ import annotations

import asyncio
import os

from skyward.providers.credentials import CredentialStatus, verified

URL_VARIABLE = "VAST_SERVER_URL"
#: How long the check may wait for Vast.ai.
CHECK_TIMEOUT = 30.0


def verify(status: CredentialStatus) -> CredentialStatus:
    """`status` (a key found) with `verified` and `detail` from Vast's answer."""
    from skyward_vastai.account import SERVER_URL, resolve_api_key
    from skyward_vastai.api import VastAPI

    def instances() -> int:
        api = VastAPI(resolve_api_key(None), os.environ.get(URL_VARIABLE) or SERVER_URL)
        return len(asyncio.run(api.instances()))

    return verified(
        status, instances, "the key lists the account's instances", thread="vast-check", timeout=CHECK_TIMEOUT
    )
