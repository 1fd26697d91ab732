"""`ApiKeyAccount`: where a cloud whose API takes one key finds the key and the endpoint.

Most clouds authenticate every call with one API key (Lambda, Hyperstack, Vultr, Massed Compute,
Novita). Their config, sweeper, offer source and price estimate each need the same five answers:
the key given, else one variable; the endpoint given, else `$<CLOUD>_API_URL` for a command
without a pool, else the cloud's own; and the error naming the variable. Declaring them once as an
`ApiKeyAccount` (in the package's `account.py`) keeps `sky providers`, a pool's start, `sky ls`
and `sky offers` in agreement on one cloud: its config (`KeyedConfig`), sweeper (`KeyedSweeper`),
offer source (`KeyedOffers`) and provider resolve through it.
"""

from __future__ import annotations

import os

import attrs

from skyward.providers.credentials import (
    CredentialStatus,
    MissingCredential,
    lacking,
    locate_secret,
    resolve_secret,
)


@attrs.frozen(kw_only=True)
class ApiKeyAccount:
    """Where one cloud's API key and endpoint come from.

    `cloud` is the config's public name ("LambdaCloud"), which errors name as the place to pass the
    key; `variable` the key's environment variable; `url` the cloud's endpoint and `url_variable`
    the variable that points commands without a pool (`sky ls`, `sky offers`) elsewhere (a proxy,
    a test's fake); `keys_page` where a user makes a key, for the error when none is found.
    """

    cloud: str
    variable: str
    url: str
    url_variable: str
    keys_page: str = ""

    @property
    def hint(self) -> str:
        return f"create one at {self.keys_page}" if self.keys_page else ""

    def resolve(self, value: object = None) -> str:
        """The key: `value`, else `$variable`, registered for masking; a `ConfigurationError`
        naming the argument, the variable and the keys page when there is none."""
        return resolve_secret(value, self.variable, provider=self.cloud, hint=self.hint)

    def locate(self) -> CredentialStatus:
        """Where a key would come from with none given (`sky providers`); reads no file, calls
        nothing."""
        return locate_secret(self.variable)

    def env_url(self) -> str:
        """The endpoint of a command without a pool: `$url_variable`, else the cloud's."""
        return os.environ.get(self.url_variable) or self.url

    def missing(self, given: str | None) -> MissingCredential | None:
        """What a config holding `given` lacks to start: None with a key given or in the variable,
        else the variable to set and how."""
        if given:
            return None
        fix = f"set it or pass {self.cloud}(api_key=...)"
        return lacking(self.locate(), provider=self.cloud, credential=self.variable, fix=fix)
