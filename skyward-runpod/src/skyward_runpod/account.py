"""Where RunPod's APIs are and where a RunPod API key comes from.

The lowest layer of the package: the config (`RunPod(api_key=...)`) resolves its key here when it
is built, and the API client names the same variable when RunPod refuses the key.
"""

from __future__ import annotations

from skyward.providers.credentials import resolve_secret

#: Where the key is read from when `api_key=` is left out.
API_KEY_VARIABLE = "RUNPOD_API_KEY"
#: RunPod's REST API v1 (pods) and its GraphQL API (the GPU type listing, which REST v1 lacks).
REST_URL = "https://rest.runpod.io/v1"
GRAPHQL_URL = "https://api.runpod.io/graphql"
KEYS_PAGE = "https://www.runpod.io/console/user/settings"


def resolve_api_key(value: object) -> str:
    """The key given, else `$RUNPOD_API_KEY`; registered as a secret so no log line shows it."""
    return resolve_secret(
        value, API_KEY_VARIABLE, provider="RunPod", hint=f"create one at {KEYS_PAGE}"
    )
