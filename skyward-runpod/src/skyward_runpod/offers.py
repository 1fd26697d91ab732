"""RunPod's offers for `sky offers` and `sky.offers()`, read from the GPU type listing a pool
prices from (GraphQL `gpuTypes`, `pricing.gpu_types`).

A RunPod offer is a pod of `count` GPUs of one type (1 up to the type's `maxGpuCount`) in one of
its two clouds, SECURE or COMMUNITY, which stands in the offer's `region`: the listing prices by
cloud, not by data center. Prices are the listing's per-GPU prices times the count:
interruptible ones are the spot price. RunPod's prices move, so a snapshot is kept an hour.

The key is `$RUNPOD_API_KEY` (or `RunPod(api_key=...)` for a pool's own source);
`$RUNPOD_GRAPHQL_URL` points it at another endpoint, as the sweeper's `$RUNPOD_API_URL` does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs

from skyward.market.offer import Offer
from skyward.market.source import MARKETPLACE_TTL, default_fits
from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus, locate_secret
from skyward_runpod.account import API_KEY_VARIABLE, GRAPHQL_URL, REST_URL
from skyward_runpod.gpus import GpuType, card

if TYPE_CHECKING:
    from skyward.spec import Spec

GRAPHQL_URL_VARIABLE = "RUNPOD_GRAPHQL_URL"
CLOUDS = ("SECURE", "COMMUNITY")


def offers_of(gpu: GpuType, provider: str = "runpod") -> Iterator[Offer]:
    """Every pod of `gpu` RunPod rents: each count, in each cloud that lists a price for it."""
    name = card(gpu)
    for cloud in CLOUDS:
        spot, on_demand = gpu.price(cloud, True), gpu.price(cloud, False)
        if spot is None and on_demand is None:
            continue
        for count in range(1, max(gpu.max_count, 1) + 1):
            yield Offer(
                provider=provider, instance_type=f"{count}x {gpu.display_name}", accelerator=name,
                accelerator_count=count, accelerator_memory_gb=gpu.memory_gb or None, region=cloud,
                spot_price=spot * count if spot else None,
                on_demand_price=on_demand * count if on_demand else None,
            )


@attrs.frozen
class RunPodOffers:
    """RunPod's GPU pods and their prices. `clouds` are those a pool may use (`RunPod.clouds`):
    the snapshot always holds both, and `fits` keeps the pool's."""

    api_key: str | None = attrs.field(default=None, repr=False)
    graphql_url: str | None = None
    clouds: tuple[str, ...] = CLOUDS
    name: str = "runpod"
    ttl: float = MARKETPLACE_TTL

    @property
    def key(self) -> str:
        return self.graphql_url or os.environ.get(GRAPHQL_URL_VARIABLE) or GRAPHQL_URL

    def credentials(self) -> CredentialStatus:
        if self.api_key:
            return CredentialStatus(found=True, where="RunPod(api_key=...)")
        return locate_secret(API_KEY_VARIABLE)

    def fetch(self) -> list[Offer]:
        from skyward_runpod.api import RunPodAPI
        from skyward_runpod.pricing import gpu_types

        key = self.api_key or os.environ.get(API_KEY_VARIABLE, "").strip()
        if not key:
            raise RuntimeError(f"no RunPod API key: set {API_KEY_VARIABLE}")

        gpus = run_closing(lambda: RunPodAPI(key, REST_URL, self.key), gpu_types)
        return [offer for gpu in gpus for offer in offers_of(gpu, self.name)]

    def fits(self, offer: Offer, spec: Spec) -> bool:
        """The catalog's match, in the pool's clouds; `Spec.region` names a data center, which the
        listing does not price by, so it is not compared."""
        return offer.region in self.clouds and default_fits(attrs.evolve(offer, region=""), spec)
