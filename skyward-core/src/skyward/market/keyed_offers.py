"""`KeyedOffers`: the offer source (`sky offers`) of a cloud whose API takes one key.

Such a cloud's source is the same but for its listing: it is built from a config's `api_key` and
`api_url` (None: the cloud's variable and endpoint), keyed by its endpoint (`$<CLOUD>_API_URL`
points it elsewhere, as it does the sweeper), says where its key is without reading it
(`credentials`), and resolves the key only when it fetches. A cloud names its variables and writes
`listing(api_key, url)`: its offers, read from its API. A cloud that declares its key as an
`ApiKeyAccount` names it instead of the four variables (`account = ACCOUNT`), so its source reads
the same variables as its config and sweeper.
"""

from __future__ import annotations

import abc
import os
from typing import TYPE_CHECKING, ClassVar

import attrs

from skyward.market.offer import Offer
from skyward.market.source import MARKETPLACE_TTL
from skyward.providers.credentials import CredentialStatus, locate_secret, resolve_secret

if TYPE_CHECKING:
    from skyward.providers.api_key import ApiKeyAccount


@attrs.frozen
class KeyedOffers(abc.ABC):
    """A cloud's offers for one key and endpoint (see the module); a subclass sets the class
    variables and writes `listing`."""

    api_key: str | None = attrs.field(default=None, repr=False)
    api_url: str | None = None
    ttl: float = MARKETPLACE_TTL

    #: The source's name in `sky offers` ("hyperstack") and the cloud's public name ("Hyperstack").
    name: ClassVar[str]
    cloud: ClassVar[str]
    #: The cloud's endpoint, the variable that overrides it, and the key's variable.
    default_url: ClassVar[str]
    url_variable: ClassVar[str]
    key_variable: ClassVar[str]
    #: Where to get a key, for the error when none is found.
    key_hint: ClassVar[str] = ""
    #: The cloud's key and endpoint declared once; a subclass that sets it gets the four above.
    account: ClassVar[ApiKeyAccount | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        account = cls.__dict__.get("account")
        if account is not None:
            cls.cloud, cls.key_variable = account.cloud, account.variable
            cls.default_url, cls.url_variable, cls.key_hint = account.url, account.url_variable, account.hint

    @property
    def key(self) -> str:
        return self.api_url or os.environ.get(self.url_variable) or self.default_url

    def credentials(self) -> CredentialStatus:
        if self.api_key:
            return CredentialStatus(found=True, where=f"{self.cloud}(api_key=...)")
        return locate_secret(self.key_variable)

    def fetch(self) -> list[Offer]:
        api_key = resolve_secret(self.api_key, self.key_variable, provider=self.cloud, hint=self.key_hint)
        return self.listing(api_key, self.key)

    @abc.abstractmethod
    def listing(self, api_key: str, url: str) -> list[Offer]:
        """Every offer the cloud lists now, read with `api_key` from `url`."""
