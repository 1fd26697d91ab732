"""Where a Vast.ai API key comes from: the lowest layer of the package.

The key is resolved when a pool starts (the provider) or a price is asked (the market), never
inside the config: an environment key would otherwise travel inside every pickled spec.
"""

from __future__ import annotations

import os
from pathlib import Path

from skyward.providers.credentials import resolve_secret

#: Where Vast's own tools look for the key, in the order the SDK uses (after `VAST_API_KEY`).
API_KEY_VARIABLE = "VAST_API_KEY"
#: Vast.ai's API server (`VastAI(server_url=None)`).
SERVER_URL = "https://console.vast.ai"
KEYS_PAGE = "https://cloud.vast.ai/manage-keys/"


def key_files() -> tuple[Path, ...]:
    """The files `vastai set api-key` writes, newest layout first (as the SDK reads them)."""
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return (config_home / "vastai" / "vast_api_key", Path.home() / ".vast_api_key")


def resolve_api_key(explicit: str | None) -> str:
    """The key to use: `explicit`, else `$VAST_API_KEY`, else the SDK's key files.

    Raises `ConfigurationError` naming `VAST_API_KEY` when there is none, so a pool fails before
    it creates anything rather than on its first API call.
    """
    return resolve_secret(
        explicit, API_KEY_VARIABLE, provider="VastAI", config_files=key_files(),
        hint=f"(`vastai set api-key ...` writes those files); create one at {KEYS_PAGE}",
    )
