"""What an instance type costs per hour, where AWS says: spot prices and on-demand list prices.

Spot prices come from EC2 itself (`DescribeSpotPriceHistory`, the latest price in each zone; the
lowest is kept, as EC2 may place a machine in any zone of the subnetless default VPC). On-demand
prices come from the AWS Price List API, which only AWS itself serves: with `endpoint_url` set
(LocalStack, moto) they are unknown. Unknown is `None`, never a guess: `max_hourly_cost` is then
enforced by AWS for spot (as the maximum price) and only logged for on-demand.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import structlog

from skyward_aws.catalog import Want, catalog, choose
from skyward_aws.clients import LOGGER, Clients, clients_for, resolve_region

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_aws.config import AWS

#: The Price List API answers in these regions only; us-east-1 serves every region's prices.
PRICING_REGION = "us-east-1"

#: Prices are kept this long (seconds): a pool start asks twice (ordering specs, then launching).
PRICE_TTL = 900.0

_known: dict[tuple[str | None, str, str, str], tuple[float, float | None]] = {}
_lock = threading.Lock()


def spot_prices(clients: Clients, types: Iterable[str]) -> dict[str, float]:
    """The lowest current spot price of each type (blocking); types without one are left out."""
    wanted = [t for t in dict.fromkeys(types) if _cached(clients, t, "spot") is _MISSING]
    if wanted:
        now = datetime.datetime.now(datetime.UTC)
        found: dict[str, float] = {}
        paginator = clients.ec2.get_paginator("describe_spot_price_history")
        pages = paginator.paginate(InstanceTypes=wanted, StartTime=now, ProductDescriptions=["Linux/UNIX"])
        for page in pages:
            for row in page.get("SpotPriceHistory", []):
                price = float(row["SpotPrice"])
                kind = row["InstanceType"]
                found[kind] = min(price, found.get(kind, price))
        for kind in wanted:
            _remember(clients, kind, "spot", found.get(kind))
    return _known_prices(clients, types, "spot")


def on_demand_prices(clients: Clients, types: Iterable[str]) -> dict[str, float]:
    """The Linux on-demand list price of each type (blocking); empty away from AWS itself."""
    if clients.endpoint_url is not None:
        return {}
    wanted = [t for t in dict.fromkeys(types) if _cached(clients, t, "on-demand") is _MISSING]
    if wanted:
        pricing = clients.session.client("pricing", region_name=PRICING_REGION)
        for kind in wanted:
            try:
                answer = pricing.get_products(ServiceCode="AmazonEC2", Filters=_filters(clients.region, kind),
                                              MaxResults=10)
                price = parse_on_demand(answer.get("PriceList", []))
            except Exception as exc:  # noqa: BLE001 - a missing price is not a failure
                log = structlog.get_logger(LOGGER)
                log.debug("skyward.aws_price_unknown", instance_type=kind, error=str(exc))
                price = None
            _remember(clients, kind, "on-demand", price)
    return _known_prices(clients, types, "on-demand")


def parse_on_demand(price_list: Iterable[str | dict[str, Any]]) -> float | None:
    """The hourly USD price in a Price List API answer (its products are JSON documents)."""
    for item in price_list:
        product = json.loads(item) if isinstance(item, str) else item
        for term in (product.get("terms", {}).get("OnDemand") or {}).values():
            for dimension in (term.get("priceDimensions") or {}).values():
                usd = dimension.get("pricePerUnit", {}).get("USD")
                if usd is not None and float(usd) > 0:
                    return float(usd)
    return None


def hourly_price(config: AWS, spec: Spec) -> float | None:
    """`AWS.hourly_price`: `estimate`, or None when AWS does not tell (no credentials, no price)."""
    try:
        return estimate(config, spec)
    except Exception:  # noqa: BLE001 - a price is a hint; the real errors come from prepare
        return None


def estimate(config: AWS, spec: Spec) -> float | None:
    """One node's hourly price for `spec` on `config` (blocking), as `AWS.hourly_price` reports it."""
    region = resolve_region(config, spec.region)
    clients = clients_for(config, region)
    usage = "spot" if spec.allocation == "spot" else None
    if config.instance_type:
        kind = config.instance_type
    else:
        fitting = choose(catalog(clients.ec2, region, config.endpoint_url), Want.of(spec, usage))
        if not fitting:
            return None
        kind = fitting[0].name
    if spec.allocation != "on-demand":
        spot = spot_prices(clients, [kind]).get(kind)
        if spot is not None:
            return spot
    return on_demand_prices(clients, [kind]).get(kind)


def _filters(region: str, kind: str) -> list[dict[str, str]]:
    fields = {
        "instanceType": kind, "regionCode": region, "operatingSystem": "Linux", "tenancy": "Shared",
        "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required",
    }
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]


_MISSING = object()


def _cached(clients: Clients, kind: str, market: str) -> Any:
    with _lock:
        entry = _known.get((clients.endpoint_url, clients.region, kind, market))
    if entry is None or time.monotonic() - entry[0] > PRICE_TTL:
        return _MISSING
    return entry[1]


def _remember(clients: Clients, kind: str, market: str, price: float | None) -> None:
    with _lock:
        _known[(clients.endpoint_url, clients.region, kind, market)] = (time.monotonic(), price)


def _known_prices(clients: Clients, types: Iterable[str], market: str) -> dict[str, float]:
    prices = {}
    for kind in types:
        price = _cached(clients, kind, market)
        if isinstance(price, float):
            prices[kind] = price
    return prices
