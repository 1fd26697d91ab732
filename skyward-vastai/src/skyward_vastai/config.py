"""`sky.VastAI(...)`: the settings a user writes to run a pool on Vast.ai's GPU marketplace.

The config is a frozen value: it is pickled with the `Spec`, compared, printed. That is why the
API key is never *resolved* here (an environment key would otherwise travel inside every pickled
spec; see `account`) and why an explicit key is kept out of `repr` and registered for masking
in logs.

The config is the package's front: the pool turns it into a provider with `create()` and asks it
`hourly_price()`; both hand over to `provider` and `market`, which never import this module at run
time (only for annotations), so the imports flow one way: account <- api/gpus <- machine/market
<- provider <- config <- hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from skyward.containers import image_ref
from skyward.errors import ConfigurationError
from skyward.secrets import register_secret
from skyward.providers.base import ProviderConfig
from skyward_vastai.account import SERVER_URL

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec
    from skyward_vastai.offers import VastOffers
    from skyward_vastai.provider import VastAIProvider

DEFAULT_SERVER_URL = SERVER_URL
#: Vast's documented default image: it resolves to a CUDA tag that matches the host's driver.
DEFAULT_IMAGE = "vastai/base-image:@vastai-automatic-tag"


def _geolocation(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    codes = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if not all(isinstance(c, str) and len(c.strip()) == 2 and c.strip().isalpha() for c in codes):
        raise ConfigurationError(
            f"VastAI(geolocation={value!r}): expected two-letter country codes, "
            'e.g. "US" or ("DE", "NL")'
        )
    return tuple(c.strip().upper() for c in codes)


def _docker_image(value: object) -> str:
    """A reference string or a `sky.DockerImage` (`sky.containers.cuda("12.8")`), as its reference."""
    return image_ref(value, provider="VastAI", argument="docker_image")


def _check_reliability(instance: VastAI, attribute: attrs.Attribute[float], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigurationError(
            f"VastAI(min_reliability={value!r}): a fraction from 0 to 1; pass e.g. min_reliability=0.98"
        )


def _check_positive(instance: VastAI, attribute: attrs.Attribute[float], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigurationError(f"VastAI({attribute.name}={value!r}): must be a positive number")


def _check_secret(instance: VastAI, attribute: attrs.Attribute[str | None], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigurationError("VastAI(api_key=...): expected the key as a non-empty string, or None")


@attrs.frozen(kw_only=True)
class VastAI(ProviderConfig):
    """Rent GPU machines on Vast.ai, one machine per node, as Docker containers reached over SSH.

    `api_key=None` reads `VAST_API_KEY` (then the file `vastai set api-key` writes). Offers are
    filtered by the spec (accelerator, vCPUs, memory, `max_hourly_cost`, `region` as a country
    code) and by `min_reliability`, `verified` and `geolocation` here; `Spec.allocation` picks
    on-demand or interruptible (bid) rentals. `docker_image` is the container every node runs,
    `disk_gb` its disk; `python` an interpreter already in the image to build the venv from
    (default: the bootstrap installs one with uv). `host_key_grace` is how long a new machine may
    answer with a host key other than the pool's before it is handed over (and refused): Vast
    starts the container's sshd itself, and the onstart script swaps in our key moments later.
    """

    api_key: str | None = attrs.field(default=None, repr=False, validator=_check_secret)
    docker_image: str = attrs.field(default=DEFAULT_IMAGE, converter=_docker_image)
    disk_gb: int = attrs.field(default=32, validator=_check_positive)
    min_reliability: float = attrs.field(default=0.95, validator=_check_reliability)
    verified: bool = True
    geolocation: tuple[str, ...] = attrs.field(default=None, converter=_geolocation)
    ssh_user: str = "root"
    python: str | None = None
    server_url: str | None = None
    host_key_grace: float = attrs.field(default=120.0, validator=_check_positive)

    def __attrs_post_init__(self) -> None:
        if self.api_key:
            register_secret(self.api_key)

    @property
    def name(self) -> str:
        return "vastai"

    @property
    def api_url(self) -> str:
        return (self.server_url or DEFAULT_SERVER_URL).rstrip("/")

    def create(self, options: Options | None = None) -> VastAIProvider:
        """The provider for one pool; resolves the API key now, so a missing one fails first.

        Imported here, when a pool starts, not with the config: it loads asyncssh and the Vast SDK,
        which resolving `sky.VastAI` does not need (speed, not a cycle)."""
        from skyward_vastai.provider import VastAIProvider

        return VastAIProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The cheapest matching offer's $/hour per node, for `Options(selection="cheapest")`.

        It asks the marketplace (prices move by the minute); None (sorted last) when it cannot,
        e.g. without a key or with no matching offer, so a price lookup never stops a pool.
        (Imported here for the same reason as `create`'s.)
        """
        from skyward_vastai.market import cheapest_price

        return cheapest_price(self, spec)

    def offer_source(self) -> VastOffers:
        """The marketplace's offers under this config's filters in Skyward's catalog (`sky offers`),
        which a pool with several specs and `selection="cheapest"` prices its specs from."""
        from skyward_vastai.offers import VastOffers

        return VastOffers(
            api_key=self.api_key, server_url=self.api_url, min_reliability=self.min_reliability,
            verified=self.verified, geolocation=self.geolocation, disk_gb=self.disk_gb,
        )

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start, for a pool with several specs to skip it: None with
        `api_key=` given or a key where `credentials()` looks (`$VAST_API_KEY`, the files of
        `vastai set api-key`), else which variable to set. Reads those only; calls nothing."""
        from skyward.providers.credentials import lacking
        from skyward_vastai.account import API_KEY_VARIABLE

        if self.api_key:
            return None
        return lacking(
            type(self).credentials(), provider="VastAI", credential=API_KEY_VARIABLE,
            fix="set it, run `vastai set api-key ...`, or pass VastAI(api_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$VAST_API_KEY` or the files `vastai set api-key` writes
        hold a key, in `resolve_api_key`'s order; `check` also lists the account's instances
        with it (`verify`)."""
        from skyward.providers.credentials import locate_secret
        from skyward_vastai.account import API_KEY_VARIABLE, key_files

        status = locate_secret(API_KEY_VARIABLE, key_files())
        if not check:
            return status
        from skyward_vastai.verify import verify

        return verify(status)
