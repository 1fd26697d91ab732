"""Core's own hook implementations, registered through the `skyward` entry point like any plugin.

Plugin factories are imported on first call, so discovering them imports no framework.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from skyward.hookspecs import hookimpl

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
def skyward_providers() -> dict[str, Any]:
    from skyward.providers.local import Local
    from skyward.providers.ssh import SSH

    return {"Local": Local, "SSH": SSH}


@hookimpl
def skyward_plugins() -> dict[str, Any]:
    return {name: _lazy(module, attr) for name, (module, attr) in BUILTIN_PLUGINS.items()}
