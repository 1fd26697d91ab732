"""`sky providers --check` for RunPod: one cheap authenticated call that says whether the key works.

It lists the account's pods (REST v1 `GET /pods`, the sweeper's call): nothing is created, and
a refused key answers 401/403, which `api.RunPodAPI` turns into the error shown. `$RUNPOD_API_URL`
points it at another endpoint, as it does `sky ls`.
"""

from __future__ import annotations

import os

from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus, verified
from skyward_runpod.account import API_KEY_VARIABLE, GRAPHQL_URL, REST_URL

URL_VARIABLE = "RUNPOD_API_URL"
#: How long the check may wait for RunPod.
CHECK_TIMEOUT = 30.0


def verify(status: CredentialStatus) -> CredentialStatus:
    """`status` (a key found) with `verified` and `detail` from RunPod's answer."""
    from skyward_runpod.api import RunPodAPI

    key = os.environ.get(API_KEY_VARIABLE, "").strip()
    if not key:
        return status
    url = os.environ.get(URL_VARIABLE) or REST_URL

    async def pods(api: RunPodAPI) -> int:
        return len(await api.list_pods())

    return verified(
        status, lambda: run_closing(lambda: RunPodAPI(key, url, GRAPHQL_URL), pods),
        "the key lists the account's pods", thread="runpod-check", timeout=CHECK_TIMEOUT,
    )
