"""GCP's offers for `sky offers` and `sky.offers()`: the package's price table (`catalog`).

Compute Engine's API lists what each zone can start but no prices, so the offers are the
table's shapes at their us-central1 list prices (`catalog.PRICED_REGION`), on demand and spot;
which zone has room is found when a pool launches. Nothing is called, yet the source lists only
where Application Default Credentials are found, as every cloud's does: `sky offers` answers with
what this user can launch, and names where GCP's credentials go when it skips GCP.
"""

from __future__ import annotations

import attrs

from skyward.market.offer import Offer
from skyward.providers.credentials import CredentialStatus
from skyward_gcp.account import locate_credentials
from skyward_gcp.catalog import PRICED_REGION, SHAPES, offer_of

#: The table changes only with the package: a day is as good as forever.
TABLE_TTL = 86400.0


@attrs.frozen
class GCPOffers:
    """The price table's machines as the market's offers."""

    name: str = "gcp"
    ttl: float = TABLE_TTL
    key: str = "price-table"

    def credentials(self) -> CredentialStatus:
        """A pool's credentials: where they are, or where they are looked for."""
        return locate_credentials()

    def fetch(self) -> list[Offer]:
        return [offer_of(shape, PRICED_REGION, self.name) for shape in SHAPES]
