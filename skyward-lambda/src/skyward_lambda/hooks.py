"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.LambdaCloud` and `provider="lambdacloud"` resolve through `skyward_providers`; `sky ls` /
`sky down` find the pools' VMs through `skyward_sweepers`; `sky offers` lists the instance types
through `skyward_offer_sources`. Each imports lazily: discovery stays light.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_lambda.config import LambdaCloud

    return {"LambdaCloud": LambdaCloud}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_lambda.sweep import LambdaSweeper

    return [LambdaSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_lambda.offers import LambdaOffers

    return [LambdaOffers()]
