"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.Novita` and `provider="novita"` resolve through `skyward_providers`; `sky ls` / `sky down`
find the pools' instances through `skyward_sweepers`. Both import lazily.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_novita.config import Novita

    return {"Novita": Novita}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_novita.sweep import NovitaSweeper

    return [NovitaSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_novita.offers import NovitaOffers

    return [NovitaOffers()]
