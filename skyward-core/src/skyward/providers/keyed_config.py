"""`KeyedConfig`: the members every config of a cloud with one API key writes the same way.

Such a cloud's config (a frozen attrs value) has an `api_key` (None: read from the cloud's
variable when a pool starts, never at construction, so an environment key never travels in a
pickled spec) and an `api_url` (None: the cloud's endpoint). What Skyward asks of it beyond its
own settings is the same for each: its name, its provider for a pool, its price estimate, its
offer source, the credential a pool lacks, and where `sky providers` finds (and checks) the key.
The config names each piece as `"module:attribute"`, imported only when asked, so that building
a config (or `import skyward`) loads none of the cloud's machinery. A config that names its
`ApiKeyAccount` (`account = ACCOUNT`, the one its sweeper and offer source read) takes its public
name, its key's variable and its endpoint (`url`) from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from skyward.extension.cloud_hooks import load
from skyward.extension.provider_config import ProviderConfig

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.api_key import ApiKeyAccount
    from skyward.providers.base import Provider
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec


class KeyedConfig(ProviderConfig):
    """The base of a one-key cloud's config (see the module); a subclass declares `api_key` and
    `api_url` fields and sets the class variables."""

    __slots__ = ()

    #: The cloud's public name ("JarvisLabs", as `sky.JarvisLabs`) and provider name ("jarvislabs").
    cloud: ClassVar[str]
    provider_name: ClassVar[str]
    #: The variable the key is read from ("JL_API_KEY").
    key_variable: ClassVar[str]
    #: "module:attribute" of the provider class (built with the config and the options), of the
    #: price estimate (`(config, spec) -> float | None`), of the offer source class (built with
    #: `api_key=` and `api_url=`) and of the key check (`(CredentialStatus) -> CredentialStatus`).
    provider_class: ClassVar[str]
    price_estimate: ClassVar[str]
    offers_class: ClassVar[str]
    key_check: ClassVar[str]

    #: Where the key and the endpoint are: sets `cloud` and `key_variable`, and answers `url`.
    account: ClassVar[ApiKeyAccount | None] = None

    api_key: str | None
    api_url: str | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        account = cls.__dict__.get("account")
        if account is not None:
            cls.cloud, cls.key_variable = account.cloud, account.variable

    @property
    def url(self) -> str:
        """The endpoint a pool calls: `api_url=`, else the account's."""
        if self.account is None:
            raise AttributeError(f"{type(self).__name__} names no `account`: it writes its own `url`")
        return self.api_url or self.account.url

    @property
    def name(self) -> str:
        return self.provider_name

    def create(self, options: Options | None = None) -> Provider:
        """The provider for one pool; it resolves the key, so a missing one fails first."""
        provider: Any = load(self.provider_class)
        return provider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The first offer's price per node per hour; None when it cannot be told."""
        return load(self.price_estimate)(self, spec)

    def offer_source(self) -> Any:
        """This account's offers in Skyward's catalog (`sky offers`)."""
        return load(self.offers_class)(api_key=self.api_key, api_url=self.api_url)

    def missing_credentials(self) -> MissingCredential | None:
        """None with `api_key=` given or the variable set, else which variable to set."""
        from skyward.providers.credentials import lacking

        if self.api_key:
            return None
        return lacking(
            type(self).credentials(),
            provider=self.cloud,
            credential=self.key_variable,
            fix=f"set it or pass {self.cloud}(api_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether the variable holds a key; with `check`, whether the cloud
        accepts it (one cheap authenticated call)."""
        from skyward.providers.credentials import locate_secret

        status = locate_secret(cls.key_variable)
        return load(cls.key_check)(status) if check else status
