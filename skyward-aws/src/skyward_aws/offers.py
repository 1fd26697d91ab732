"""EC2's offers for `sky offers` and `sky.offers()`: every instance type of a region, with its
current spot price and its on-demand list price.

The types come from the same catalog the provider chooses from (`catalog.catalog`,
`DescribeInstanceTypes`), bare metal left out. Spot prices are EC2's current ones
(`DescribeSpotPriceHistory` from now, every type at once, the lowest zone kept, as `pricing` does
for one type); on-demand prices come from the Price List API, read in pages for the whole region,
which only AWS itself serves: against an EC2 look-alike (`AWS(endpoint_url=...)` or
`$AWS_ENDPOINT_URL`: LocalStack, moto) they are unknown (None), never guessed. Prices change
rarely, so a snapshot is kept a day (`PRICE_LIST_TTL`).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
from collections.abc import Callable, Iterator

import attrs

from skyward.market.offer import Offer
from skyward.market.source import PRICE_LIST_TTL
from skyward.providers.credentials import CredentialStatus
from skyward_aws.catalog import catalog
from skyward_aws.clients import LOGGER, Clients, clients_for, resolve_region
from skyward_aws.pricing import PRICING_REGION, parse_on_demand

#: Filters of the Price List API that leave one Linux, shared-tenancy, on-demand price per type.
_LINUX = {
    "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
    "licenseModel": "No License required",
}


def all_spot_prices(clients: Clients) -> dict[str, float]:
    """The lowest current Linux spot price of every type that has one in the region (blocking)."""
    now = datetime.datetime.now(datetime.UTC)
    found: dict[str, float] = {}
    paginator = clients.ec2.get_paginator("describe_spot_price_history")
    for page in paginator.paginate(StartTime=now, ProductDescriptions=["Linux/UNIX"]):
        for row in page.get("SpotPriceHistory", []):
            price, kind = float(row["SpotPrice"]), str(row["InstanceType"])
            found[kind] = min(price, found.get(kind, price))
    return found


def all_on_demand_prices(clients: Clients, look_alike: bool) -> dict[str, float]:
    """The Linux on-demand list price of every type in the region (blocking); empty against an
    EC2 look-alike, and when the Price List API cannot be read (a missing price is no failure)."""
    if look_alike:
        return {}
    filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": clients.region}]
    filters += [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in _LINUX.items()]
    found: dict[str, float] = {}
    try:
        pricing = clients.session.client("pricing", region_name=PRICING_REGION)
        for page in pricing.get_paginator("get_products").paginate(ServiceCode="AmazonEC2", Filters=filters):
            for item in page.get("PriceList", []):
                product = json.loads(item) if isinstance(item, str) else item
                kind = ((product.get("product") or {}).get("attributes") or {}).get("instanceType")
                price = parse_on_demand([product])
                if kind and price is not None:
                    found[str(kind)] = price
    except Exception as exc:  # noqa: BLE001 - on-demand prices unknown; spot prices still count
        # stdlib logging: this runs without a pool too (`sky.offers()`), where structlog is unset.
        logging.getLogger(LOGGER).info("skyward.aws_price_list_unreadable error=%s", exc)
    return found


@attrs.frozen
class AWSOffers:
    """One region's offers. `region=None`: your AWS configuration's default (us-east-1 without
    one); `profile` and `endpoint_url` as in `sky.AWS`, and `$AWS_ENDPOINT_URL` is honoured.
    `find_credentials` is `sky.AWS.credentials` (given by the config and the hook: this module
    does not import the config, which imports it).

    It has the three settings `clients` reads from a config (`region`, `profile`,
    `endpoint_url`), so it stands in for one there."""

    find_credentials: Callable[[], CredentialStatus] = attrs.field(repr=False, eq=False)
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    name: str = "aws"
    ttl: float = PRICE_LIST_TTL

    @property
    def key(self) -> str:
        """The region, and the endpoint when it is not AWS itself: offers of two never mix."""
        region = resolve_region(self, None)  # type: ignore[arg-type]  # the config's three settings
        endpoint = self.endpoint_url or os.environ.get("AWS_ENDPOINT_URL")
        return f"{region}@{endpoint}" if endpoint else region

    def credentials(self) -> CredentialStatus:
        return self.find_credentials()

    def fetch(self) -> Iterator[Offer]:
        region = resolve_region(self, None)  # type: ignore[arg-type]
        clients = clients_for(self, region)  # type: ignore[arg-type]
        types = catalog(clients.ec2, region, self.endpoint_url)
        spot = all_spot_prices(clients)
        look_alike = bool(self.endpoint_url or os.environ.get("AWS_ENDPOINT_URL"))
        on_demand = all_on_demand_prices(clients, look_alike)
        for kind in types:
            if kind.bare_metal:
                continue
            yield Offer(
                provider=self.name, instance_type=kind.name, accelerator=kind.accelerator or None,
                accelerator_count=kind.accelerator_count,
                accelerator_memory_gb=kind.accelerator_memory_gb if kind.accelerator_count else None,
                vcpus=kind.vcpus, memory_gb=round(kind.memory_gb, 2), region=region,
                spot_price=spot.get(kind.name) if "spot" in kind.usage_classes else None,
                on_demand_price=on_demand.get(kind.name),
            )
