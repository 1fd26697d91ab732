"""What skyward-core discovers through the `skyward` entry point: `sky.GCP` and
`provider="gcp"`, the machines `sky ls`/`sky down` sweep and the machine types `sky offers` lists,
each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"GCP": "skyward_gcp.config:GCP"},
    sweeper="skyward_gcp.sweep:GCPSweeper",
    offers="skyward_gcp.offers:GCPOffers",
)
