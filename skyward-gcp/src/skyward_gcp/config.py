"""`sky.GCP(...)`: the frozen value a user writes to run a pool on Google Compute Engine.

Everything is checked when the value is built, so a misspelt zone fails on the line that wrote
it; nothing is read or called here. The credentials are Application Default Credentials,
resolved when a pool starts (`account`). The imports flow one way: account <- api/catalog/machine
<- planning/preemption <- provider <- config <- hooks (the config imports the provider only
inside `create`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs

from skyward.errors import ConfigurationError
from skyward.providers.address import IP_LOOKUP_URL
from skyward.providers.base import ProviderConfig

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec
    from skyward_gcp.offers import GCPOffers
    from skyward_gcp.provider import GCPProvider

#: A Deep Learning VM image (Ubuntu, CUDA, python3): it installs the NVIDIA driver at first
#: boot when the VM's metadata asks (`install-nvidia-driver`, which Skyward sets on GPU VMs).
DEFAULT_IMAGE = "projects/deeplearning-platform-release/global/images/family/common-cu124-ubuntu-2204-py310"
API_ROOT = "https://compute.googleapis.com"
_ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")


def _where(instance: GCP, attribute: attrs.Attribute[str | None], value: object) -> None:
    pattern, example = (_ZONE, "us-central1-a") if attribute.name == "zone" else (_REGION, "us-central1")
    if value is not None and (not isinstance(value, str) or not pattern.match(value)):
        raise ConfigurationError(
            f"GCP({attribute.name}={value!r}): expected a {attribute.name} such as {example!r}"
        )


def _one_place(instance: GCP) -> None:
    if instance.zone is not None and instance.region is not None:
        raise ConfigurationError(
            'GCP takes zone= ("us-central1-a") or region= ("us-central1": each zone tried), not both'
        )


def _text(instance: GCP, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"GCP({attribute.name}={value!r}): expected a non-empty string")


def _url(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigurationError(f"GCP(api_endpoint={value!r}): expected an http(s) URL")
    return value.rstrip("/")


@attrs.frozen(kw_only=True)
class GCP(ProviderConfig):
    """Run a pool on Compute Engine VMs, one VM per node, reached over SSH as root.

    `project` defaults to the credentials' project, else `$GOOGLE_CLOUD_PROJECT`. `zone` places
    every VM there; `region` (else `Spec.region`) tries each zone of the region (a zone without
    room falls over to the next). `Spec.allocation` picks spot VMs (deleted when preempted) or on-demand; the
    accelerator picks the machine family (A3 H100, A2 A100, G2 L4, N1 with T4 or V100 attached).
    `image` is the boot image, `disk_gb` the boot disk when `Spec.disk_gb` is unset, `network`
    the VPC. `service_account` is the VMs' account, whose token lets a VM delete itself when its
    client is gone. SSH is opened to `ssh_cidr`, else to this client's address as
    `ip_lookup_url` sees it. `python` names an interpreter already on the image; `api_endpoint`
    points at another Compute Engine endpoint (tests, private endpoints).
    """

    project: str | None = attrs.field(default=None)
    zone: str | None = attrs.field(default=None, validator=_where)
    region: str | None = attrs.field(default=None, validator=_where)
    image: str = attrs.field(default=DEFAULT_IMAGE, validator=_text)
    disk_gb: int = 100
    network: str = attrs.field(default="global/networks/default", validator=_text)
    service_account: str = attrs.field(default="default", validator=_text)
    ssh_cidr: str | None = None
    ip_lookup_url: str = IP_LOOKUP_URL
    ssh_user: str = "root"
    ssh_port: int = 22
    python: str | None = None
    api_endpoint: str | None = attrs.field(default=None, converter=_url)

    def __attrs_post_init__(self) -> None:
        _one_place(self)

    @property
    def name(self) -> str:
        return "gcp"

    @property
    def api_root(self) -> str:
        """Where the Compute Engine API is (its paths start with /compute/v1)."""
        return self.api_endpoint or API_ROOT

    def create(self, options: Options | None = None) -> GCPProvider:
        """The provider for one pool: none of the places credentials come from has any fails
        here, naming them; they are read when it prepares."""
        from skyward_gcp.provider import GCPProvider

        return GCPProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """The cheapest fitting machine's price per node per hour from the package's table
        (`catalog`, us-central1 list prices), for `Options(selection="cheapest")`; no call made."""
        from skyward.errors import NoOffersError
        from skyward_gcp.planning import matching

        try:
            shapes = matching(spec)
        except NoOffersError:
            return None
        spot = spec.allocation == "spot"
        prices = [p for s in shapes if (p := (s.spot if spot else s.on_demand)) is not None]
        if spec.allocation in ("spot-if-available", "cheapest"):
            prices += [s.spot for s in shapes if s.spot is not None]
        return min(prices) if prices else None

    def offer_source(self) -> GCPOffers:
        from skyward_gcp.offers import GCPOffers

        return GCPOffers()

    def missing_credentials(self) -> MissingCredential | None:
        """No ADC file found, off Google Cloud (a VM's own credentials are its metadata server's)."""
        from skyward.providers.credentials import lacking
        from skyward_gcp.account import (
            CREDENTIALS_VARIABLE,
            LOGIN_COMMAND,
            locate_credentials,
            on_google_cloud,
        )

        if on_google_cloud():
            return None
        return lacking(
            locate_credentials(),
            provider="GCP",
            credential="Application Default Credentials",
            fix=f"set {CREDENTIALS_VARIABLE} or run `{LOGIN_COMMAND}`",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: whether an ADC file is there; with `check`, whether Compute Engine
        accepts it (one listing of the project's VMs, `sweep.verify`)."""
        from skyward_gcp.account import locate_credentials

        status = locate_credentials()
        if not check:
            return status
        from skyward_gcp.sweep import verify

        return verify(status)
