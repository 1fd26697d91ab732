"""`sky.Scaleway(...)`: the frozen value a user writes to run a pool on Scaleway GPU Instances.

Checked when built, so a misspelt zone or range fails on the line that wrote it. The credentials
are resolved when a pool starts (`account`), never here, so an environment key never travels in a
pickled spec; a key given explicitly is kept out of `repr` and registered for masking. The imports
flow one way: account <- api/catalog/machine <- provider <- config <- hooks (the config imports the
provider only inside `create`).
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
    from skyward_scaleway.offers import ScalewayOffers
    from skyward_scaleway.provider import ScalewayProvider

#: Scaleway's Ubuntu image with NVIDIA's driver and CUDA, by its Marketplace label.
DEFAULT_IMAGE = "ubuntu_noble_gpu_os_12"
DEFAULT_ZONE = "fr-par-2"


def _zones(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    zones = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if not zones or not all(
        isinstance(z, str) and re.fullmatch(r"[a-z]{2}-[a-z]{3}-\d", z.strip()) for z in zones
    ):
        raise ConfigurationError(
            f'Scaleway(zone={value!r}): expected zones such as "fr-par-2" or ("fr-par-2", "nl-ams-1")'
        )
    return tuple(z.strip() for z in zones)


def _cidr(instance: Scaleway, attribute: attrs.Attribute[str | None], value: object) -> None:
    if value is None:
        return
    try:
        ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise ConfigurationError(
            f'Scaleway(ssh_cidr={value!r}): expected an address range such as "203.0.113.0/24", '
            "or None for this client's public address"
        ) from None


@attrs.frozen(kw_only=True)
class Scaleway(ProviderConfig):
    """Run a pool on Scaleway GPU Instances, one server per node, reached over SSH as root.

    `secret_key`, `access_key` and `project_id` default to `SCW_SECRET_KEY`, `SCW_ACCESS_KEY`,
    `SCW_DEFAULT_PROJECT_ID`, else the CLI's profile (`~/.config/scw/config.yaml`).
    `guardian_secret_key` is the key each server keeps to end itself (default: the pool's; an IAM
    key limited to Instances in the project is safer). `zone` is where servers go (one zone such as
    "fr-par-2", or several tried in turn; else `Spec.region`, else "fr-par-2"); `image` the image
    every server boots. SSH is opened to `ssh_cidr`, by default this client's public address alone
    as `ip_lookup_url` sees it. Scaleway sells no spot GPU Instances: `allocation="spot"` is
    refused. `python` names an interpreter already on the image; `api_url` points at another
    endpoint (tests, proxies).
    """

    secret_key: str | None = attrs.field(default=None, repr=False, validator=secret("Scaleway"))
    access_key: str | None = None
    project_id: str | None = None
    guardian_secret_key: str | None = attrs.field(default=None, repr=False, validator=secret("Scaleway"))
    zone: tuple[str, ...] = attrs.field(default=None, converter=_zones)
    image: str = DEFAULT_IMAGE
    ssh_cidr: str | None = attrs.field(default=None, validator=_cidr)
    ip_lookup_url: str = IP_LOOKUP_URL
    ssh_user: str = "root"
    ssh_port: int = 22
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("Scaleway"))

    @property
    def name(self) -> str:
        return "scaleway"

    @property
    def url(self) -> str:
        from skyward_scaleway.account import api_url as default_url

        return self.api_url or default_url()

    def zones_for(self, spec: Spec) -> tuple[str, ...]:
        """Where servers may go: `zone=`, else `Spec.region` (a zone), else the default zone."""
        if self.zone:
            return self.zone
        return _zones(spec.region) if spec.region else (DEFAULT_ZONE,)

    def create(self, options: Options | None = None) -> ScalewayProvider:
        """The provider for one pool; resolves the credentials now, so missing ones fail first.
        Imported here, when a pool starts: it loads the SDK and asyncssh."""
        from skyward_scaleway.provider import ScalewayProvider

        return ScalewayProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The cheapest fitting type's price per node per hour (EUR), for
        `Options(selection="cheapest")`; None when it cannot be told."""
        from skyward_scaleway.offers import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> ScalewayOffers:
        """This account's GPU types and prices in Skyward's catalog (`sky offers`)."""
        from skyward_scaleway.offers import ScalewayOffers

        return ScalewayOffers(config=self)

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start, for a pool with several specs to skip it: None with
        `secret_key=` given or a key in the environment or the CLI's profile. Calls nothing."""
        from skyward.providers.credentials import lacking
        from skyward_scaleway.account import SECRET_KEY_VARIABLE

        if self.secret_key:
            return None
        return lacking(
            type(self).credentials(),
            provider="Scaleway",
            credential=SECRET_KEY_VARIABLE,
            fix="set it (with SCW_ACCESS_KEY and SCW_DEFAULT_PROJECT_ID) or pass Scaleway(secret_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: where the secret key is; with `check`, whether Scaleway accepts
        it (one listing, `sweep.verify`)."""
        from skyward_scaleway.account import locate

        status = locate()
        if not check:
            return status
        from skyward_scaleway.sweep import verify

        return verify(status)
