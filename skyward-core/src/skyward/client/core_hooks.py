"""Core's own hook implementations, registered through the `skyward` entry point like any plugin.

Besides the built-in providers and plugin factories, core answers the folding hooks' starting
values (`trylast`, so anything else answers first): the spec's image, the plain worker command
and the undecorated function, which the pool's plugins then transform as hook wrappers. Those
three live in `skyward.extension.folds`, which the worker registers (`skyward.worker.lifecycle`): this
module names the providers and so stands with the client, above the worker.

Plugin factories are imported on first call, so discovering them imports no framework.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skyward.extension.folds import skyward_decorate, skyward_image_transform, skyward_launcher
from skyward.extension.hookspecs import hookimpl

if TYPE_CHECKING:
    from skyward.extension.plugin import Plugin
    from skyward.providers.base import ProviderConfig

#: The folding hooks' starting values, registered with this module (pluggy reads its attributes).
__all__ = [
    "BUILTIN_PLUGINS",
    "skyward_bootstrap_ops",
    "skyward_decorate",
    "skyward_image_transform",
    "skyward_launcher",
    "skyward_plugins",
    "skyward_providers",
]

#: public name -> (module, factory) of the plugins that ship with core.
BUILTIN_PLUGINS = {
    "keras": ("skyward.plugins.builtin.keras", "keras"),
    "joblib": ("skyward.plugins.builtin.joblib", "joblib"),
    "sklearn": ("skyward.plugins.builtin.joblib", "sklearn"),
    "cuml": ("skyward.plugins.builtin.cuml", "cuml"),
    "mig": ("skyward.plugins.builtin.mig", "mig"),
    "mps": ("skyward.plugins.builtin.mps", "mps"),
    "huggingface": ("skyward.plugins.builtin.huggingface", "huggingface"),
}


def _lazy(module: str, attr: str) -> Callable[..., Any]:
    def factory(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), attr)(*args, **kwargs)

    factory.__name__ = factory.__qualname__ = attr
    factory.__module__ = module
    factory.__doc__ = f"The {attr} plugin (see {module})."
    return factory


@hookimpl(tryfirst=True)
def skyward_bootstrap_ops(cluster: Any) -> tuple[Any, ...]:
    """The pool's volumes (`Spec.volumes`), mounted or copied before any plugin op runs."""
    from skyward.client.volumes import volume_ops

    return volume_ops(cluster)


@hookimpl
def skyward_providers() -> dict[str, type[ProviderConfig]]:
    from skyward.providers.local import Local
    from skyward.providers.ssh import SSH

    return {"Local": Local, "SSH": SSH}


@hookimpl
def skyward_plugins() -> dict[str, Callable[..., Plugin]]:
    return {name: _lazy(module, attr) for name, (module, attr) in BUILTIN_PLUGINS.items()}
