"""Hook implementations that skyward-core discovers through the `skyward` entry point.

This distribution registers no names yet: until it does, `skyward.registry` reports that the
package is installed but offers nothing, instead of handing out a class that fails later.
"""

from __future__ import annotations

from skyward.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    return {}


@hookimpl
def skyward_plugins() -> dict[str, object]:
    return {}
