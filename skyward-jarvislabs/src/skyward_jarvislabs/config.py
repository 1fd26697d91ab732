"""`sky.JarvisLabs(...)`: the frozen value a user writes to run a pool on JarvisLabs instances.

Checked when built, so a bad template or size fails on the line that wrote it. The API key is
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


def _word(instance: JarvisLabs, attribute: attrs.Attribute[str], value: object) -> None:
    if not (isinstance(value, str) and value.strip()):
        raise ConfigurationError(f'JarvisLabs({attribute.name}={value!r}): expected a name such as "pytorch"')


def _storage(instance: JarvisLabs, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 20:
        raise ConfigurationError(f"JarvisLabs(storage={value!r}): expected the disk's size in GB, 20 or more")


def _regions(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise ConfigurationError(
            f'JarvisLabs(regions={value!r}): expected region ids such as "india-noida-01"'
        )
    return tuple(n.strip() for n in names)


@attrs.frozen(kw_only=True)
class JarvisLabs(KeyedConfig):
    """Run a pool on JarvisLabs GPU instances, one instance per node, reached over SSH.

    `api_key` defaults to `JL_API_KEY`. `template` is the framework image every instance starts
    ("pytorch", JarvisLabs' default; "vm" for a whole VM, which JarvisLabs sells on demand only).
    `storage` is each instance's disk in GB. `regions` limits where instances may go (else
    `Spec.region`, else wherever GPUs are free). Spot instances are containers' (`allocation=`).
    The pool's exit destroys its instances (never pauses them). `ssh_user` overrides the user the
    listing's SSH command names; `python` names an interpreter already on the image; `api_url`
    stands in for every region's endpoint (tests, proxies).
    """

    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("JarvisLabs"))
    template: str = attrs.field(default="pytorch", validator=_word)
    storage: int = attrs.field(default=50, validator=_storage)
    regions: tuple[str, ...] = attrs.field(default=None, converter=_regions)
    ssh_user: str | None = None
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("JarvisLabs"))

    cloud = "JarvisLabs"
    provider_name = "jarvislabs"
    key_variable = "JL_API_KEY"
    provider_class = "skyward_jarvislabs.provider:JarvisLabsProvider"
    price_estimate = "skyward_jarvislabs.offers:estimate_hourly_price"
    offers_class = "skyward_jarvislabs.offers:JarvisOffers"
    key_check = "skyward_jarvislabs.sweep:verify"
