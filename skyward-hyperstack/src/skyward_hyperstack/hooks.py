"""What skyward-core discovers through the `skyward` entry point: `sky.Hyperstack` and
`provider="hyperstack"`, the VMs `sky ls`/`sky down` sweep and the flavors `sky offers` lists,
each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"Hyperstack": "skyward_hyperstack.config:Hyperstack"},
    sweeper="skyward_hyperstack.sweep:HyperstackSweeper",
    offers="skyward_hyperstack.offers:HyperstackOffers",
)
