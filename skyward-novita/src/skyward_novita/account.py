"""Where Novita's GPU instance API is and where a Novita API key comes from: the lowest layer.

The key is `Novita(api_key=...)`, else `$NOVITA_API_KEY` (the variable Novita's own tools read),
resolved when a pool starts (never inside the config, so an environment key never travels in a
pickled spec) and registered for masking; none is a `ConfigurationError` naming the variable,
before any request.
"""

from __future__ import annotations

from skyward.providers.credentials import CredentialStatus, locate_secret, resolve_secret

API_KEY_VARIABLE = "NOVITA_API_KEY"
API_URL = "https://api.novita.ai/gpu-instance/openapi/v1"
KEYS_PAGE = "https://novita.ai/settings/key-management"


def resolve_api_key(value: object) -> str:
    return resolve_secret(value, API_KEY_VARIABLE, provider="Novita", hint=f"create one at {KEYS_PAGE}")


def locate_api_key() -> CredentialStatus:
    return locate_secret(API_KEY_VARIABLE)
