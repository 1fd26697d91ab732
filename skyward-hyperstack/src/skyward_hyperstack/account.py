"""Where Hyperstack's Infrahub API is and where its API key comes from: the package's lowest layer.

Hyperstack authenticates every call by the raw API key in the `api_key` header. The key is
`Hyperstack(api_key=...)`, else `$HYPERSTACK_API_KEY` (the variable Hyperstack's own SDK and
quickstart read), resolved when a pool starts (never inside the config, so an environment key
never travels in a pickled spec) and registered for masking; none is a `ConfigurationError`
naming the variable, before any request.
"""

from __future__ import annotations

from skyward.providers.api_key import ApiKeyAccount

API_URL = "https://infrahub-api.nexgencloud.com/v1"
API_KEY_VARIABLE = "HYPERSTACK_API_KEY"
#: Points `sky ls`/`sky down`/`sky offers` at another endpoint (tests, proxies).
URL_VARIABLE = "HYPERSTACK_API_URL"
KEYS_PAGE = "https://console.hyperstack.cloud/api-keys"

ACCOUNT = ApiKeyAccount(
    cloud="Hyperstack", variable=API_KEY_VARIABLE, url=API_URL, url_variable=URL_VARIABLE, keys_page=KEYS_PAGE
)
