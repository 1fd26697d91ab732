"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.RunPod` and `provider="runpod"` resolve through `skyward_providers`. The class is imported
here, lazily for the provider half: the config module is light, and the API client loads only
when a pool starts.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_runpod.config import RunPod

    return {"RunPod": RunPod}


@hookimpl
def skyward_plugins() -> dict[str, object]:
    return {}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_runpod.sweep import RunPodSweeper

    return [RunPodSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_runpod.offers import RunPodOffers

    return [RunPodOffers()]
