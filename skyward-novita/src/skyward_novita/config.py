"""`sky.Novita(...)`: the frozen value a user writes to run a pool on Novita AI GPU instances.

Checked when built, so a bad image reference fails on the line that wrote it. The API key is
resolved when a pool starts (`account`), never here, so an environment key never travels in a
pickled spec; one given explicitly is kept out of `repr` and registered for masking. The imports
flow one way: account <- api/catalog/machine <- provider <- config <- hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from skyward.containers import image_ref
from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.providers.base import ProviderConfig

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec
    from skyward_novita.offers import NovitaOffers
    from skyward_novita.provider import NovitaProvider

#: NVIDIA's CUDA 12.8 toolkit image (`sky.containers.cuda("12.8")`): the start script adds sshd,
#: curl and python3; the bootstrap installs the workers' Python with uv.
DEFAULT_IMAGE = "nvidia/cuda:12.8.1-devel-ubuntu24.04"


def _docker_image(value: object) -> str:
    return image_ref(value, provider="Novita", argument="docker_image")


def _positive(instance: Novita, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 10:
        raise ConfigurationError(
            f"Novita({attribute.name}={value!r}): expected a whole number of GB, 10 or more"
        )


@attrs.frozen(kw_only=True)
class Novita(ProviderConfig):
    """Run a pool on Novita AI GPU instances: one container per node, reached over SSH as root.

    `api_key` defaults to `NOVITA_API_KEY`. `docker_image` is the container every node runs (a
    reference or a `sky.DockerImage`, e.g. `sky.containers.pytorch("2.8")`); `disk_gb` its root
    filesystem when `Spec.disk_gb` is unset; `cluster_id` pins the instances to one Novita cluster
    (else any). `Spec.allocation` picks spot or on-demand billing. `python` names an interpreter
    already in the image; `api_url` points at another endpoint (tests, proxies).
    """

    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("Novita"))
    docker_image: str = attrs.field(default=DEFAULT_IMAGE, converter=_docker_image)
    disk_gb: int = attrs.field(default=60, validator=_positive)
    cluster_id: str | None = None
    ssh_user: str = "root"
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("Novita"))

    @property
    def name(self) -> str:
        return "novita"

    @property
    def url(self) -> str:
        from skyward_novita.account import API_URL

        return self.api_url or API_URL

    def create(self, options: Options | None = None) -> NovitaProvider:
        """The provider for one pool; resolves the key now, so a missing one fails first."""
        from skyward_novita.provider import NovitaProvider

        return NovitaProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The first offer's price per node per hour; None when it cannot be told."""
        from skyward_novita.pricing import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> NovitaOffers:
        """This account's GPU products and prices in Skyward's catalog (`sky offers`), which a
        pool with several specs and `selection="cheapest"` prices its specs from."""
        from skyward_novita.offers import NovitaOffers

        return NovitaOffers(api_key=self.api_key, api_url=self.api_url)

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start, for a pool with several specs to skip it: None with
        `api_key=` given or `$NOVITA_API_KEY` set (what `credentials()` finds), else which
        variable to set. Reads the environment only; calls nothing."""
        from skyward.providers.credentials import lacking
        from skyward_novita.account import API_KEY_VARIABLE

        if self.api_key:
            return None
        return lacking(
            type(self).credentials(), provider="Novita", credential=API_KEY_VARIABLE,
            fix="set it or pass Novita(api_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$NOVITA_API_KEY` holds a key; with `check`, whether Novita
        accepts it (one listing, `sweep.verify`)."""
        from skyward_novita.account import locate_api_key

        status = locate_api_key()
        if not check:
            return status
        from skyward_novita.sweep import verify

        return verify(status)
