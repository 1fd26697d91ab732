"""`sky.Novita(...)`: the frozen value a user writes to run a pool on Novita AI GPU instances.

Checked when built, so a bad image reference fails on the line that wrote it. The API key is
resolved when a pool starts (`account`), never here, so an environment key never travels in a
pickled spec; one given explicitly is kept out of `repr` and registered for masking. What every
one-key cloud's config answers is the kit's `KeyedConfig`, from the pieces named here. The imports
flow one way: account <- api/catalog/machine <- provider/offers/sweep <- config <- hooks.
"""

from __future__ import annotations

import attrs

from skyward.containers import image_ref
from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.providers.keyed_config import KeyedConfig
from skyward_novita.account import ACCOUNT

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
class Novita(KeyedConfig):
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

    account = ACCOUNT
    provider_name = "novita"
    provider_class = "skyward_novita.provider:NovitaProvider"
    price_estimate = "skyward_novita.pricing:estimate_hourly_price"
    offers_class = "skyward_novita.offers:NovitaOffers"
    key_check = "skyward_novita.sweep:verify"
