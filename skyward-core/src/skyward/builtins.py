"""Core's own hook implementations, registered through the `skyward` entry point like any plugin.

Besides the built-in providers and plugin factories, core answers the folding hooks' starting
values (`trylast`, so anything else answers first): the spec's image, the plain worker command
and the undecorated function, which the pool's plugins then transform as hook wrappers. The
worker registers this module too (`skyward.worker.lifecycle`).

Plugin factories are imported on first call, so discovering them imports no framework.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skyward.hookspecs import TaskFunction, hookimpl

if TYPE_CHECKING:
    from skyward.image import Image
    from skyward.plugin import LaunchCommand, Plugin
    from skyward.providers.base import ProviderConfig

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


@hookimpl
def skyward_providers() -> dict[str, type[ProviderConfig]]:
    from skyward.providers.local import Local
    from skyward.providers.ssh import SSH

    return {"Local": Local, "SSH": SSH}


@hookimpl
def skyward_plugins() -> dict[str, Callable[..., Plugin]]:
    return {name: _lazy(module, attr) for name, (module, attr) in BUILTIN_PLUGINS.items()}


@hookimpl(trylast=True)
def skyward_image_transform(image: Image) -> Image:
    """The image the transforms start from: the spec's own."""
    return image


@hookimpl(trylast=True)
def skyward_launcher(command: LaunchCommand) -> LaunchCommand:
    """The command the launchers start from: the plain `<python> -m skyward.worker`."""
    return command


@hookimpl(trylast=True)
def skyward_decorate(fn: TaskFunction) -> TaskFunction:
    """The function the decorators start from: the task's own."""
    return fn
