"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`skyward_providers` makes `sky.VastAI` and `provider="vastai"` resolve to this package's config.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_vastai.config import VastAI  # imported when looked up: discovery stays light

    return {"VastAI": VastAI}


@hookimpl
def skyward_plugins() -> dict[str, object]:
    return {}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_vastai.sweep import VastSweeper

    return [VastSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_vastai.offers import VastOffers

    return [VastOffers()]
