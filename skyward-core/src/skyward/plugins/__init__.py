"""`sky.plugins`: the Plugin API, plus every installed plugin factory by name.

Factories resolve lazily through entry points, so `import skyward` imports no framework:
`sky.plugins.torch` comes from skyward-torch, and names a package to install when it is missing.
"""

from __future__ import annotations

from typing import Any

from skyward.extension.plugin import (
    AccelerateConfig,
    LaunchCommand,
    LaunchContext,
    Plugin,
    around_app,
    around_client,
    around_process,
)

__all__ = [
    "AccelerateConfig", "LaunchCommand", "LaunchContext", "Plugin", "around_app", "around_client",
    "around_process",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    from skyward.extension.registry import plugin_factory

    return plugin_factory(name)
