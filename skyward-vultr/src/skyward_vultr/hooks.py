"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.Vultr` and `provider="vultr"` resolve through `skyward_providers`; `sky ls` / `sky down` find
the pools' instances through `skyward_sweepers`; `sky offers` lists the plans through
`skyward_offer_sources`. Each imports lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_vultr.config import Vultr

    return {"Vultr": Vultr}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_vultr.sweep import VultrSweeper

    return [VultrSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_vultr.offers import VultrOffers

    return [VultrOffers()]
