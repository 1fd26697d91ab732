"""Hyperstack object storage's ephemeral access keys: minted with the API key, deleted at close.

The calls, as Hyperstack documents them (API reference, "Object Storage" > "Access Keys":
https://docs.hyperstack.cloud/docs/api-reference/object-storage/access-keys/generate-access-key,
https://docs.hyperstack.cloud/docs/api-reference/delete-access-key-endpoint, and the SDK's
AccessKeysApi), relative to `https://infrahub-api.nexgencloud.com/v1`, each authenticated by the
raw API key in the `api_key` header (a missing or bad key answers 401):

- `POST /object-storage/access-keys`, body `{"region": "CANADA-1", "description": "..."}`
  (description optional, at most 250 characters), answers 201 with the key at the top level:
  `{"id": 134, "user_id": 27, "access_key": "...", "secret_key": "...", "region": "CANADA-1",
  "description": "...", "created_at": "..."}`. The secret is shown only then.
- `GET /object-storage/access-keys` lists `{"access_keys": [{id, access_key, region, ...}], "meta": {...}}`
  (no secrets); Skyward does not need it.
- `DELETE /object-storage/access-keys/{access_key_id}`, by the integer `id` above, answers 200
  (404 when it is gone already).

So the `id` is kept with the pair: it is what deletes the key when the storage closes.

The calls are made by skyward-hyperstack's API client (`skyward_hyperstack.storage_keys`), the one
that also runs Hyperstack pools: one client of the API, not two. A store given `access_key=` and
`secret_key=` mints nothing and needs no such package; one that mints without it installed says
which to install.
"""

from __future__ import annotations

import importlib
import os
import time
from types import ModuleType
from typing import Any, ClassVar

import structlog

from skyward.errors import ConfigurationError, MissingPackageError
from skyward.secrets import register_secret
from skyward.storage.client import StorageError
from skyward.storage.credentials import Credential, EphemeralKeys, MintedKey, resolve_credential

__all__ = ["API_KEY_ENV", "HYPERSTACK_API", "HyperstackKeys"]

#: Hyperstack's API, where an API key mints object-storage access keys.
HYPERSTACK_API = "https://infrahub-api.nexgencloud.com/v1"
#: Where the API key is read from, on first use, when `api_key=` is not given.
API_KEY_ENV = "HYPERSTACK_API_KEY"
#: The access keys' collection under the API.
ACCESS_KEYS = "/object-storage/access-keys"
#: Where a person finds a key Skyward could not delete.
CONSOLE_KEYS = "Object Storage > Access Keys in the Hyperstack console"
#: The distribution whose API client makes the calls.
PACKAGE = "skyward-hyperstack"


class HyperstackKeys(EphemeralKeys):
    """One ephemeral access key pair of Hyperstack's object storage in `region`.

    Nothing is read at construction: `api_key` (a string, a function returning one, or None for
    `$HYPERSTACK_API_KEY`) is resolved when the first key is minted, and the same key deletes it.
    """

    RUNTIME: ClassVar[tuple[str, ...]] = (*EphemeralKeys.RUNTIME, "_resolved_api_key")

    def __init__(self, api_key: Credential | None, region: str, *, api_url: str = HYPERSTACK_API) -> None:
        self.api_key = api_key
        self.region = region
        self.api_url = api_url.rstrip("/")
        super().__init__()

    def _reset(self) -> None:
        super()._reset()
        self._resolved_api_key: str | None = None

    def __repr__(self) -> str:
        return f"HyperstackKeys(region={self.region!r}, api_url={self.api_url!r})"

    # -- the two calls -----------------------------------------------------------------------------

    def mint(self) -> MintedKey:
        """`POST /object-storage/access-keys` for `region`; the pair and its id."""
        keys = _client()
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        description = f"skyward ephemeral key (pid {os.getpid()}, {when})"
        api_key = self._resolve_api_key()
        try:
            answer = keys.create_access_key(api_key, self.api_url, self.region, description)
        except Exception as exc:
            raise self._refused("minting an access key", exc) from None
        return self._minted(answer, description)

    def delete(self, key: MintedKey) -> None:
        """`DELETE /object-storage/access-keys/{id}`; a key gone already is deleted enough."""
        try:
            _client().delete_access_key(self._resolve_api_key(), self.api_url, key.id)
        except Exception as exc:
            error = self._refused(f"deleting access key id {key.id}", exc)
            left = f"access key id {key.id} is left: delete it under {CONSOLE_KEYS}"
            raise type(error)(f"{error}; {left}") from None
        structlog.get_logger().info(
            "skyward.storage_key_deleted", store="hyperstack", region=self.region, key_id=key.id
        )

    # -- helpers -----------------------------------------------------------------------------------

    def _minted(self, answer: Any, description: str) -> MintedKey:
        """The pair in the 201 answer (registered as secrets before anything else reads it)."""
        body = answer if isinstance(answer, dict) else {}
        access, secret, key_id = body.get("access_key"), body.get("secret_key"), body.get("id")
        for value in (access, secret):
            if isinstance(value, str):
                register_secret(value)
        complete = isinstance(access, str) and access and isinstance(secret, str) and secret
        if not complete or key_id is None:
            raise StorageError(
                f"Hyperstack's answer to POST {ACCESS_KEYS} (region {self.region}) lacks access_key, "
                f"secret_key or id; if a key was made, delete the one described {description!r} under "
                f"{CONSOLE_KEYS}"
            )
        structlog.get_logger().info(
            "skyward.storage_key_minted", store="hyperstack", region=self.region, key_id=str(key_id)
        )
        return MintedKey(id=str(key_id), access_key=str(access), secret_key=str(secret))

    def _resolve_api_key(self) -> str:
        """The API key: `api_key=` resolved, or `$HYPERSTACK_API_KEY`, once (secret registered)."""
        if self._resolved_api_key is None:
            if self.api_key is None:
                value = os.environ.get(API_KEY_ENV, "")
                if not value:
                    raise ConfigurationError(
                        f"sky.storage.Hyperstack(region={self.region!r}): no API key to mint an access key "
                        f"with; set {API_KEY_ENV} or pass api_key= (create one under Manage > API Keys in "
                        "the Hyperstack console)"
                    )
                register_secret(value)
            else:
                value = resolve_credential("sky.storage.Hyperstack", "api_key", self.api_key) or ""
            self._resolved_api_key = value
        return self._resolved_api_key

    def _refused(self, what: str, error: Exception) -> Exception:
        """The error for a failed call: the API key's fault (a `ConfigurationError`) or the API's."""
        where = f"sky.storage.Hyperstack(region={self.region!r}): {what}"
        if isinstance(error, ConfigurationError):
            return ConfigurationError(f"{where}: {error}; check api_key= or {API_KEY_ENV}")
        return StorageError(f"{where}: {error}")


def _client() -> ModuleType:
    """skyward-hyperstack's key calls; a clear error naming the package when it is missing."""
    try:
        return importlib.import_module("skyward_hyperstack.storage_keys")
    except ImportError:
        raise MissingPackageError(
            f"sky.storage.Hyperstack mints its access keys with {PACKAGE}'s API client: pip install "
            f"{PACKAGE} (or pass access_key= and secret_key= to use keys you made)"
        ) from None
