"""`sky.RunPod(...)`: the frozen value a user writes to run a pool on RunPod pods.

The settings are checked when the value is built, so a misspelt cloud type fails on the line that
wrote it, before anything is rented. The API key is not looked for here: the config is a plain
value (pickled with the spec, compared, printed, built at import time in scripts), so building it
reads no variable and no file. The key is resolved when a pool starts (`create`, the provider, via
`account.resolve_api_key`: `api_key=`, else `$RUNPOD_API_KEY`, else a `ConfigurationError` naming
both), and a pool with several specs asks `missing_credentials()` first, to skip this one for the
next. One given explicitly is kept out of `repr` (and so out of events and tracebacks that print
the config) and registered for masking in Skyward's logs when the config is built.

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
from skyward.secrets import register_secret
from skyward.providers.base import ProviderConfig
from skyward_runpod.account import API_KEY_VARIABLE, GRAPHQL_URL, REST_URL

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
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


def _api_key(instance: RunPod, attribute: attrs.Attribute[str | None], value: object) -> None:
    """A key given here is a non-empty string, masked in logs from now on; None looks for one at
    pool start (`$RUNPOD_API_KEY`)."""
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(
            f"RunPod(api_key=...): expected the key as a non-empty string, or None to read "
            f"{API_KEY_VARIABLE} when the pool starts"
        )
    register_secret(value.strip())


def _optional_url(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigurationError(f"RunPod URL {value!r}: expected an http(s) URL")
    return value.rstrip("/")


@attrs.frozen(kw_only=True)
class RunPod(ProviderConfig):
    """Run a pool on RunPod: one pod per node, reached over SSH with keys made for the pool.

    `cloud_type` picks Secure Cloud, Community Cloud or either ("ALL"); `data_center_ids` pins
    the pods to data centers (else `Spec.region`, else anywhere); `python` names an interpreter
    already in the image (the pytorch images' own, so its CUDA torch is reused) instead of
    installing one. `api_url` / `graphql_url` point at another endpoint (tests, proxies).
    `api_key=None` (the default) reads `RUNPOD_API_KEY` when a pool starts, not here.
    """

    api_key: str | None = attrs.field(default=None, repr=False, validator=_api_key)
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
        """The provider for one pool; it resolves the API key now, so a missing one fails first,
        naming `RUNPOD_API_KEY`. Imported here, when a pool starts, not with the config: it loads
        aiohttp and asyncssh, which resolving `sky.RunPod` does not need (speed, not a cycle)."""
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

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start, for a pool with several specs to skip it: None with
        `api_key=` given or `$RUNPOD_API_KEY` set (what `credentials()` finds), else which variable
        to set. Reads the environment only; calls nothing."""
        from skyward.providers.credentials import lacking

        if self.api_key:
            return None
        return lacking(
            type(self).credentials(), provider="RunPod", credential=API_KEY_VARIABLE,
            fix="set it or pass RunPod(api_key=...)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether `$RUNPOD_API_KEY` holds a key (the argument aside), read
        from the environment; `check` also lists the account's pods with it (`verify`)."""
        from skyward.providers.credentials import locate_secret

        status = locate_secret(API_KEY_VARIABLE)
        if not check:
            return status
        from skyward_runpod.verify import verify

        return verify(status)
