"""`RunPod.hourly_price(spec)`: what a node would cost, read from RunPod's GPU type listing.

The pool calls it synchronously while choosing between specs (`Options(selection="cheapest")`),
from inside its event loop, so the listing is fetched on a short-lived thread with a loop of its
own. It never raises: a price it cannot know is None, and the pool then tries this spec last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.market.rental import whole_gpus
from skyward.providers.calls import known_or_none
from skyward_runpod.account import resolve_api_key
from skyward_runpod.api import LOGGER, RunPodAPI
from skyward_runpod.gpus import GpuType, match_gpu_types, plan_offers

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_runpod.config import RunPod

#: How long choosing a spec may wait for RunPod's listing.
PRICE_TIMEOUT = 15.0


async def gpu_types(api: RunPodAPI) -> list[GpuType]:
    return [GpuType.from_api(raw) for raw in await api.gpu_types() if raw.get("id")]


def estimate_hourly_price(config: RunPod, spec: Spec) -> float | None:
    """Per node per hour for the first offer the pool would try; None for CPU pods or on any error
    (a missing API key among them: resolved here, not in the config)."""
    if spec.accelerator is None:
        return None

    async def first(api: RunPodAPI) -> float | None:
        count = whole_gpus(spec.accelerator.count, "RunPod")  # type: ignore[union-attr]
        types = match_gpu_types(spec.accelerator, await gpu_types(api), count)
        return plan_offers(types, count, config.clouds, spec.allocation, spec.max_hourly_cost)[0].price

    return known_or_none(
        lambda: RunPodAPI(resolve_api_key(config.api_key), config.rest_url, config.gql_url), first,
        timeout=PRICE_TIMEOUT, thread="runpod-price", logger=LOGGER, event="skyward.runpod_price_unknown",
    )
