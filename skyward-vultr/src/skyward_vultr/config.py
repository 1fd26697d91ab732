"""`sky.Vultr(...)`: the frozen value a user writes to run a pool on Vultr Cloud GPU instances.

Checked when built, so a misspelt region or range fails on the line that wrote it. The API key is
resolved when a pool starts (`account`), never here, so an environment key never travels in a
pickled spec; one given explicitly is kept out of `repr` and registered for masking. The imports
flow one way: account <- api/catalog/machine <- pricing <- provider <- config <- hooks (the
config imports the provider only inside `create`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

import attrs

from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.providers.address import IP_LOOKUP_URL
from skyward.providers.base import ProviderConfig

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec
    from skyward_vultr.offers import VultrOffers
    from skyward_vultr.provider import VultrProvider

#: Vultr's "Ubuntu 24.04 LTS x64" (`GET /os` lists the others).
DEFAULT_OS_ID = 2284


def _regions(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    codes = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if not codes or not all(isinstance(c, str) and re.fullmatch(r"[a-zA-Z]{3,4}", c.strip()) for c in codes):
        raise ConfigurationError(
            f'Vultr(region={value!r}): expected region ids such as "ewr" or ("ewr", "ord") '
            "(`vultr-cli regions list` shows them)"
        )
    return tuple(c.strip().lower() for c in codes)


def _cidr(instance: Vultr, attribute: attrs.Attribute[str | None], value: object) -> None:
    if value is None:
        return
    try:
        ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise ConfigurationError(
            f'Vultr(ssh_cidr={value!r}): expected an address range such as "203.0.113.0/24", or None '
            "for this client's public address"
        ) from None


def _lookup(instance: Vultr, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"Vultr(ip_lookup_url={value!r}): expected a URL that answers with the caller's address, "
            f"such as {IP_LOOKUP_URL!r}"
        )


def _os_id(instance: Vultr, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"Vultr(os_id={value!r}): expected an OS id such as {DEFAULT_OS_ID}")


@attrs.frozen(kw_only=True)
class Vultr(ProviderConfig):
    """Run a pool on Vultr Cloud GPU instances, one instance per node, reached over SSH as root.

    `api_key` defaults to `VULTR_API_KEY`. `region` limits where instances go (a region id such as
    "ewr", or several; else `Spec.region`, else any region that can deploy the plan). `os_id` is
    the OS every instance boots, or `image_id` a Marketplace image instead. SSH is opened to
    `ssh_cidr`, by default this client's public address alone as `ip_lookup_url` sees it. Vultr
    sells no spot instances: `allocation="spot"` is refused. `python` names an interpreter already
    on the image; `api_url` points at another endpoint (tests, proxies).
    """

    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("Vultr"))
    region: tuple[str, ...] = attrs.field(default=None, converter=_regions)
    os_id: int = attrs.field(default=DEFAULT_OS_ID, validator=_os_id)
    image_id: str | None = None
    ssh_cidr: str | None = attrs.field(default=None, validator=_cidr)
    ip_lookup_url: str = attrs.field(default=IP_LOOKUP_URL, validator=_lookup)
    ssh_user: str = "root"
    ssh_port: int = 22
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("Vultr"))

    @property
    def name(self) -> str:
        return "vultr"

    @property
    def url(self) -> str:
        from skyward_vultr.account import API_URL

        return self.api_url or API_URL

    def create(self, options: Options | None = None) -> VultrProvider:
        """The provider for one pool; resolves the key now, so a missing one fails first.
        Imported here, when a pool starts: it loads aiohttp and asyncssh."""
        from skyward_vultr.provider import VultrProvider

        return VultrProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The cheapest fitting offer's price per node per hour, for `Options(selection="cheapest")`;
        None when it cannot be told (no key, no matching plan, the API down)."""
        from skyward_vultr.pricing import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> VultrOffers:
        """This account's Cloud GPU plans and prices in Skyward's catalog (`sky offers`), which a
        pool with several specs and `selection="cheapest"` prices its specs from."""
        from skyward_vultr.offers import VultrOffers

        return VultrOffers(api_key=self.api_key, api_url=self.api_url)

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start, for a pool with several specs to skip it: None with
        `api_key=` given or `$VULTR_API_KEY` set, else which variable to set. Reads the
        environment only; calls nothing."""
        from skyward.providers.credentials import lacking
        from skyward_vultr.account import API_KEY_VARIABLE

        if self.api_key:
            return None
        return lacking(
            type(self).credentials(),
            provider="Vultr",
            credential=API_KEY_VARIABLE,
            fix="set it or pass Vultr(api_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$VULTR_API_KEY` holds a key; with `check`, whether Vultr
        accepts it (one listing, `sweep.verify`)."""
        from skyward_vultr.account import locate_api_key

        status = locate_api_key()
        if not check:
            return status
        from skyward_vultr.sweep import verify

        return verify(status)
