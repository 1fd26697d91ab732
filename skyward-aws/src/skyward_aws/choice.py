"""Which instance type a pool gets, at what price: the named type, or the best fitting under the cap.

Kept apart from the catalog (`catalog.py`, which says what fits) and the provider because the price
cap is a choice of its own: with `Spec.max_hourly_cost` the best-fitting types are priced
(`PRICED_CANDIDATES` of them) and the first within the cap wins, priced as the allocation buys
first (spot, or on-demand); a type whose price is unknown is taken, said in a warning; and when
every one costs more, the error names the cheapest and what to change. Blocking (boto3): the
provider runs it in a thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import botocore.exceptions

from skyward.errors import NoOffersError
from skyward_aws.catalog import InstanceType, Want, catalog, choose, closest
from skyward_aws.clients import Clients, translate
from skyward_aws.pricing import on_demand_prices, spot_prices

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_aws.config import AWS

#: How many of the best-fitting types are priced when `Spec.max_hourly_cost` is set.
PRICED_CANDIDATES = 10


def choose_type(
    clients: Clients, config: AWS, spec: Spec, usage: str | None, log: Any
) -> tuple[InstanceType, float | None, float | None]:
    """The instance type and its spot and on-demand prices (`usage`: the purchase option it must
    offer, None for either)."""
    candidates = _candidates(clients, config, spec, usage)
    cap = spec.max_hourly_cost
    top = [k.name for k in candidates[:PRICED_CANDIDATES]] if cap is not None else [candidates[0].name]
    spot = spot_prices(clients, top) if spec.allocation != "on-demand" else {}
    on_demand = on_demand_prices(clients, top)
    # The price the cap is checked against: what this allocation asks for first.
    paid = spot if spec.allocation != "on-demand" else on_demand
    for kind in candidates[: len(top)]:
        price = paid.get(kind.name)
        if cap is None or price is None or price <= cap:
            if cap is not None and price is None:
                log.warning("skyward.aws_price_unknown", instance_type=kind.name, max_hourly_cost=cap)
            return kind, spot.get(kind.name), on_demand.get(kind.name)
    cheapest = min((k for k in top if k in paid), key=paid.__getitem__, default=top[0])
    raise NoOffersError(
        f"aws: every fitting instance type costs more than max_hourly_cost={cap} per node "
        f"(the cheapest, {cheapest}, is ${paid.get(cheapest)}/h); raise max_hourly_cost or ask for "
        "a smaller machine"
    )


def _candidates(clients: Clients, config: AWS, spec: Spec, usage: str | None) -> list[InstanceType]:
    """`AWS(instance_type=)`'s type, else the region's fitting types, best first."""
    if config.instance_type is not None:
        try:
            rows = clients.ec2.describe_instance_types(InstanceTypes=[config.instance_type])
        except botocore.exceptions.ClientError as exc:
            raise translate(exc, f"looking up AWS(instance_type={config.instance_type!r})") from None
        return [InstanceType.from_api(row) for row in rows["InstanceTypes"]]
    types = catalog(clients.ec2, clients.region, config.endpoint_url)
    want = Want.of(spec, usage)
    candidates = choose(types, want)
    if not candidates:
        near = "; ".join(k.describe() for k in closest(types, want)) or "none"
        raise NoOffersError(
            f"aws: no instance type in {clients.region} has {want.describe()}; the closest are: "
            f"{near}. Change the accelerator, count, vcpus or memory_gb, or name one with "
            "AWS(instance_type=...)"
        )
    return candidates
