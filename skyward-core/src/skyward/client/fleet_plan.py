"""The fleet's plan, worked out before and between provider calls: which specs can start at all and
in which order to try them, and each worker's place in the pool (`sky.instance_info()`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import attrs

from skyward.errors import MissingPackageError
from skyward.providers.credentials import UninstalledProvider, missing_credentials
from skyward.task.instance import InstanceInfo, PeerInfo


def describe(specs: tuple[Any, ...]) -> str:
    """The specs in a few words, for `ClusterRequested`."""
    parts = []
    for spec in specs:
        acc = f" {spec.accelerator}" if spec.accelerator is not None else ""
        parts.append(f"{spec.provider.name}{acc} x{spec.nodes.desired}")
    return " | ".join(parts)


def provider_name(spec: Any) -> str:
    """The provider's public name, as a user writes it (`RunPod`, `VastAI`, `Local`)."""
    return type(spec.provider).__name__


@attrs.frozen(kw_only=True)
class Skip:
    """A spec the pool does not try, and why: its provider's package is not installed, or its
    credentials are missing (`credential`: the variable, e.g. "RUNPOD_API_KEY"). `position` is its
    place among the pool's specs, from 1."""

    position: int
    spec: Any
    provider: str
    reason: str
    credential: str = ""

    @property
    def message(self) -> str:
        return f"skipping {self.provider}: {self.reason}"


async def startable(specs: Sequence[Any], log: Any) -> tuple[list[Any], list[Skip]]:
    """The specs a pool may try, in the order given, and those it skips.

    Only a pool with a choice skips: a spec alone is tried, and its own start says what it lacks
    (RunPod's names `RUNPOD_API_KEY`; a stand-in for a missing package raises the registry's
    `MissingPackageError`, naming the pip command, at once). A spec is skipped when its
    provider stands in for a package that is not installed (`UninstalledProvider`), or when its
    config says it lacks credentials (`missing_credentials`: the environment and the provider's
    usual files, read now, at pool start, never when the config was built). Each config is asked
    on a thread, all at once: a credential chain may read files (AWS's may ask the instance
    metadata service). A check that fails says nothing against its spec: it is logged and the
    spec is tried.
    """
    if len(specs) < 2:
        for spec in specs:  # nothing to fall over to: say so before Skyward's wheels are built
            if isinstance(spec.provider, UninstalledProvider):
                raise MissingPackageError(spec.provider.message)
        return list(specs), []

    def check(position: int, spec: Any) -> Skip | None:
        config, name = spec.provider, provider_name(spec)
        if isinstance(config, UninstalledProvider):
            return Skip(position=position, spec=spec, provider=name, reason=config.message)
        gap = missing_credentials(config)
        if gap is None:
            return None
        return Skip(position=position, spec=spec, provider=name, reason=str(gap), credential=gap.credential)

    checks = (asyncio.to_thread(check, i, s) for i, s in enumerate(specs, 1))
    found = await asyncio.gather(*checks, return_exceptions=True)
    ready, skipped = [], []
    for spec, answer in zip(specs, found, strict=True):
        if isinstance(answer, Skip):
            skipped.append(answer)
            continue
        if isinstance(answer, BaseException):
            log.warning("skyward.credentials_unknown", provider=provider_name(spec), error=str(answer))
        ready.append(spec)
    return ready, skipped


def why_none_started(specs: Sequence[Any], skipped: Sequence[Skip], failed: Sequence[tuple[Any, str]]) -> str:
    """Each spec of a pool that could not start and why, one line each, in the pool's order."""
    reasons = {id(s.spec): f"skipped: {s.reason}" for s in skipped}
    reasons.update({id(spec): f"failed: {why}" for spec, why in failed})
    lines = [
        f"  spec {i} ({provider_name(spec)}): {reasons.get(id(spec), 'not tried')}"
        for i, spec in enumerate(specs, 1)
    ]
    return f"none of the pool's {len(specs)} specs could start:\n" + "\n".join(lines)


async def in_selection_order(specs: tuple[Any, ...], selection: str, log: Any) -> list[Any]:
    """`selection="first"`: as written; `"cheapest"`: by the price of a node, unknown last.

    A node's price is what Skyward's offer catalog (`skyward.market`, what `sky offers` shows)
    says the cheapest offer that fits the spec costs, within its `max_hourly_cost`; for a provider
    without offers in the catalog, its config's `hourly_price`. Either may take a call to the
    cloud (a refresh, an offer search), so each runs in a thread, all at once, and only when
    there is a choice to make. A provider that cannot price says nothing against it: it goes
    last, and a failure to price is logged, not raised.
    """
    ordered = list(specs)
    if selection != "cheapest" or len(ordered) < 2:
        return ordered

    def price(spec: Any) -> float:
        from skyward.market.api import spec_price

        found = spec_price(spec)
        if found is not None:
            log.info("skyward.spec_priced", provider=spec.provider.name, offer=str(found.offer),
                     price=found.price, catalog=found.status.state)
            value = found.price
        else:
            value = spec.provider.hourly_price(spec)
        return float("inf") if value is None else float(value) * spec.nodes.desired

    prices = await asyncio.gather(*(asyncio.to_thread(price, s) for s in ordered), return_exceptions=True)
    for spec, found in zip(ordered, prices, strict=True):
        if isinstance(found, BaseException):
            log.warning("skyward.price_unknown", provider=spec.provider.name, error=str(found))
    order = [float("inf") if isinstance(p, BaseException) else p for p in prices]
    return [spec for _, _, spec in sorted(zip(order, range(len(ordered)), ordered, strict=True))]


def instance_info(
    spec: Any, cluster: Any, instances: dict[int, Any], index: int, total: int, job_id: str
) -> InstanceInfo:
    """Node `index`'s place in a pool of `total` nodes, with its machine and its peers."""
    head = instances.get(0) or next(iter(instances.values()))
    instance = instances[index]
    acc = spec.accelerator
    peers = tuple(PeerInfo(i.node, i.private_ip, i.public_ip) for i in sorted(instances.values(), key=_node))
    count = float(acc.count) if acc is not None else 0.0
    return InstanceInfo(
        node=index, total_nodes=total, id=instance.id, provider=cluster.provider,
        ip=instance.public_ip, private_ip=instance.private_ip, spot=instance.spot,
        ssh_port=instance.ssh_port, hourly_rate=instance.hourly_rate,
        on_demand_rate=instance.on_demand_rate, instance_type=instance.instance_type,
        gpu_count=int(count), gpu_model=acc.name if acc is not None else "",
        vcpus=instance.vcpus, memory_gb=instance.memory_gb,
        gpu_vram_gb=int(acc.memory_gb or 0) if acc is not None else 0,
        accelerators=count, total_accelerators=count * total,
        head_addr=head.private_ip, head_port=cluster.head_port, job_id=job_id,
        peers=peers,
        accelerator=acc.to_info() if acc is not None else None,
    )


def _node(instance: Any) -> int:
    return instance.node
