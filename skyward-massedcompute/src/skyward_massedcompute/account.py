"""Where Massed Compute's VM API is and where its API key comes from: the package's lowest layer.

The key is `MassedCompute(api_key=...)`, else `$MASSED_API_KEY` (made in the Massed Compute
console's API settings), resolved when a pool starts (never inside the config, so an environment
key never travels in a pickled spec) and registered for masking; none is a `ConfigurationError`
naming the variable, before any request. `$MASSED_API_URL` points `sky ls`, `sky down` and
`sky offers` at another endpoint (a proxy, or the tests' fake API).
"""

from __future__ import annotations

from skyward.providers.api_key import ApiKeyAccount

API_KEY_VARIABLE = "MASSED_API_KEY"
URL_VARIABLE = "MASSED_API_URL"
API_URL = "https://vm.massedcompute.com/api/v1"
KEYS_PAGE = "https://vm.massedcompute.com (Settings -> API)"

ACCOUNT = ApiKeyAccount(
    cloud="MassedCompute",
    variable=API_KEY_VARIABLE,
    url=API_URL,
    url_variable=URL_VARIABLE,
    keys_page=KEYS_PAGE,
)
