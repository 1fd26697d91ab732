"""From a spec to the JarvisLabs GPU types and regions a node may be created on, and their prices.

JarvisLabs rents a GPU type by the GPU ("A100", "H100", "RTX6000Ada"), 1 to 8 to an instance, each
region with its free GPUs and prices per GPU per hour, on demand and (for containers) spot
(`GET /misc/server_meta`, read again at each launch: it moves). `GpuType.from_api` reads one row;
its card is the type's name matched as words (`skyward.market.rental`), its memory the row's
`vram` ("48GB"), its vCPUs and memory per GPU. An instance of n GPUs costs n times the price.
`plan` lists the `Rental`s a launch tries in turn for the spec's allocation: where enough GPUs are
free, in the regions allowed, cheapest first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from skyward.market.offer import Offer
from skyward.market.rental import Rental, fits, in_order, no_fit

if TYPE_CHECKING:
    from skyward.spec import Spec

PROVIDER = "jarvislabs"
#: GPU counts JarvisLabs builds an instance of (`sky offers` lists each).
COUNTS = (1, 2, 4, 8)
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")


def _number(value: Any) -> float:
    found = _NUMBER.search(str(value or ""))
    return float(found.group(1)) if found else 0.0


@attrs.frozen
class GpuType:
    """One row of `GET /misc/server_meta`: a GPU type in a region (prices per GPU per hour)."""

    name: str
    region: str
    free: int
    spot_free: int
    price: float
    spot_price: float | None
    vram_gb: float | None
    cpus_per_gpu: int
    ram_per_gpu: float
    workload: str

    @classmethod
    def from_api(cls, row: Mapping[str, Any]) -> GpuType:
        free = row.get("effective_num_free_devices")
        free = row.get("num_free_devices") if free is None else free
        spot_free = row.get("spot_num_free_devices")
        spot = row.get("spot_price")
        return cls(
            name=str(row.get("gpu_type") or ""),
            region=str(row.get("region") or ""),
            free=int(_number(free)),
            spot_free=int(_number(free if spot_free is None else spot_free)),
            price=_number(row.get("price_per_hour")),
            spot_price=_number(spot) if spot is not None else None,
            vram_gb=_number(row.get("vram")) or None,
            cpus_per_gpu=int(_number(row.get("cpus_per_gpu"))),
            ram_per_gpu=_number(row.get("ram_per_gpu")),
            workload=str(row.get("workload_type") or ""),
        )

    def serves(self, template: str) -> bool:
        """Whether the row is for this kind of instance (a VM template, or a container's)."""
        wanted = "vm" if template == "vm" else "container"
        return self.workload in ("", wanted)


def offer_of(gpu: GpuType, count: int, region: str = "") -> Offer:
    """The market's record of `count` GPUs of a type (in `region`, where one is known)."""
    return Offer(
        provider=PROVIDER,
        instance_type=f"{count}x {gpu.name}",
        accelerator=gpu.name,
        accelerator_count=count,
        accelerator_memory_gb=gpu.vram_gb,
        vcpus=gpu.cpus_per_gpu * count or None,
        memory_gb=gpu.ram_per_gpu * count or None,
        region=region,
        on_demand_price=gpu.price * count or None,
        spot_price=gpu.spot_price * count if gpu.spot_price else None,
    )


def count_of(spec: Spec) -> int:
    return int(spec.accelerator.count) if spec.accelerator is not None else 0


def matching(spec: Spec, gpus: Iterable[GpuType], template: str) -> list[GpuType]:
    """The rows of the spec's card (its memory) that serve `template`, with its vCPUs and memory."""
    listed = [g for g in gpus if g.serves(template)]
    n = count_of(spec)
    found = [
        g
        for g in listed
        if n
        and fits(
            spec,
            cloud="JarvisLabs",
            card=g.name,
            gpus=n,
            gpu_memory_gb=g.vram_gb,
            vcpus=g.cpus_per_gpu * n,
            memory_gb=g.ram_per_gpu * n,
        )
    ]
    if not found:
        raise no_fit(spec, [g.name for g in listed], cloud="JarvisLabs", kind="GPU type")
    return found


def plan(
    spec: Spec, gpus: Iterable[GpuType], *, template: str, regions: tuple[str, ...] = ()
) -> list[Rental]:
    """Every way to rent a node the spec allows with its GPUs free now, in the order to try them."""
    n = count_of(spec)
    offers = []
    for gpu in gpus:
        if regions and gpu.region not in regions:
            continue
        listed = offer_of(gpu, n, gpu.region)
        if gpu.price > 0 and gpu.free >= n:
            offers.append(Rental(offer=listed, spot=False, ref=gpu))
        if gpu.spot_price and gpu.spot_free >= n and template != "vm":
            offers.append(Rental(offer=listed, spot=True, ref=gpu))
    if spec.max_hourly_cost is not None:
        offers = [o for o in offers if o.price <= spec.max_hourly_cost]
    return in_order(offers, spec.allocation, spot=lambda o: o.spot, price=lambda o: o.price)
