"""Where Verda's API is and where its OAuth client credentials come from: the package's lowest layer.

Verda (formerly DataCrunch) authenticates API calls with an OAuth 2 client-credentials grant: a
client id and secret, made in the console (Keys -> Cloud API credentials), traded at
`POST /oauth2/token` for a bearer token. Both come from `Verda(client_id=..., client_secret=...)`,
else `VERDA_CLIENT_ID` / `VERDA_CLIENT_SECRET` (the variables Verda's own SDK documents). They are
resolved when a pool starts, never inside the config, so an environment secret never travels
inside a pickled spec; a missing one is a `ConfigurationError` naming both variables, before any
request.
"""

from __future__ import annotations

import os

import attrs

from skyward.errors import ConfigurationError
from skyward.secrets import register_secret
from skyward.providers.credentials import CredentialStatus

API_URL = "https://api.verda.com/v1"
ID_VARIABLE = "VERDA_CLIENT_ID"
SECRET_VARIABLE = "VERDA_CLIENT_SECRET"
KEYS_PAGE = "https://console.verda.com/ (Keys -> Cloud API credentials)"


@attrs.frozen(repr=False)
class ClientCredentials:
    """The OAuth client id and secret; the secret stays out of `repr` and logs."""

    client_id: str
    client_secret: str

    def __repr__(self) -> str:
        return f"ClientCredentials(client_id={self.client_id!r})"


def resolve_credentials(client_id: str | None, client_secret: str | None) -> ClientCredentials:
    """The arguments, else `$VERDA_CLIENT_ID` / `$VERDA_CLIENT_SECRET`; both or an error."""
    found_id = (client_id or os.environ.get(ID_VARIABLE, "")).strip()
    found_secret = (client_secret or os.environ.get(SECRET_VARIABLE, "")).strip()
    pairs = ((ID_VARIABLE, found_id), (SECRET_VARIABLE, found_secret))
    missing = [name for name, value in pairs if not value]
    if missing:
        raise ConfigurationError(
            f"Verda needs OAuth client credentials: set {ID_VARIABLE} and {SECRET_VARIABLE} "
            f"(missing: {', '.join(missing)}) or pass Verda(client_id=..., client_secret=...); "
            f"create them at {KEYS_PAGE}"
        )
    register_secret(found_secret)
    return ClientCredentials(found_id, found_secret)


def locate_credentials() -> CredentialStatus:
    """For `sky providers`: whether both variables are set; reads nothing else, calls nothing."""
    found = [name for name in (ID_VARIABLE, SECRET_VARIABLE) if os.environ.get(name, "").strip()]
    if len(found) == 2:
        return CredentialStatus(found=True, where=f"${ID_VARIABLE}, ${SECRET_VARIABLE}")
    return CredentialStatus(found=False, where=f"looked in ${ID_VARIABLE}, ${SECRET_VARIABLE}")
