"""`sky.JarvisLabs(...)`: the frozen value a user writes to run a pool on JarvisLabs instances.

Checked when built, so a bad template or size fails on the line that wrote it. The API key is
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
    from skyward_jarvislabs.offers import JarvisOffers
    from skyward_jarvislabs.provider import JarvisLabsProvider


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
class JarvisLabs(ProviderConfig):
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

    @property
    def name(self) -> str:
        return "jarvislabs"

    def create(self, options: Options | None = None) -> JarvisLabsProvider:
        """The provider for one pool; resolves the key now, so a missing one fails first.
        Imported here, when a pool starts: it loads aiohttp and asyncssh."""
        from skyward_jarvislabs.provider import JarvisLabsProvider

        return JarvisLabsProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The first offer's price per node per hour; None when it cannot be told."""
        from skyward_jarvislabs.offers import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> JarvisOffers:
        """This account's GPU types and prices in Skyward's catalog (`sky offers`)."""
        from skyward_jarvislabs.offers import JarvisOffers

        return JarvisOffers(api_key=self.api_key, api_url=self.api_url)

    def missing_credentials(self) -> MissingCredential | None:
        """None with `api_key=` given or `$JL_API_KEY` set, else which variable to set."""
        from skyward.providers.credentials import lacking
        from skyward_jarvislabs.account import API_KEY_VARIABLE

        if self.api_key:
            return None
        return lacking(
            type(self).credentials(),
            provider="JarvisLabs",
            credential=API_KEY_VARIABLE,
            fix="set it or pass JarvisLabs(api_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$JL_API_KEY` holds a key; with `check`, whether
        JarvisLabs accepts it (one listing, `sweep.verify`)."""
        from skyward_jarvislabs.account import locate_api_key

        status = locate_api_key()
        if not check:
            return status
        from skyward_jarvislabs.sweep import verify

        return verify(status)
