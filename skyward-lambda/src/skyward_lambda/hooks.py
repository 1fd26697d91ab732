"""What skyward-core discovers through the `skyward` entry point: `sky.LambdaCloud` and
`provider="lambdacloud"`, the VMs `sky ls`/`sky down` sweep and the instance types `sky offers`
lists, each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"LambdaCloud": "skyward_lambda.config:LambdaCloud"},
    sweeper="skyward_lambda.sweep:LambdaSweeper",
    offers="skyward_lambda.offers:LambdaOffers",
)
