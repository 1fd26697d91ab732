"""`sky.Verda(...)`: the frozen value a user writes to run a pool on Verda (formerly DataCrunch).

Everything is checked when the value is built, so a misspelt location fails on the line that
wrote it. The client credentials are resolved when a pool starts (`account`), never here: an
environment secret would otherwise travel inside every pickled spec; one given explicitly is
kept out of `repr` and registered for masking. The imports flow one way: account <- api/catalog/
machine <- provider <- config <- hooks (the config imports the provider only inside `create`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url
from skyward.secrets import register_secret
from skyward.providers.base import ProviderConfig

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec
    from skyward_verda.offers import VerdaOffers
    from skyward_verda.provider import VerdaProvider

#: A Verda OS image with the NVIDIA driver, CUDA and Docker (Verda's `GET /images` lists others).
DEFAULT_IMAGE = "ubuntu-24.04-cuda-12.8-open-docker"


def _locations(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    codes = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if not codes or not all(isinstance(c, str) and c.strip() for c in codes):
        raise ConfigurationError(
            f'Verda(locations={value!r}): expected location codes such as "FIN-01"'
        )
    return tuple(c.strip().upper() for c in codes)


def _secret(instance: Verda, attribute: attrs.Attribute[str | None], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"Verda({attribute.name}=...): expected a non-empty string, or None")
    if attribute.name == "client_secret":
        register_secret(value)


def _image(instance: Verda, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(
            f"Verda(image={value!r}): expected an OS image type such as {DEFAULT_IMAGE!r}"
        )


@attrs.frozen(kw_only=True)
class Verda(ProviderConfig):
    """Run a pool on Verda GPU VMs, one VM per node, reached over SSH as root.

    `client_id` / `client_secret` default to `VERDA_CLIENT_ID` / `VERDA_CLIENT_SECRET`.
    `image` is the OS image every VM boots (Verda runs VMs, not containers); `locations` limits
    where VMs may be deployed (else `Spec.region`, else anywhere with capacity); `Spec.allocation`
    picks spot or on-demand; `disk_gb` sizes the OS volume when `Spec.disk_gb` is unset.
    `ssh_port` is where the VMs' sshd listens (22 on Verda's images). `python` names an
    interpreter already on the image instead of installing one; `api_url` points at another
    endpoint (tests, proxies).
    """

    client_id: str | None = attrs.field(default=None, validator=_secret)
    client_secret: str | None = attrs.field(default=None, repr=False, validator=_secret)
    image: str = attrs.field(default=DEFAULT_IMAGE, validator=_image)
    locations: tuple[str, ...] = attrs.field(default=None, converter=_locations)
    disk_gb: int = 100
    ssh_user: str = "root"
    ssh_port: int = 22
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("Verda"))

    @property
    def name(self) -> str:
        return "verda"

    @property
    def url(self) -> str:
        from skyward_verda.account import API_URL

        return self.api_url or API_URL

    def create(self, options: Options | None = None) -> VerdaProvider:
        """The provider for one pool; resolves the credentials now, so missing ones fail first.
        Imported here, when a pool starts: it loads aiohttp and asyncssh."""
        from skyward_verda.provider import VerdaProvider

        return VerdaProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The first offer's price per node per hour, for `Options(selection="cheapest")`; None
        when it cannot be told (no credentials, no matching type, the API down)."""
        from skyward_verda.pricing import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> VerdaOffers:
        """This account's instance types and prices in Skyward's catalog (`sky offers`), which a
        pool with several specs and `selection="cheapest"` prices its specs from."""
        from skyward_verda.offers import VerdaOffers

        return VerdaOffers(client_id=self.client_id, client_secret=self.client_secret, api_url=self.api_url)

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start, for a pool with several specs to skip it: None when
        each of the client id and secret is given here or set in its variable (as the provider
        resolves them, one by one), else the variables still to set. Reads the environment only."""
        from skyward.providers.credentials import MissingCredential, locate_secret
        from skyward_verda.account import ID_VARIABLE, SECRET_VARIABLE

        pairs = ((self.client_id, ID_VARIABLE), (self.client_secret, SECRET_VARIABLE))
        missing = [name for given, name in pairs if not given and not locate_secret(name).found]
        if not missing:
            return None
        return MissingCredential(
            provider="Verda", credential=" and ".join(missing),
            fix="set them or pass Verda(client_id=..., client_secret=...)",
            looked=", ".join(f"${name}" for name in missing),
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$VERDA_CLIENT_ID` and `$VERDA_CLIENT_SECRET` are set; with
        `check`, whether Verda accepts them (one login and listing, `sweep.verify`)."""
        from skyward_verda.account import locate_credentials

        status = locate_credentials()
        if not check:
            return status
        from skyward_verda.sweep import verify

        return verify(status)
