"""`sky providers --check` for RunPod: one cheap authenticated call that says whether the key works.

It lists the account's pods (REST v1 `GET /pods`, the sweeper's call): nothing is created, and
a refused key answers 401/403, which `api.RunPodAPI` turns into the error shown. `$RUNPOD_API_URL`
points it at another endpoint, as it does `sky ls`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os

from skyward.providers.credentials import CredentialStatus
from skyward_runpod.account import API_KEY_VARIABLE, GRAPHQL_URL, REST_URL

URL_VARIABLE = "RUNPOD_API_URL"
#: How long the check may wait for RunPod.
CHECK_TIMEOUT = 30.0


def verify(status: CredentialStatus) -> CredentialStatus:
    """`status` (a key found) with `verified` and `detail` from RunPod's answer."""
    import attrs

    from skyward_runpod.api import RunPodAPI

    key = os.environ.get(API_KEY_VARIABLE, "").strip()
    if not status.found or not key:
        return status

    async def pods() -> int:
        api = RunPodAPI(key, os.environ.get(URL_VARIABLE) or REST_URL, GRAPHQL_URL)
        try:
            return len(await api.list_pods())
        finally:
            await api.close()

    # On a thread of its own, with its own loop: the caller may be inside one.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="runpod-check")
    try:
        count = pool.submit(asyncio.run, pods()).result(timeout=CHECK_TIMEOUT)
    except Exception as error:  # noqa: BLE001 - any refusal or failure is the answer to report
        return attrs.evolve(status, verified=False, detail=str(error) or type(error).__name__)
    finally:
        pool.shutdown(wait=False)
    return attrs.evolve(status, verified=True, detail=f"the key lists the account's pods ({count})")
