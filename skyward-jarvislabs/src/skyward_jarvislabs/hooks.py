"""What skyward-core discovers through the `skyward` entry point: `sky.JarvisLabs` and
`provider="jarvislabs"`, the instances `sky ls`/`sky down` sweep and the GPU types `sky offers`
lists, each imported only when asked (`skyward.extension.cloud_hooks`)."""

from __future__ import annotations

from skyward.extension.cloud_hooks import cloud_hooks

skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
    providers={"JarvisLabs": "skyward_jarvislabs.config:JarvisLabs"},
    sweeper="skyward_jarvislabs.sweep:JarvisLabsSweeper",
    offers="skyward_jarvislabs.offers:JarvisOffers",
)
