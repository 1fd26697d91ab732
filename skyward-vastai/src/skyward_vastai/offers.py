"""Vast.ai's offers for `sky offers` and `sky.offers()`: the marketplace, as a pool searches it.

Each Vast offer is one machine's free GPUs. The snapshot is two searches with the filters a pool
uses (`market.SearchFilters.for_spec` with no accelerator: rentable, reliability, verified hosts,
countries, disk), on demand and interruptible, cheapest first, merged by offer: its on-demand
price and its minimum bid (the spot price). Its `region` is the host's country code, which is
what `Spec.region` names on Vast. Prices move by the minute, so a snapshot is kept an hour.

The key is found as for a pool (`$VAST_API_KEY`, then the files `vastai set api-key` writes);
`$VAST_SERVER_URL` points it at another server, as it does `sky ls`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import attrs

from skyward.market.offer import Offer
from skyward.market.source import MARKETPLACE_TTL, default_fits
from skyward.providers.credentials import CredentialStatus, locate_secret
from skyward_vastai.account import API_KEY_VARIABLE, SERVER_URL, key_files

if TYPE_CHECKING:
    from skyward.spec import Spec

URL_VARIABLE = "VAST_SERVER_URL"
#: How many offers each search returns (cheapest first).
SEARCH_LIMIT = 1000


def _country(geolocation: str) -> str:
    """"Somewhere, US" -> "US" (Vast ends its geolocation with the country code)."""
    tail = geolocation.rsplit(",", 1)[-1].strip()
    return tail.upper() if len(tail) == 2 and tail.isalpha() else tail


def _gpu_name(offer: Offer) -> str:
    """The `gpu_name` Vast gave the offer, kept in its instance type ("1x A100 SXM4")."""
    return offer.instance_type.split("x ", 1)[-1]


@attrs.frozen
class VastOffers:
    """The marketplace's offers. `min_reliability`, `verified`, `geolocation` and `disk_gb` are
    `sky.VastAI`'s filters (its defaults here); other values make a snapshot of their own.

    It has the settings `market.SearchFilters.for_spec` reads from a config, so it stands in for one
    there (this module does not import the config, which imports it)."""

    api_key: str | None = attrs.field(default=None, repr=False)
    server_url: str | None = None
    min_reliability: float = 0.95
    verified: bool = True
    geolocation: tuple[str, ...] = ()
    disk_gb: int = 32
    name: str = "vastai"
    ttl: float = MARKETPLACE_TTL

    @property
    def api_url(self) -> str:
        return (self.server_url or os.environ.get(URL_VARIABLE) or SERVER_URL).rstrip("/")

    @property
    def key(self) -> str:
        """The server, and the filters when they are not `sky.VastAI`'s defaults."""
        url = self.api_url
        default = VastOffers()
        filters = {
            "reliability": self.min_reliability, "verified": self.verified,
            "geolocation": ",".join(self.geolocation), "disk": self.disk_gb,
        }
        if (self.min_reliability, self.verified, self.geolocation, self.disk_gb) == (
            default.min_reliability, default.verified, default.geolocation, default.disk_gb
        ):
            return url
        return url + "#" + "&".join(f"{k}={v}" for k, v in filters.items())

    def credentials(self) -> CredentialStatus:
        if self.api_key:
            return CredentialStatus(found=True, where="VastAI(api_key=...)")
        return locate_secret(API_KEY_VARIABLE, key_files())

    def fetch(self) -> list[Offer]:
        from skyward.spec import Spec
        from skyward_vastai.account import resolve_api_key
        from skyward_vastai.api import VastAPI
        from skyward_vastai.market import SearchFilters, offer_of

        query = SearchFilters.for_spec(Spec(allocation="cheapest"), self)  # type: ignore[arg-type]
        api = VastAPI(resolve_api_key(self.api_key), self.api_url)
        machines: dict[int, dict[str, Any]] = {}
        for kind in ("on-demand", "bid"):
            for row in api.search_now(query.filters, kind, query.disk_gb, SEARCH_LIMIT):
                offer = offer_of(row, kind, self.name)
                seen = machines.setdefault(int(row["id"]), {"offer": offer, "row": row})
                seen["spot" if kind == "bid" else "on_demand"] = offer.price
        return [self._offer(m) for m in machines.values()]

    def _offer(self, machine: dict[str, Any]) -> Offer:
        offer, row = machine["offer"], machine["row"]
        ram = row.get("gpu_ram")  # MB per card, as Vast counts it
        memory = round(float(ram) / 1000, 1) if isinstance(ram, int | float) and ram else None
        return attrs.evolve(
            offer, accelerator_memory_gb=memory, region=_country(offer.region),
            spot_price=machine.get("spot"), on_demand_price=machine.get("on_demand"),
        )

    def fits(self, offer: Offer, spec: Spec) -> bool:
        """The catalog's match, and also every `gpu_name` a pool accepts for the spec's card
        (`gpus.gpu_names`: "A100X" is an A100 to Vast, though not a catalog spelling)."""
        if spec.accelerator is not None and offer.accelerator != spec.accelerator.name:
            from skyward_vastai.gpus import gpu_names

            try:
                names = gpu_names(spec.accelerator)
            except Exception:  # noqa: BLE001 - a card Vast does not rent fits no offer
                return False
            if _gpu_name(offer) in names:
                offer = attrs.evolve(offer, accelerator=spec.accelerator.name)
        return default_fits(offer, spec)
