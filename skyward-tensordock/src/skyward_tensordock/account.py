"""Where TensorDock's marketplace API is and where its credentials come from: the package's lowest
layer.

TensorDock authenticates with a pair made together in its dashboard (Developer settings -> API):
an authorization key and its token. Each is `TensorDock(api_key=..., api_token=...)`, else
`$TENSORDOCK_API_KEY` / `$TENSORDOCK_API_TOKEN`, resolved when a pool starts (never inside the
config, so an environment credential never travels in a pickled spec) and registered for masking;
a missing one is a `ConfigurationError` naming its variable, before any request.
`$TENSORDOCK_API_URL` points `sky ls`, `sky down` and `sky offers` at another endpoint (a proxy,
or the tests' fake API).
"""

from __future__ import annotations

import os

import attrs

from skyward.providers.credentials import CredentialStatus, locate_secret, resolve_secret

API_KEY_VARIABLE = "TENSORDOCK_API_KEY"
API_TOKEN_VARIABLE = "TENSORDOCK_API_TOKEN"
URL_VARIABLE = "TENSORDOCK_API_URL"
API_URL = "https://dashboard.tensordock.com/api/v0"
KEYS_PAGE = "https://dashboard.tensordock.com/api"


@attrs.frozen
class Credentials:
    """The authorization pair every call sends; both kept out of `repr`."""

    api_key: str = attrs.field(repr=False)
    api_token: str = attrs.field(repr=False)

    def form(self) -> dict[str, str]:
        return {"api_key": self.api_key, "api_token": self.api_token}


def resolve_credentials(api_key: object = None, api_token: object = None) -> Credentials:
    hint = f"create an authorization at {KEYS_PAGE}"
    key = resolve_secret(api_key, API_KEY_VARIABLE, provider="TensorDock", hint=hint)
    token = resolve_secret(
        api_token, API_TOKEN_VARIABLE, provider="TensorDock", argument="api_token", hint=hint
    )
    return Credentials(key, token)


def locate_credentials(api_key: str | None = None, api_token: str | None = None) -> CredentialStatus:
    """Where both halves are (given, or their variables); not found names each one missing."""
    found = [
        CredentialStatus(found=True, where=f"TensorDock({name}=...)") if given else locate_secret(variable)
        for name, given, variable in (
            ("api_key", api_key, API_KEY_VARIABLE),
            ("api_token", api_token, API_TOKEN_VARIABLE),
        )
    ]
    if all(s.found for s in found):
        return CredentialStatus(found=True, where=" and ".join(s.where for s in found))
    looked = ", ".join(s.where.removeprefix("looked in ") for s in found if not s.found)
    return CredentialStatus(found=False, where=f"looked in {looked}")


def missing_variable(api_key: str | None = None, api_token: str | None = None) -> str:
    """The variables of the halves not found, for the error a pool gives before it starts."""
    wanted = [
        variable
        for given, variable in ((api_key, API_KEY_VARIABLE), (api_token, API_TOKEN_VARIABLE))
        if not given and not locate_secret(variable).found
    ]
    return " and ".join(wanted)


def env_url() -> str:
    """The endpoint a command without a pool uses: `$TENSORDOCK_API_URL`, else TensorDock's."""
    return os.environ.get(URL_VARIABLE) or API_URL
