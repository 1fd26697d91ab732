"""The access keys of `sky.storage.Hyperstack`, minted and deleted by this package's API client.

Core's storage code is synchronous and may run inside a pool's event loop (rendering its volumes),
so each call runs `HyperstackAPI` on a short-lived thread with a loop and a session of its own
(`skyward.providers.calls`). A refused API key is a `ConfigurationError` (storage sits below the
providers and knows nothing of `Refused`), anything else the client's `ProvisionError`;
`skyward.storage.hyperstack` words them for the storage.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from skyward.errors import ConfigurationError
from skyward.providers.calls import on_own_thread, run_closing
from skyward.providers.rest import Refused
from skyward_hyperstack.api import HyperstackAPI

T = TypeVar("T")
#: How long one key call may take before the storage gives up on it.
TIMEOUT = 60.0


def create_access_key(api_key: str, url: str, region: str, description: str) -> dict[str, Any]:
    """`POST /object-storage/access-keys`: the new key's `id`, `access_key` and `secret_key`."""
    return _run(api_key, url, lambda api: api.create_access_key(region, description))


def delete_access_key(api_key: str, url: str, key_id: str) -> None:
    """`DELETE /object-storage/access-keys/{id}`; a key gone already is not an error."""
    _run(api_key, url, lambda api: api.delete_access_key(key_id))


def _run(api_key: str, url: str, work: Callable[[HyperstackAPI], Awaitable[T]]) -> T:
    try:
        call = lambda: run_closing(lambda: HyperstackAPI(api_key, url), work)  # noqa: E731
        return on_own_thread(call, timeout=TIMEOUT, thread="hyperstack-keys")
    except Refused as exc:
        raise ConfigurationError(str(exc)) from None
