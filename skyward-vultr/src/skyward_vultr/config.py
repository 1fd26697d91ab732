"""`sky.Vultr(...)`: the frozen value a user writes to run a pool on Vultr Cloud GPU instances.

Checked when built, so a misspelt region or range fails on the line that wrote it. The API key is
resolved when a pool starts (`account`), never here, so an environment key never travels in a
pickled spec; one given explicitly is kept out of `repr` and registered for masking. What every
one-key cloud's config answers (its provider, prices, offers, credentials) is the kit's
`KeyedConfig`, from the pieces named here, each imported only when asked. The imports flow one
way: account <- api/catalog/machine <- pricing <- provider <- config <- hooks.
"""

from __future__ import annotations

import ipaddress
import re

import attrs

from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.providers.address import IP_LOOKUP_URL
from skyward.providers.keyed_config import KeyedConfig
from skyward_vultr.account import ACCOUNT

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
class Vultr(KeyedConfig):
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

    account = ACCOUNT
    provider_name = "vultr"
    provider_class = "skyward_vultr.provider:VultrProvider"
    price_estimate = "skyward_vultr.pricing:estimate_hourly_price"
    offers_class = "skyward_vultr.offers:VultrOffers"
    key_check = "skyward_vultr.sweep:verify"
