"""Where JarvisLabs' API is and where its API key comes from: the package's lowest layer.

The key is `JarvisLabs(api_key=...)`, else `$JL_API_KEY` (made at jarvislabs.ai/settings/api-keys,
the variable JarvisLabs' own CLI and SDK read), resolved when a pool starts (never inside the
config, so an environment key never travels in a pickled spec) and registered for masking; none is
a `ConfigurationError` naming the variable, before any request.

JarvisLabs answers each region's machines at a backend of its own (`REGION_URLS`, as its SDK
routes them); listings are read from the default region's. `$JL_API_URL` (or
`JarvisLabs(api_url=...)`) puts one endpoint in place of all of them: a proxy, or the tests' fake.
"""

from __future__ import annotations

import os

from skyward.providers.credentials import CredentialStatus, locate_secret, resolve_secret

API_KEY_VARIABLE = "JL_API_KEY"
URL_VARIABLE = "JL_API_URL"
REGION_URLS = {
    "india-noida-01": "https://backendn.jarvislabs.net",
    "india-chennai-01": "https://backendc.jarvislabs.net",
    "europe-01": "https://backendeu.jarvislabs.net",
}
DEFAULT_REGION = "india-noida-01"
API_URL = REGION_URLS[DEFAULT_REGION]
KEYS_PAGE = "https://jarvislabs.ai/settings/api-keys"


def resolve_api_key(value: object) -> str:
    return resolve_secret(value, API_KEY_VARIABLE, provider="JarvisLabs", hint=f"create one at {KEYS_PAGE}")


def locate_api_key() -> CredentialStatus:
    return locate_secret(API_KEY_VARIABLE)


def env_url() -> str | None:
    """The one endpoint a command without a pool uses for every region, if `$JL_API_URL` names one."""
    return os.environ.get(URL_VARIABLE) or None


def region_url(region: str, override: str | None) -> str:
    """The backend that answers `region`'s machines (`override` for every region when given)."""
    return override or REGION_URLS.get(region, API_URL)
