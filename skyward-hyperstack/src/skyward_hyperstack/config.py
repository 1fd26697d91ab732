"""`sky.Hyperstack(...)`: the frozen value a user writes to run a pool on Hyperstack (NexGen Cloud).

Everything is checked when the value is built, so a misspelt region fails on the line that wrote
it. The API key is resolved when a pool starts (`account`), never here: an environment secret
would otherwise travel inside every pickled spec; one given explicitly is kept out of `repr` and
registered for masking. The config names its provider, price estimate, offers and key check
(`skyward.providers.keyed_config`), imported only when used: building one loads no HTTP or SSH library.
"""

from __future__ import annotations

import ipaddress

import attrs

from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.providers.keyed_config import KeyedConfig
from skyward_hyperstack.account import ACCOUNT

#: An Ubuntu image with the NVIDIA driver, CUDA and Docker (`GET /core/images` lists others).
DEFAULT_IMAGE = "Ubuntu Server 22.04 LTS R570 CUDA 12.8 with Docker"
#: Hyperstack's regions as its API reference lists them.
REGIONS = ("CANADA-1", "NORWAY-1", "US-1")


def _region(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value.strip().upper() not in REGIONS:
        raise ConfigurationError(
            f"Hyperstack(region={value!r}): expected one of {', '.join(REGIONS)}, or None for any"
        )
    return value.strip().upper()


def _text(instance: Hyperstack, attribute: attrs.Attribute[str], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigurationError(f"Hyperstack({attribute.name}={value!r}): expected a non-empty string")


def _cidr(instance: Hyperstack, attribute: attrs.Attribute[str], value: object) -> None:
    try:
        ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise ConfigurationError(
            f'Hyperstack(ssh_from={value!r}): expected an address range such as "203.0.113.7/32"'
        ) from None


@attrs.frozen(kw_only=True)
class Hyperstack(KeyedConfig):
    """Run a pool on Hyperstack GPU VMs, one VM per node, reached over SSH.

    `api_key` defaults to `HYPERSTACK_API_KEY`. `region` limits where VMs go (else `Spec.region`,
    else the cheapest region with stock); `environment` names the Hyperstack environment VMs and
    the pool's keypair are made in (default `skyward-<region>`, made when missing and kept: it
    costs nothing). `image` is the OS image every VM boots; `ssh_from` is the address range the
    VM's firewall lets reach `ssh_port` (every address by default: sshd takes only the pool's key
    and answers only with its pinned host key). `ssh_user` is the image's login ("ubuntu").
    `python` names an interpreter already on the image instead of installing one; `api_url`
    points at another endpoint (tests, proxies). Hyperstack sells no spot VMs.
    """

    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("Hyperstack"))
    region: str | None = attrs.field(default=None, converter=_region)
    environment: str | None = attrs.field(default=None, validator=_text)
    image: str = attrs.field(default=DEFAULT_IMAGE, validator=_text)
    ssh_from: str = attrs.field(default="0.0.0.0/0", validator=_cidr)
    ssh_user: str = "ubuntu"
    ssh_port: int = 22
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("Hyperstack"))

    account = ACCOUNT
    provider_name = "hyperstack"
    provider_class = "skyward_hyperstack.provider:HyperstackProvider"
    price_estimate = "skyward_hyperstack.pricing:estimate_hourly_price"
    offers_class = "skyward_hyperstack.offers:HyperstackOffers"
    key_check = "skyward_hyperstack.sweep:verify"

    def environment_in(self, region: str) -> str:
        """The environment VMs in `region` go in."""
        return self.environment or f"skyward-{region.lower()}"
