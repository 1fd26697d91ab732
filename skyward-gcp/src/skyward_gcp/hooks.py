"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.GCP` and `provider="gcp"` resolve through `skyward_providers`; `sky ls` / `sky down` find
the pools' VMs through `skyward_sweepers`. Both import lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_gcp.config import GCP

    return {"GCP": GCP}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_gcp.sweep import GCPSweeper

    return [GCPSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_gcp.offers import GCPOffers

    return [GCPOffers()]
