"""`sky.TensorDock(...)`: the frozen value a user writes to run a pool on TensorDock's marketplace.

Checked when built, so a bad region or disk size fails on the line that wrote it. The key and
token are resolved when a pool starts (`account`), never here, so environment credentials never
travel in a pickled spec; ones given explicitly are kept out of `repr` and registered for
masking. The imports flow one way: account <- api/catalog/machine <- provider/offers <- config <-
hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.providers.base import ProviderConfig

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec
    from skyward_tensordock.offers import TensorDockOffers
    from skyward_tensordock.provider import TensorDockProvider

#: The image every VM boots, by the name TensorDock's deploy form takes.
DEFAULT_OS = "Ubuntu 22.04 LTS"
#: The smallest disk TensorDock deploys (GB).
MIN_STORAGE_GB = 100


def _regions(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise ConfigurationError(
            f'TensorDock(regions={value!r}): expected cities, regions or countries such as "Winnipeg"'
        )
    return tuple(n.strip() for n in names)


def _storage(instance: TensorDock, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_STORAGE_GB:
        raise ConfigurationError(
            f"TensorDock(storage_gb={value!r}): expected a whole number of GB, at least {MIN_STORAGE_GB}"
        )


@attrs.frozen(kw_only=True)
class TensorDock(ProviderConfig):
    """Run a pool on TensorDock marketplace VMs, one VM per node, reached over SSH as root through
    the port TensorDock forwards to the VM's port 22.

    `api_key` and `api_token` (one authorization pair) default to `TENSORDOCK_API_KEY` and
    `TENSORDOCK_API_TOKEN`. `regions` limits which hostnodes may be used, by city, region or
    country (else `Spec.region`, else any). `storage_gb` is each VM's disk; `operating_system`
    the image, as TensorDock names it. TensorDock's API sells on-demand VMs only:
    `allocation="spot"` is refused. `python` names an interpreter already on the image instead of
    installing one; `api_url` points at another endpoint (tests, proxies).
    """

    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("TensorDock"))
    api_token: str | None = attrs.field(default=None, repr=False, validator=secret("TensorDock"))
    regions: tuple[str, ...] = attrs.field(default=None, converter=_regions)
    storage_gb: int = attrs.field(default=MIN_STORAGE_GB, validator=_storage)
    operating_system: str = DEFAULT_OS
    ssh_user: str = "root"
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("TensorDock"))

    @property
    def name(self) -> str:
        return "tensordock"

    @property
    def url(self) -> str:
        from skyward_tensordock.account import API_URL

        return self.api_url or API_URL

    def create(self, options: Options | None = None) -> TensorDockProvider:
        """The provider for one pool; resolves the pair now, so a missing half fails first.
        Imported here, when a pool starts: it loads aiohttp and asyncssh."""
        from skyward_tensordock.provider import TensorDockProvider

        return TensorDockProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The first offer's price per node per hour; None when it cannot be told."""
        from skyward_tensordock.offers import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> TensorDockOffers:
        """The marketplace's GPUs and prices in Skyward's catalog (`sky offers`)."""
        from skyward_tensordock.offers import TensorDockOffers

        return TensorDockOffers(api_key=self.api_key, api_token=self.api_token, api_url=self.api_url)

    def missing_credentials(self) -> MissingCredential | None:
        """None with both halves given or in their variables, else which variables to set."""
        from skyward.providers.credentials import lacking
        from skyward_tensordock.account import locate_credentials, missing_variable

        return lacking(
            locate_credentials(self.api_key, self.api_token),
            provider="TensorDock",
            credential=missing_variable(self.api_key, self.api_token) or "TENSORDOCK_API_KEY",
            fix="set it or pass TensorDock(api_key=..., api_token=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether both variables hold the pair; with `check`, whether
        TensorDock accepts it (one listing, `sweep.verify`)."""
        from skyward_tensordock.account import locate_credentials

        status = locate_credentials()
        if not check:
            return status
        from skyward_tensordock.sweep import verify

        return verify(status)
