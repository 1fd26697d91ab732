"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.Hyperstack` and `provider="hyperstack"` resolve through `skyward_providers`; `sky ls` /
`sky down` find the pools' VMs through `skyward_sweepers`; `sky offers` lists flavors through
`skyward_offer_sources`. All import lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_hyperstack.config import Hyperstack

    return {"Hyperstack": Hyperstack}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_hyperstack.sweep import HyperstackSweeper

    return [HyperstackSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_hyperstack.offers import HyperstackOffers

    return [HyperstackOffers()]
