"""From a spec to the TensorDock hostnodes a node may be deployed on, and their prices.

TensorDock is a marketplace: each hostnode (one host's server) lists what it has free now (GPUs
by model, vCPUs, RAM, storage, and the external ports it can forward) and its host's price per
unit per hour (`GET /client/deploy/hostnodes`, read again at each launch: stock moves). A VM is
sized by the deploy itself, so an offer here is a shape chosen for the spec on one hostnode: the
spec's GPUs of one model, its vCPUs and memory (else `VCPUS_PER_GPU` and `RAM_PER_GPU` for each
GPU) and the config's storage, priced as the host prices each unit.

Models are spelled "geforcertx4090-pcie-24gb" and "rtxa6000-pcie-48gb"; `card_text` reads them as
words ("geforce rtx 4090 pcie 24gb") for `skyward.market.rental.names_card`, and the memory from
the last part. `plan` lists the `Rental`s a launch tries in turn, cheapest first. There is no spot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from skyward.market.offer import Offer, canonical_accelerator
from skyward.market.rental import Rental, fits, in_order, no_fit, number, on_demand_only, whole_gpus

if TYPE_CHECKING:
    from skyward.errors import NoOffersError
    from skyward.spec import Spec

PROVIDER = "tensordock"
CLOUD = "TensorDock"
#: A VM's size where the spec gives none: per GPU rented.
VCPUS_PER_GPU = 4
RAM_PER_GPU = 16
#: The smallest disk TensorDock deploys.
MIN_STORAGE_GB = 100
#: Brand words a model name runs together with the card's ("geforcertx4090").
_BRANDS = ("geforce", "quadro", "tesla", "rtx")
_MEMORY = re.compile(r"(\d+)gb$")
#: Words of a model's name that are not the card's: brands and form factors.
_NOT_CARD = frozenset({"geforce", "quadro", "tesla", "pcie", "sxm", "sxm4", "sxm5", "nvlink"})


def card_text(model: str) -> str:
    """A model's name as words: brands split off its first part ("geforcertx4090" -> geforce rtx 4090)."""
    first, *rest = model.lower().split("-")
    words = []
    while True:
        brand = next((b for b in _BRANDS if first.startswith(b) and len(first) > len(b)), None)
        if brand is None:
            break
        words.append(brand)
        first = first[len(brand) :]
    return " ".join([*words, first, *rest])


def card_name(model: str) -> str | None:
    """The catalog's name of a model's card ("geforcertx4090-pcie-24gb" -> "RTX_4090")."""
    words = [w for w in card_text(model).split() if w not in _NOT_CARD and not _MEMORY.fullmatch(w)]
    return canonical_accelerator(" ".join(words).upper())


def gpu_memory(model: str) -> float | None:
    found = _MEMORY.search(model.lower())
    return float(found.group(1)) if found else None


@attrs.frozen
class Hostnode:
    """One row of the hostnode listing: what is free and its unit prices (USD per hour)."""

    id: str
    location: str
    places: frozenset[str]
    ports: tuple[int, ...]
    gpus: Mapping[str, tuple[int, float]]
    vcpus: int
    vcpu_price: float
    ram_gb: int
    ram_price: float
    storage_gb: int
    storage_price: float
    online: bool

    @classmethod
    def from_api(cls, uuid: str, row: Mapping[str, Any]) -> Hostnode:
        where = row.get("location") if isinstance(row.get("location"), dict) else {}
        specs = row.get("specs") if isinstance(row.get("specs"), dict) else {}
        status = row.get("status") if isinstance(row.get("status"), dict) else {}
        net = row.get("networking") if isinstance(row.get("networking"), dict) else {}

        def unit(name: str) -> tuple[int, float]:
            part = specs.get(name) if isinstance(specs.get(name), dict) else {}
            return int(number(part.get("amount"))), number(part.get("price"))

        gpus = specs.get("gpu") if isinstance(specs.get("gpu"), dict) else {}
        names = [str(where.get(k) or "") for k in ("city", "region", "country")]
        city, country = names[0], names[2]
        return cls(
            id=str(uuid),
            location=", ".join(n for n in (city, country) if n),
            places=frozenset(n.lower() for n in [*names, f"{city}, {country}"] if n.strip(", ")),
            ports=tuple(int(p) for p in net.get("ports") or () if str(p).isdigit()),
            gpus={
                str(m): (int(number(g.get("amount"))), number(g.get("price")))
                for m, g in gpus.items()
                if isinstance(g, dict)
            },
            vcpus=unit("cpu")[0],
            vcpu_price=unit("cpu")[1],
            ram_gb=unit("ram")[0],
            ram_price=unit("ram")[1],
            storage_gb=unit("storage")[0],
            storage_price=unit("storage")[1],
            online=bool(status.get("online", True)) and bool(status.get("listed", True)),
        )

    def in_any(self, regions: Iterable[str]) -> bool:
        return any(r.lower() in self.places for r in regions)


