"""The kit of a cloud whose API takes one key: where the key and the endpoint are found
(`ApiKeyAccount`), and the config base that hands out the cloud's parts (`ApiKeyConfig`).

Most clouds authenticate every call with one API key (Lambda, Hyperstack, Vultr, Massed Compute,
Novita). Their config, sweeper, offer source and price estimate each need the same five answers:
the key given, else one variable; the endpoint given, else `$<CLOUD>_API_URL` for a command
without a pool, else the cloud's own; and the error naming the variable. Declaring them once as an
`ApiKeyAccount` keeps `sky providers`, a pool's start and `sky offers` in agreement on one cloud.

`ApiKeyConfig` is the rest of such a config that does not depend on the cloud: `create`,
`hourly_price`, `offer_source`, `credentials` and `missing_credentials`, each reaching the cloud's
module through a `"module:attribute"` name (`ApiKeyCloud`) imported only when called, so building
a config (in a script, in a pickled spec) imports no HTTP client and no SSH library.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from skyward.extension.cloud_hooks import load
from skyward.providers.base import ProviderConfig
from skyward.providers.credentials import (
    CredentialStatus,
    MissingCredential,
    lacking,
    locate_secret,
    resolve_secret,
)

if TYPE_CHECKING:
    from skyward.market.source import OfferSource
    from skyward.options import Options
    from skyward.providers.base import Provider
    from skyward.spec import Spec


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


@attrs.frozen(kw_only=True)
class ApiKeyCloud:
    """Which of a single-key cloud's modules does what, each named `"module:attribute"` and
    imported when first used: `provider`, the class built with `(config, options)`; `hourly_price`,
    the function of `(config, spec)`; `offers`, the offer source class built with `api_key=` and
    `api_url=`; `sweeper`, the sweeper class (built with no argument) whose `verify(status)`
    proves a key for `sky providers --check`."""

    name: str
    account: ApiKeyAccount
    provider: str
    hourly_price: str
    offers: str
    sweeper: str


class ApiKeyConfig(ProviderConfig):
    """The base of a single-key cloud's config: a frozen attrs subclass declares `cloud` (its
    `ApiKeyCloud`) and the fields `api_key` and `api_url`, and gets the provider contract's
    members from them (see the module)."""

    __slots__ = ()

    cloud: ClassVar[ApiKeyCloud]
    api_key: str | None
    api_url: str | None

    @property
    def name(self) -> str:
        return self.cloud.name

    @property
    def url(self) -> str:
        """The endpoint a pool calls: `api_url=`, else the cloud's."""
        return self.api_url or self.cloud.account.url

    def create(self, options: Options | None = None) -> Provider:
        """The provider for one pool; it resolves the key when built, so a missing one fails
        before anything is created."""
        provider: Provider = load(self.cloud.provider)(self, options)
        return provider

    def hourly_price(self, spec: Spec) -> float | None:
        """One node's price per hour for `spec` (`Options(selection="cheapest")`); None when it
        cannot be told (no key, nothing fitting, the API down)."""
        price: float | None = load(self.cloud.hourly_price)(self, spec)
        return price

    def offer_source(self) -> OfferSource:
        """This config's account's offers in Skyward's catalog (`sky offers`)."""
        source: OfferSource = load(self.cloud.offers)(api_key=self.api_key, api_url=self.api_url)
        return source

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start; reads the environment only, calls nothing."""
        return self.cloud.account.missing(self.api_key)

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether the key's variable is set; with `check`, whether the cloud
        accepts it (one listing through the sweeper, which creates nothing)."""
        status = cls.cloud.account.locate()
        if not check:
            return status
        sweeper: Any = load(cls.cloud.sweeper)()
        checked: CredentialStatus = sweeper.verify(status)
        return checked
