"""`sky.RunPod(...)`: the frozen value a user writes to run a pool on RunPod pods.

Everything here is checked when the value is built, so a missing API key or a misspelt cloud type
fails on the line that wrote it, before anything is rented. The API key is a credential: it is
kept out of `repr` (and so out of events and tracebacks that print the config) and registered for
masking in Skyward's logs the moment it is read (`account.resolve_api_key`).

The config is the package's front: the pool turns it into a provider with `create()` and asks it
`hourly_price()`; both hand over to `provider` and `pricing`, which never import this module at
run time (only for annotations), so the imports flow one way: account <- api/gpus <- pods/pricing
<- provider <- config <- hooks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from skyward.errors import ConfigurationError
from skyward_runpod.account import GRAPHQL_URL, REST_URL, resolve_api_key

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus
    from skyward.spec import Spec
    from skyward_runpod.offers import RunPodOffers
    from skyward_runpod.provider import RunPodProvider

#: An official RunPod image with CUDA, PyTorch, Python and sshd: `python=` can reuse its torch.
DEFAULT_IMAGE = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
#: RunPod's two clouds, and "ALL" for either (REST v1 takes one per pod, so "ALL" tries both).
CLOUD_TYPES = ("SECURE", "COMMUNITY", "ALL")


def _image(value: object) -> str:
    """A tag (`"runpod/pytorch:..."`), a `sky.DockerImage` (`sky.containers.runpod_pytorch("2.8")`),
    or any object that carries one (`image_name`, `image`, `name`)."""
    from skyward.containers import DockerImage, image_ref

    if isinstance(value, DockerImage):
        return image_ref(value, provider="RunPod", argument="container_image")  # keeps what it knows of CUDA
    if isinstance(value, str):
        name = value
    else:
        name = next(
            (
                getattr(value, attr)
                for attr in ("image_name", "image", "name")
                if isinstance(getattr(value, attr, None), str)
            ),
            "",
        )
    if not name.strip():
        raise ConfigurationError(
            f"RunPod(container_image={value!r}): expected an image name such as {DEFAULT_IMAGE!r}"
        )
    return name.strip()


def _cloud_type(value: object) -> str:
    text = str(value).upper() if isinstance(value, str) else value
    if text not in CLOUD_TYPES:
        raise ConfigurationError(
            f"RunPod(cloud_type={value!r}): expected one of {', '.join(repr(c) for c in CLOUD_TYPES)}"
        )
    return text  # type: ignore[return-value]


def _data_centers(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    ids = (value,) if isinstance(value, str) else tuple(value)
    if not ids or not all(isinstance(i, str) and i for i in ids):
        raise ConfigurationError(
            f'RunPod(data_center_ids={value!r}): expected data center ids such as ["EU-RO-1", "US-TX-3"]'
        )
    return ids


def _positive_int(instance: RunPod, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            f"RunPod({attribute.name}={value!r}): expected a whole number of GB, 1 or more"
        )


def _optional_url(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigurationError(f"RunPod URL {value!r}: expected an http(s) URL")
    return value.rstrip("/")


@attrs.frozen(kw_only=True)
class RunPod:
    """Run a pool on RunPod: one pod per node, reached over SSH with keys made for the pool.

    `cloud_type` picks Secure Cloud, Community Cloud or either ("ALL"); `data_center_ids` pins
    the pods to data centers (else `Spec.region`, else anywhere); `python` names an interpreter
    already in the image (the pytorch images' own, so its CUDA torch is reused) instead of
    installing one. `api_url` / `graphql_url` point at another endpoint (tests, proxies).
    """

    api_key: str = attrs.field(default=None, converter=resolve_api_key, repr=False)
    container_image: str = attrs.field(default=DEFAULT_IMAGE, converter=_image)
    cloud_type: str = attrs.field(default="SECURE", converter=_cloud_type)
    data_center_ids: tuple[str, ...] | None = attrs.field(default=None, converter=_data_centers)
    container_disk_gb: int = attrs.field(default=50, validator=_positive_int)
    ssh_user: str = "root"
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=_optional_url)
    graphql_url: str | None = attrs.field(default=None, converter=_optional_url)

    @property
    def name(self) -> str:
        return "runpod"

    @property
    def rest_url(self) -> str:
        return self.api_url or REST_URL

    @property
    def gql_url(self) -> str:
        return self.graphql_url or GRAPHQL_URL

    @property
    def clouds(self) -> tuple[str, ...]:
        """The clouds pods may be created in, in the order they are tried."""
        return ("SECURE", "COMMUNITY") if self.cloud_type == "ALL" else (self.cloud_type,)

    def create(self, options: Options | None = None) -> RunPodProvider:
        """The provider for one pool. Imported here, when a pool starts, not with the config: it
        loads aiohttp and asyncssh, which resolving `sky.RunPod` does not need (speed, not a cycle)."""
        from skyward_runpod.provider import RunPodProvider

        return RunPodProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """What one node would cost per hour, for `Options(selection="cheapest")`; None if unknown
        (see `pricing.estimate_hourly_price`; imported here for the same reason as `create`'s)."""
        from skyward_runpod.pricing import estimate_hourly_price

        return estimate_hourly_price(self, spec)

    def offer_source(self) -> RunPodOffers:
        """This account's GPU pods and prices in Skyward's catalog (`sky offers`), which a pool
        with several specs and `selection="cheapest"` prices its specs from (`skyward.market`)."""
        from skyward_runpod.offers import RunPodOffers

        return RunPodOffers(api_key=self.api_key, graphql_url=self.gql_url, clouds=self.clouds)

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$RUNPOD_API_KEY` holds a key (the argument aside), read
        from the environment; `check` also lists the account's pods with it (`verify`)."""
        from skyward.providers.credentials import locate_secret
        from skyward_runpod.account import API_KEY_VARIABLE

        status = locate_secret(API_KEY_VARIABLE)
        if not check:
            return status
        from skyward_runpod.verify import verify

        return verify(status)
