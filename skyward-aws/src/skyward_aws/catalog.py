"""Which EC2 instance type a spec gets: read AWS's own catalog, keep what fits, smallest first.

The catalog comes from `DescribeInstanceTypes` (the types offered in the region, with their CPUs,
memory, architectures and accelerators), so a new GPU type is usable the day AWS lists it, with no
table here to update. It is read once per region and process: it is large (about a thousand types)
and changes rarely.

A type fits when it has the accelerator asked for (by name, at least `count` of them), at least
`vcpus` and `memory_gb`, the architecture, and the purchase option (spot or on-demand). Among those
the smallest wins: fewest accelerators, then fewest CPUs, then least memory; x86_64 before arm64
when the spec does not say (most wheels exist for it), plain families (`m7i`) before variants
(`m7i-flex`, `m5dn`), newer generations first. Types AWS lists as previous generation are kept, but
rank after every current one: AWS still sells them, and for some cards (the A10G of g5) a previous
generation family is the only one there is. Memory per accelerator is a preference, not a
filter: the catalog's default size for a card (A100 means 80GB) would otherwise hide the type AWS
sells most of (p4d, 40GB).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from skyward.accelerators import Accelerator

#: When the spec says nothing about size: enough for Python, uv and a venv.
DEFAULT_MIN_VCPUS = 2
DEFAULT_MIN_MEMORY_GB = 4.0
#: CPU-only nodes come from the general, compute and memory families (and burstable t, last).
_CPU_FAMILIES = re.compile(r"^(?P<kind>[mcrt])(?P<gen>\d+)(?P<variant>[a-z-]*)$")

_cache: dict[tuple[str | None, str], tuple[InstanceType, ...]] = {}
_cache_lock = threading.Lock()


@attrs.frozen
class InstanceType:
    """One row of the catalog, reduced to what choosing a type needs."""

    name: str
    vcpus: int
    memory_gb: float
    architectures: tuple[str, ...]
    accelerator: str = ""
    accelerator_count: int = 0
    accelerator_memory_gb: float = 0.0
    usage_classes: tuple[str, ...] = ("on-demand", "spot")
    bare_metal: bool = False
    burstable: bool = False
    current_generation: bool = True

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def architecture(self) -> str:
        return "x86_64" if "x86_64" in self.architectures else self.architectures[0]

    @classmethod
    def from_api(cls, row: dict[str, Any]) -> InstanceType:
        name, count, memory = "", 0, 0.0
        devices = (
            (row.get("GpuInfo") or {}).get("Gpus")
            or (row.get("NeuronInfo") or {}).get("NeuronDevices")
            or (row.get("InferenceAcceleratorInfo") or {}).get("Accelerators")
            or []
        )
        if devices:
            first = devices[0]
            name = str(first.get("Name", ""))
            count = sum(int(d.get("Count", 0)) for d in devices)
            memory = float((first.get("MemoryInfo") or {}).get("SizeInMiB", 0)) / 1024
        return cls(
            name=row["InstanceType"],
            vcpus=int(row["VCpuInfo"]["DefaultVCpus"]),
            memory_gb=float(row["MemoryInfo"]["SizeInMiB"]) / 1024,
            architectures=tuple(row.get("ProcessorInfo", {}).get("SupportedArchitectures") or ("x86_64",)),
            accelerator=name,
            accelerator_count=count,
            accelerator_memory_gb=round(memory, 1),
            usage_classes=tuple(row.get("SupportedUsageClasses") or ("on-demand",)),
            bare_metal=bool(row.get("BareMetal", False)),
            burstable=bool(row.get("BurstablePerformanceSupported", False)),
            current_generation=bool(row.get("CurrentGeneration", True)),
        )

    def describe(self) -> str:
        gpu = f", {self.accelerator_count}x {self.accelerator}" if self.accelerator_count else ""
        return f"{self.name} ({self.vcpus} vCPU, {self.memory_gb:g} GB{gpu})"


@attrs.frozen
class Want:
    """What a spec asks of one machine, in the catalog's terms."""

    accelerator: str | None = None
    count: int = 0
    accelerator_memory_gb: float | None = None
    vcpus: float = DEFAULT_MIN_VCPUS
    memory_gb: float = DEFAULT_MIN_MEMORY_GB
    architecture: str | None = None
    usage: str | None = None  # "spot", "on-demand" or None for either

    @classmethod
    def of(cls, spec: Any, usage: str | None = None) -> Want:
        acc: Accelerator | None = spec.accelerator
        # An accelerated type always has CPUs and memory to spare; only a CPU node needs a floor.
        floor_cpus, floor_memory = (1, 1.0) if acc is not None else (DEFAULT_MIN_VCPUS, DEFAULT_MIN_MEMORY_GB)
        return cls(
            accelerator=acc.name if acc is not None else None,
            count=max(1, math.ceil(acc.count)) if acc is not None else 0,
            accelerator_memory_gb=acc.memory_gb if acc is not None else None,
            vcpus=spec.vcpus if spec.vcpus is not None else floor_cpus,
            memory_gb=spec.memory_gb if spec.memory_gb is not None else floor_memory,
            architecture=spec.architecture,
            usage=usage,
        )

    def describe(self) -> str:
        parts = [f"{self.count}x {self.accelerator}" if self.accelerator else "no accelerator"]
        parts.append(f">= {self.vcpus:g} vCPU")
        parts.append(f">= {self.memory_gb:g} GB")
        if self.architecture:
            parts.append(self.architecture)
        if self.usage:
            parts.append(self.usage)
        return ", ".join(parts)


