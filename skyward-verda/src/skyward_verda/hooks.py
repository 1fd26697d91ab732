"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.Verda` and `provider="verda"` resolve through `skyward_providers`; `sky ls` / `sky down` find
the pools' VMs through `skyward_sweepers`. Both import lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_verda.config import Verda

    return {"Verda": Verda}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_verda.sweep import VerdaSweeper

    return [VerdaSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_verda.offers import VerdaOffers

    return [VerdaOffers()]
