"""Where Novita's GPU instance API is and where a Novita API key comes from: the lowest layer.

The key is `Novita(api_key=...)`, else `$NOVITA_API_KEY` (the variable Novita's own tools read),
resolved when a pool starts (never inside the config, so an environment key never travels in a
pickled spec) and registered for masking; none is a `ConfigurationError` naming the variable,
before any request.
"""

from __future__ import annotations

from skyward.providers.api_key import ApiKeyAccount

API_KEY_VARIABLE = "NOVITA_API_KEY"
API_URL = "https://api.novita.ai/gpu-instance/openapi/v1"
KEYS_PAGE = "https://novita.ai/settings/key-management"

#: The key and the endpoint; `$NOVITA_API_URL` points `sky ls`/`down`/`offers` elsewhere.
ACCOUNT = ApiKeyAccount(
    cloud="Novita", variable=API_KEY_VARIABLE, url=API_URL, url_variable="NOVITA_API_URL", keys_page=KEYS_PAGE
)