@attrs.frozen
class Shape:
    """A VM to deploy on one hostnode: the handle a launch deploys (`Rental.ref`)."""

    hostnode: Hostnode
    model: str
    gpus: int
    vcpus: int
    ram_gb: int
    storage_gb: int

    @property
    def price(self) -> float:
        h = self.hostnode
        gpu_price = h.gpus.get(self.model, (0, 0.0))[1]
        return (
            self.gpus * gpu_price
            + self.vcpus * h.vcpu_price
            + self.ram_gb * h.ram_price
            + self.storage_gb * h.storage_price
        )

    def fits_hostnode(self) -> bool:
        h = self.hostnode
        return (
            h.online
            and bool(h.ports)
            and h.gpus.get(self.model, (0, 0.0))[0] >= self.gpus
            and h.vcpus >= self.vcpus
            and h.ram_gb >= self.ram_gb
            and h.storage_gb >= self.storage_gb
        )


def offer_of(shape: Shape) -> Offer:
    """The market's record of a shape on its hostnode."""
    return Offer(
        provider=PROVIDER,
        instance_type=shape.model,
        accelerator=card_name(shape.model),
        accelerator_count=shape.gpus,
        accelerator_memory_gb=gpu_memory(shape.model),
        vcpus=shape.vcpus,
        memory_gb=shape.ram_gb,
        region=shape.hostnode.location,
        on_demand_price=round(shape.price, 4) or None,
    )


def shapes(spec: Spec, hostnodes: Iterable[Hostnode], storage_gb: int) -> list[Shape]:
    """Every hostnode model that carries the spec's card, sized for the spec (stock not checked)."""
    on_demand_only(spec.allocation, CLOUD)
    acc = spec.accelerator
    listed = list(hostnodes)
    if acc is None:
        raise no_fit(spec, _cards(listed), cloud=CLOUD, kind="hostnode (TensorDock rents GPU VMs)")
    count = whole_gpus(acc.count, CLOUD)
    vcpus = int(spec.vcpus or VCPUS_PER_GPU * count)
    ram = int(spec.memory_gb or RAM_PER_GPU * count)
    return [
        Shape(h, model, count, vcpus, ram, storage_gb)
        for h in listed
        for model in h.gpus
        if fits(
            spec,
            cloud=CLOUD,
            card=card_text(model),
            gpus=count,
            gpu_memory_gb=gpu_memory(model),
            vcpus=vcpus,
            memory_gb=ram,
        )
    ]


def matching_models(spec: Spec, hostnodes: Iterable[Hostnode], storage_gb: int) -> tuple[str, ...]:
    """The GPU models that fit the spec, or the error naming the close ones when none does."""
    listed = list(hostnodes)
    found = sorted({s.model for s in shapes(spec, listed, storage_gb)})
    if not found:
        raise _none(spec, listed)
    return tuple(found)


def _cards(hostnodes: list[Hostnode]) -> list[str]:
    return [card_name(m) or m for h in hostnodes for m in h.gpus]


def _none(spec: Spec, hostnodes: list[Hostnode]) -> NoOffersError:
    return no_fit(spec, _cards(hostnodes), cloud=CLOUD, kind="hostnode")


def plan(
    spec: Spec,
    hostnodes: Iterable[Hostnode],
    *,
    models: Iterable[str],
    storage_gb: int,
    regions: tuple[str, ...] = (),
) -> list[Rental]:
    """The shapes the spec allows on hostnodes with the stock for them now, cheapest first."""
    wanted = set(models)
    offers = []
    for shape in shapes(spec, hostnodes, storage_gb):
        if shape.model not in wanted or not shape.fits_hostnode():
            continue
        if regions and not shape.hostnode.in_any(regions):
            continue
        if spec.max_hourly_cost is not None and shape.price > spec.max_hourly_cost:
            continue
        offers.append(Rental(offer=offer_of(shape), spot=False, ref=shape))
    return in_order(offers, "on-demand", spot=lambda o: o.spot, price=lambda o: o.price)
