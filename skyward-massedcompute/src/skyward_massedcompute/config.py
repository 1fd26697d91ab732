"""`sky.MassedCompute(...)`: the frozen value a user writes to run a pool on Massed Compute VMs.

Checked when built, so a bad image or region fails on the line that wrote it. The API key is
resolved when a pool starts (`account`), never here, so an environment key never travels in a
pickled spec; one given explicitly is kept out of `repr` and registered for masking. What every
one-key cloud's config answers (its provider, prices, offers, credentials) is the kit's
`KeyedConfig`, from the pieces named here. The imports flow one way: account <-
api/catalog/machine <- provider/offers/sweep <- config <- hooks.
"""

from __future__ import annotations

import attrs

from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.providers.keyed_config import KeyedConfig
from skyward_massedcompute.account import ACCOUNT

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
class MassedCompute(KeyedConfig):
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

    account = ACCOUNT
    provider_name = "massedcompute"
    provider_class = "skyward_massedcompute.provider:MassedComputeProvider"
    price_estimate = "skyward_massedcompute.offers:estimate_hourly_price"
    offers_class = "skyward_massedcompute.offers:MassedOffers"
    key_check = "skyward_massedcompute.sweep:verify"
