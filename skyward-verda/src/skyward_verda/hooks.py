"""What skyward-core discovers through the `skyward` entry point: `sky.Verda` and
`provider="verda"`, the machines `sky ls`/`sky down` sweep and the instance types `sky offers` lists,
each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"Verda": "skyward_verda.config:Verda"},
    sweeper="skyward_verda.sweep:VerdaSweeper",
    offers="skyward_verda.offers:VerdaOffers",
)
