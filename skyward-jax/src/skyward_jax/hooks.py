"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.plugins.jax` resolves here. The plugin module imports only skyward-core and the standard
library; JAX itself is imported by the plugin's hook on the workers, so discovering this name (and
building the plugin on the client) never imports a framework.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    return {}


@hookimpl
def skyward_plugins() -> dict[str, object]:
    from skyward_jax.jax_plugin import jax

    return {"jax": jax}
