"""What skyward-core discovers through the `skyward` entry point: `sky.Vultr` and
`provider="vultr"`, the instances `sky ls`/`sky down` sweep and the Cloud GPU plans `sky offers`
lists, each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"Vultr": "skyward_vultr.config:Vultr"},
    sweeper="skyward_vultr.sweep:VultrSweeper",
    offers="skyward_vultr.offers:VultrOffers",
)