def same_accelerator(asked: str, offered: str) -> bool:
    """Names compared as AWS and the catalog spell them: case, spaces and dashes aside, and a
    first generation's "1" optional (the catalog's Trainium1 is AWS's Trainium)."""
    a, b = _norm(asked), _norm(offered)
    return bool(a) and (a == b or a.removesuffix("1") == b.removesuffix("1"))


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.casefold())


def fits(kind: InstanceType, want: Want) -> bool:
    if kind.bare_metal:
        return False
    if want.usage is not None and want.usage not in kind.usage_classes:
        return False
    if want.architecture is not None and want.architecture not in kind.architectures:
        return False
    if kind.vcpus < want.vcpus or kind.memory_gb < want.memory_gb * 0.97:  # 8 GB types list 7.8 GiB
        return False
    if want.accelerator is None:
        return kind.accelerator_count == 0 and _CPU_FAMILIES.match(kind.family) is not None
    return same_accelerator(want.accelerator, kind.accelerator) and kind.accelerator_count >= want.count


def rank(kind: InstanceType, want: Want) -> tuple[Any, ...]:
    """Smaller is better: see the module's docstring."""
    family = _CPU_FAMILIES.match(kind.family)
    variant = family["variant"] if family else kind.family.lstrip("abcdefghijklmnopqrstuvwxyz0123456789")
    generation = int(family["gen"]) if family else 0
    memory_short = bool(
        want.accelerator_memory_gb and kind.accelerator_memory_gb < want.accelerator_memory_gb * 0.9
    )
    return (
        memory_short, not kind.current_generation, kind.accelerator_count, kind.vcpus, kind.memory_gb,
        want.architecture is None and kind.architecture != "x86_64", kind.burstable,
        len(variant), -generation, kind.name,
    )


def choose(catalog: Iterable[InstanceType], want: Want) -> list[InstanceType]:
    """Every type that fits, best first."""
    return sorted((k for k in catalog if fits(k, want)), key=lambda k: rank(k, want))


def closest(catalog: Sequence[InstanceType], want: Want, limit: int = 5) -> list[InstanceType]:
    """The types nearest to a spec that nothing fits, for the error message: the same accelerator
    with other sizes, or (for an accelerator AWS does not sell) the accelerated types there are."""
    if want.accelerator is not None:
        named = [k for k in catalog if same_accelerator(want.accelerator, k.accelerator) and not k.bare_metal]
        if named:
            return sorted(named, key=lambda k: (k.accelerator_count, k.vcpus))[:limit]
        cards: dict[str, InstanceType] = {}
        for kind in sorted((k for k in catalog if k.accelerator_count), key=lambda k: k.vcpus):
            cards.setdefault(kind.accelerator, kind)
        return sorted(cards.values(), key=lambda k: k.accelerator)[:limit]
    relaxed = attrs.evolve(want, vcpus=0, memory_gb=0)
    bigger = sorted(choose(catalog, relaxed), key=lambda k: (-k.vcpus, -k.memory_gb))
    return bigger[:limit]


def catalog(ec2: Any, region: str, endpoint_url: str | None) -> tuple[InstanceType, ...]:
    """The region's instance types, previous generations included (blocking; cached per region and
    endpoint)."""
    key = (endpoint_url, region)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    rows: list[dict[str, Any]] = []
    paginator = ec2.get_paginator("describe_instance_types")
    for page in paginator.paginate():
        rows.extend(page.get("InstanceTypes", []))
    found = tuple(InstanceType.from_api(row) for row in rows)
    with _cache_lock:
        _cache[key] = found
    return found
