"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.TensorDock` and `provider="tensordock"` resolve through `skyward_providers`; `sky ls` /
`sky down` find the pools' VMs through `skyward_sweepers`, `sky offers` the hostnodes' GPUs
through `skyward_offer_sources`. All import lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_tensordock.config import TensorDock

    return {"TensorDock": TensorDock}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_tensordock.sweep import TensorDockSweeper

    return [TensorDockSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_tensordock.offers import TensorDockOffers

    return [TensorDockOffers()]
