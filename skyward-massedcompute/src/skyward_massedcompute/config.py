"""`sky.MassedCompute(...)`: the frozen value a user writes to run a pool on Massed Compute VMs.

Checked when built, so a bad image or region fails on the line that wrote it. The API key is
resolved when a pool starts (`account`), never here, so an environment key never travels in a
pickled spec; one given explicitly is kept out of `repr` and registered for masking. The imports
flow one way: account <- api/catalog/machine <- provider/offers <- config <- hooks.
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
    from skyward_massedcompute.offers import MassedOffers
    from skyward_massedcompute.provider import MassedComputeProvider

#: The image a machine boots: the first of `GET /images` whose name contains this.
DEFAULT_IMAGE = "ubuntu"


def _image(instance: MassedCompute, attribute: attrs.Attribute[int | str], value: object) -> None:
    named = isinstance(value, str) and value.strip()
    if not (named or (isinstance(value, int) and not isinstance(value, bool) and value > 0)):
        raise ConfigurationError(
            f"MassedCompute(image={value!r}): expected an image id (an int) or a name to look up, "
            f"such as {DEFAULT_IMAGE!r}"
        )


def _regions(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise ConfigurationError(
            f'MassedCompute(regions={value!r}): expected region names such as "us-central-3"'
        )
    return tuple(n.strip() for n in names)


@attrs.frozen(kw_only=True)
class MassedCompute(ProviderConfig):
    """Run a pool on Massed Compute GPU VMs, one VM per node, reached over SSH as root.

    `api_key` defaults to `MASSED_API_KEY`. `image` is the image every VM boots: an id from
    Massed Compute's image list, or a name to find in it. `regions` limits where VMs may go (else
    `Spec.region`, else wherever Massed Compute has capacity). Massed Compute sells on-demand VMs
    only: `allocation="spot"` is refused. `ssh_port` is where the VMs' sshd listens; `python`
    names an interpreter already on the image instead of installing one; `api_url` points at
    another endpoint (tests, proxies).
    """

    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("MassedCompute"))
    image: int | str = attrs.field(default=DEFAULT_IMAGE, validator=_image)
    regions: tuple[str, ...] = attrs.field(default=None, converter=_regions)
    ssh_user: str = "root"
    ssh_port: int = 22
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("MassedCompute"))

    @property
    def name(self) -> str:
        return "massedcompute"

    @property
    def url(self) -> str:
        from skyward_massedcompute.account import API_URL

        return self.api_url or API_URL

    def create(self, options: Options | None = None) -> MassedComputeProvider:
        """The provider for one pool; resolves the key now, so a missing one fails first.
        Imported here, when a pool starts: it loads aiohttp and asyncssh."""
        from skyward_massedcompute.provider import MassedComputeProvider

        return MassedComputeProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The first offer's price per node per hour; None when it cannot be told."""
        from skyward_massedcompute.offers import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> MassedOffers:
        """This account's products and prices in Skyward's catalog (`sky offers`)."""
        from skyward_massedcompute.offers import MassedOffers

        return MassedOffers(api_key=self.api_key, api_url=self.api_url)

    def missing_credentials(self) -> MissingCredential | None:
        """None with `api_key=` given or `$MASSED_API_KEY` set, else which variable to set."""
        from skyward.providers.credentials import lacking
        from skyward_massedcompute.account import API_KEY_VARIABLE

        if self.api_key:
            return None
        return lacking(
            type(self).credentials(),
            provider="MassedCompute",
            credential=API_KEY_VARIABLE,
            fix="set it or pass MassedCompute(api_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$MASSED_API_KEY` holds a key; with `check`, whether
        Massed Compute accepts it (one listing, `sweep.verify`)."""
        from skyward_massedcompute.account import locate_api_key

        status = locate_api_key()
        if not check:
            return status
        from skyward_massedcompute.sweep import verify

        return verify(status)
