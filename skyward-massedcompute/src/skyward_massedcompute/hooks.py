"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.MassedCompute` and `provider="massedcompute"` resolve through `skyward_providers`; `sky ls` /
`sky down` find the pools' machines through `skyward_sweepers`, `sky offers` the products through
`skyward_offer_sources`. All import lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_massedcompute.config import MassedCompute

    return {"MassedCompute": MassedCompute}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_massedcompute.sweep import MassedComputeSweeper

    return [MassedComputeSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_massedcompute.offers import MassedOffers

    return [MassedOffers()]
