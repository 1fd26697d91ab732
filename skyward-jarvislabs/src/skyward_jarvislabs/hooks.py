"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.JarvisLabs` and `provider="jarvislabs"` resolve through `skyward_providers`; `sky ls` /
`sky down` find the pools' machines through `skyward_sweepers`, `sky offers` the GPU types through
`skyward_offer_sources`. All import lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_jarvislabs.config import JarvisLabs

    return {"JarvisLabs": JarvisLabs}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_jarvislabs.sweep import JarvisLabsSweeper

    return [JarvisLabsSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_jarvislabs.offers import JarvisOffers

    return [JarvisOffers()]
