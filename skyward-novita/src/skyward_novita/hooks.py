"""What skyward-core discovers through the `skyward` entry point: `sky.Novita` and
`provider="novita"`, the machines `sky ls`/`sky down` sweep and the GPU products `sky offers` lists,
each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"Novita": "skyward_novita.config:Novita"},
    sweeper="skyward_novita.sweep:NovitaSweeper",
    offers="skyward_novita.offers:NovitaOffers",
)
