"""Where Vultr's API is and where a Vultr API key comes from: the package's lowest layer.

The key is `Vultr(api_key=...)`, else `$VULTR_API_KEY` (the variable Vultr's own CLI, Terraform
provider and Ansible collection read), resolved when a pool starts (never inside the config, so an
environment key never travels in a pickled spec) and registered for masking; none is a
`ConfigurationError` naming the variable, before any request.
"""

from __future__ import annotations

from skyward.providers.api_key import ApiKeyAccount

API_KEY_VARIABLE = "VULTR_API_KEY"
#: Points `sky ls`/`sky down`/`sky offers` at another endpoint (a proxy, the tests' fake).
URL_VARIABLE = "VULTR_API_URL"
API_URL = "https://api.vultr.com/v2"
KEYS_PAGE = "https://my.vultr.com/settings/#settingsapi"
#: The tag every instance Skyward creates carries (`sky ls` lists by it).
TAG = "skyward"

ACCOUNT = ApiKeyAccount(
    cloud="Vultr", variable=API_KEY_VARIABLE, url=API_URL, url_variable=URL_VARIABLE, keys_page=KEYS_PAGE
)
