"""The GPU (and CPU) machines Skyward rents on Compute Engine, with their prices.

Compute Engine sells GPUs two ways, both covered here:

- accelerator-optimized machine types with their GPUs built in: A3 High (`a3-highgpu-Ng`, H100
  80 GB), A2 Standard (`a2-highgpu-Ng`, A100 40 GB), A2 Ultra (`a2-ultragpu-Ng`, A100 80 GB) and
  G2 (`g2-standard-N`, L4 24 GB);
- N1 general-purpose machine types with GPUs attached (`guestAccelerators`): T4 and V100.

Compute Engine's API lists machine types and accelerator types per zone (what can be asked for
where) but no prices: Google publishes those on its pricing pages and in the Cloud Billing
Catalog API, which needs a key of its own. The prices below are therefore a table kept in the
package: USD per hour per machine (GPUs included), us-central1 list prices as read from Google's
"VM instance pricing", "GPU pricing" and "Spot VMs pricing" pages, rounded to the cent. They are
approximate (spot prices move up to once a day; other regions cost up to ~40% more): good to
order offers and to show in `sky offers`, never a bill. `None`: not sold that way (A3 High's
1, 2 and 4 GPU types are spot or flex-start only).
"""

from __future__ import annotations

import attrs

from skyward.market.offer import Offer

#: The region the table's prices are for.
PRICED_REGION = "us-central1"


@attrs.frozen
class Shape:
    """One machine Skyward can ask for: a machine type, and for N1 the GPUs attached to it.

    `accelerator_type` is Compute Engine's name for the GPU (`nvidia-tesla-t4`), listed per zone
    by `acceleratorTypes`; `attached` says the GPUs go in `guestAccelerators` (N1) rather than
    coming with the machine type. Prices are per machine per hour (see the module)."""

    machine_type: str
    card: str | None
    gpus: int
    gpu_memory_gb: float
    vcpus: int
    memory_gb: float
    on_demand: float | None
    spot: float | None
    accelerator_type: str = ""
    attached: bool = False

    @property
    def name(self) -> str:
        """How an offer names it: the machine type, and the GPUs an N1 machine gets attached."""
        if self.attached:
            return f"{self.machine_type}+{self.gpus}x{self.accelerator_type}"
        return self.machine_type


def _built_in(prefix: str, card: str, memory: float, kind: str, rows: list[tuple]) -> list[Shape]:
    return [
        Shape(f"{prefix}{suffix}", card, gpus, memory, vcpus, ram, on_demand, spot, kind)
        for suffix, gpus, vcpus, ram, on_demand, spot in rows
    ]


def _attached(card: str, memory: float, kind: str, rows: list[tuple]) -> list[Shape]:
    return [
        Shape(machine, card, gpus, memory, vcpus, ram, on_demand, spot, kind, attached=True)
        for machine, gpus, vcpus, ram, on_demand, spot in rows
    ]


#: Every shape, with its us-central1 prices (on demand, spot; see the module).
# fmt: off
SHAPES: tuple[Shape, ...] = (
    *_built_in("a3-highgpu-", "H100", 80, "nvidia-h100-80gb", [
        ("1g", 1, 26, 234, None, 3.13), ("2g", 2, 52, 468, None, 6.26),
        ("4g", 4, 104, 936, None, 12.52), ("8g", 8, 208, 1872, 88.25, 25.04),
    ]),
    *_built_in("a2-highgpu-", "A100", 40, "nvidia-tesla-a100", [
        ("1g", 1, 12, 85, 3.67, 1.10), ("2g", 2, 24, 170, 7.35, 2.20),
        ("4g", 4, 48, 340, 14.69, 4.41), ("8g", 8, 96, 680, 29.39, 8.81),
    ]),
    *_built_in("a2-ultragpu-", "A100", 80, "nvidia-a100-80gb", [
        ("1g", 1, 12, 170, 5.07, 1.57), ("2g", 2, 24, 340, 10.14, 3.14),
        ("4g", 4, 48, 680, 20.28, 6.28), ("8g", 8, 96, 1360, 40.55, 12.56),
    ]),
    *_built_in("g2-standard-", "L4", 24, "nvidia-l4", [
        ("4", 1, 4, 16, 0.71, 0.28), ("8", 1, 8, 32, 0.85, 0.34), ("16", 1, 16, 64, 1.15, 0.46),
        ("24", 2, 24, 96, 2.00, 0.80), ("48", 4, 48, 192, 4.00, 1.60), ("96", 8, 96, 384, 8.00, 3.20),
    ]),
    *_attached("T4", 16, "nvidia-tesla-t4", [
        ("n1-standard-4", 1, 4, 15, 0.54, 0.18), ("n1-standard-8", 2, 8, 30, 1.08, 0.36),
        ("n1-standard-16", 4, 16, 60, 2.16, 0.72),
    ]),
    *_attached("V100", 16, "nvidia-tesla-v100", [
        ("n1-standard-8", 1, 8, 30, 2.86, 1.07), ("n1-standard-16", 2, 16, 60, 5.72, 2.14),
        ("n1-standard-32", 4, 32, 120, 11.44, 4.28), ("n1-standard-64", 8, 64, 240, 22.88, 8.56),
    ]),
    Shape("e2-standard-2", None, 0, 0, 2, 8, 0.07, 0.02),
    Shape("e2-standard-4", None, 0, 0, 4, 16, 0.13, 0.04),
    Shape("e2-standard-8", None, 0, 0, 8, 32, 0.27, 0.08),
    Shape("n2-standard-16", None, 0, 0, 16, 64, 0.78, 0.19),
)
# fmt: on


def offer_of(shape: Shape, zone: str = "", provider: str = "gcp") -> Offer:
    """The market's record of a shape (in `zone`, where one is known)."""
    return Offer(
        provider=provider,
        instance_type=shape.name,
        accelerator=shape.card,
        accelerator_count=shape.gpus,
        accelerator_memory_gb=shape.gpu_memory_gb or None,
        vcpus=shape.vcpus,
        memory_gb=shape.memory_gb,
        region=zone,
        spot_price=shape.spot,
        on_demand_price=shape.on_demand,
    )
