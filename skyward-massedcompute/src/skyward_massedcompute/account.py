"""Where Massed Compute's VM API is and where its API key comes from: the package's lowest layer.

The key is `MassedCompute(api_key=...)`, else `$MASSED_API_KEY` (made in the Massed Compute
console's API settings), resolved when a pool starts (never inside the config, so an environment
key never travels in a pickled spec) and registered for masking; none is a `ConfigurationError`
naming the variable, before any request. `$MASSED_API_URL` points `sky ls`, `sky down` and
`sky offers` at another endpoint (a proxy, or the tests' fake API).
"""

from __future__ import annotations

import os

from skyward.providers.credentials import CredentialStatus, locate_secret, resolve_secret

API_KEY_VARIABLE = "MASSED_API_KEY"
URL_VARIABLE = "MASSED_API_URL"
API_URL = "https://vm.massedcompute.com/api/v1"
KEYS_PAGE = "https://vm.massedcompute.com (Settings -> API)"


def resolve_api_key(value: object) -> str:
    return resolve_secret(
        value, API_KEY_VARIABLE, provider="MassedCompute", hint=f"create one at {KEYS_PAGE}"
    )


def locate_api_key() -> CredentialStatus:
    return locate_secret(API_KEY_VARIABLE)


def env_url() -> str:
    """The endpoint a command without a pool uses: `$MASSED_API_URL`, else Massed Compute's."""
    return os.environ.get(URL_VARIABLE) or API_URL
