"""What skyward-core discovers through the `skyward` entry point: `sky.Scaleway` and
`provider="scaleway"`, the servers `sky ls`/`sky down` sweep and the GPU types `sky offers` lists,
each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"Scaleway": "skyward_scaleway.config:Scaleway"},
    sweeper="skyward_scaleway.sweep:ScalewaySweeper",
    offers="skyward_scaleway.offers:ScalewayOffers",
)
