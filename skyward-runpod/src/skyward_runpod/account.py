"""Where RunPod's APIs are and where a RunPod API key comes from.

The lowest layer of the package: the provider resolves the config's key (`RunPod(api_key=...)`)
here when a pool starts, never the config when it is built (an environment key would otherwise
travel inside every pickled spec, and a script could not build `sky.RunPod()` without one); the
API client names the same variable when RunPod refuses the key.
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
    """The key given, else `$RUNPOD_API_KEY`; registered as a secret so no log line shows it.
    None found is a `ConfigurationError` naming `RunPod(api_key=...)` and `RUNPOD_API_KEY`."""
    return resolve_secret(
        value, API_KEY_VARIABLE, provider="RunPod", hint=f"create one at {KEYS_PAGE}"
    )
