"""What skyward-core discovers through the `skyward` entry point: `sky.MassedCompute` and
`provider="massedcompute"`, the machines `sky ls`/`sky down` sweep and the products `sky offers`
lists, each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"MassedCompute": "skyward_massedcompute.config:MassedCompute"},
    sweeper="skyward_massedcompute.sweep:MassedComputeSweeper",
    offers="skyward_massedcompute.offers:MassedOffers",
)
