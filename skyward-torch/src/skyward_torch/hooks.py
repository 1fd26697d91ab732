"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.plugins.torch` and `sky.plugins.accelerate` resolve here. The plugin modules import only
skyward-core and the standard library; torch is imported by the hooks on the workers, so
discovering these names (and building the plugins on the client) never imports a framework.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    return {}


@hookimpl
def skyward_plugins() -> dict[str, object]:
    from skyward_torch.accelerate_plugin import accelerate
    from skyward_torch.torch_plugin import torch

    return {"torch": torch, "accelerate": accelerate}
