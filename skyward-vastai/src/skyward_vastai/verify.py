"""`sky providers --check` for Vast.ai: one cheap authenticated call that says whether the key works.

It lists the account's instances (`GET /api/v1/instances/`, the sweeper's call): nothing is
rented, and a refused key answers 401/403, which `api.VastAPI` turns into the error shown.
`$VAST_SERVER_URL` points it at another server, as it does `sky ls`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os

import attrs

from skyward.providers.credentials import CredentialStatus

URL_VARIABLE = "VAST_SERVER_URL"
#: How long the check may wait for Vast.ai.
CHECK_TIMEOUT = 30.0


def verify(status: CredentialStatus) -> CredentialStatus:
    """`status` (a key found) with `verified` and `detail` from Vast's answer."""
    from skyward_vastai.account import SERVER_URL, resolve_api_key
    from skyward_vastai.api import VastAPI

    if not status.found:
        return status
    # On a thread of its own, with its own loop: the caller may be inside one.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="vast-check")
    try:
        api = VastAPI(resolve_api_key(None), os.environ.get(URL_VARIABLE) or SERVER_URL)
        rows = pool.submit(asyncio.run, api.instances()).result(timeout=CHECK_TIMEOUT)
    except Exception as error:  # noqa: BLE001 - any refusal or failure is the answer to report
        return attrs.evolve(status, verified=False, detail=str(error) or type(error).__name__)
    finally:
        pool.shutdown(wait=False)
    return attrs.evolve(status, verified=True, detail=f"the key lists the account's instances ({len(rows)})")
