"""Core's own hook implementations, registered through the `skyward` entry point like any plugin."""

from __future__ import annotations

from typing import Any

from skyward.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, Any]:
    from skyward.providers.local import Local

    return {"Local": Local}


@hookimpl
def skyward_plugins() -> dict[str, Any]:
    return {}
