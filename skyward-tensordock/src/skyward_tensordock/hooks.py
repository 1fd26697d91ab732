"""What skyward-core discovers through the `skyward` entry point: `sky.TensorDock` and
`provider="tensordock"`, the VMs `sky ls`/`sky down` sweep and the hostnodes' GPUs `sky offers` lists,
each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"TensorDock": "skyward_tensordock.config:TensorDock"},
    sweeper="skyward_tensordock.sweep:TensorDockSweeper",
    offers="skyward_tensordock.offers:TensorDockOffers",
)
