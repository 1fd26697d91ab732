"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.Scaleway` and `provider="scaleway"` resolve through `skyward_providers`; `sky ls` / `sky down` find
the pools' servers through `skyward_sweepers`; `sky offers` lists the GPU types through
`skyward_offer_sources`. Each imports lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_scaleway.config import Scaleway

    return {"Scaleway": Scaleway}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_scaleway.sweep import ScalewaySweeper

    return [ScalewaySweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_scaleway.offers import ScalewayOffers

    return [ScalewayOffers()]
