"""Every extension point of Skyward, in one file (pluggy project name "skyward").

Global hooks come from distributions that declare an entry point in the `skyward` group; core
registers its own built-ins through the same entry point, so there is one path for everyone.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("skyward")
hookimpl = pluggy.HookimplMarker("skyward")


# -- discovery -----------------------------------------------------------------------------------------


@hookspec
def skyward_providers() -> dict[str, Any]:
    """Return `{"Public": ConfigClass}` for the providers this distribution offers.

    Called when a pool starts and when a lazy public name (`sky.AWS`) is first touched. The config
    class is what users instantiate (`sky.AWS(region=...)`); the lowercase public name is also the
    name used in `skyward.toml` (`provider = "aws"`).
    """


@hookspec
def skyward_plugins() -> dict[str, Any]:
    """Return `{"name": factory}` for the plugins this distribution offers (`sky.plugins.<name>`)."""
