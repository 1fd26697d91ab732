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


# -- per pool (client side) -------------------------------------------------------------------------
#
# Each `Plugin` in `plugins=[...]` is registered on the pool's own manager, in list order. pluggy
# calls implementations last-registered-first; `skyward.hooks.PoolHooks` walks them in
# registration order instead, so "plugin order" means the order the user wrote.


@hookspec
def skyward_image_transform(image: Any, cluster: Any) -> Any:
    """Return a new `Image` (or None for unchanged). Runs after `provider.prepare`, before the
    bootstrap script is rendered; transforms fold in plugin order, each seeing the previous result."""


@hookspec
def skyward_bootstrap_ops(cluster: Any) -> Any:
    """Return shell ops (strings or `skyward.bootstrap.Op`) appended after the image phases, in plugin order."""


@hookspec
def skyward_launcher(command: Any, context: Any) -> Any:
    """Return a new `LaunchCommand` wrapping the worker start (accelerate, torchrun); folds in plugin order."""


@hookspec
def skyward_around_client(pool: Any, cluster: Any) -> Any:
    """Return a context manager entered on the client after the pool is ready (plugin order), exited
    in reverse before the pool tears down; or None."""


@hookspec
def skyward_workers_per_node(spec: Any) -> Any:
    """Return how many worker processes each node runs (e.g. one per MIG instance), or None.

    Called once at pool start, before provisioning. Each worker gets its own `InstanceInfo.worker`;
    `@` reaches every worker. Plugins that disagree (two values above 1) are an error.
    """


@hookspec
def skyward_worker_plugins() -> Any:
    """Return the `Plugin` objects whose worker-side hooks (`decorate`, `around_app`,
    `around_process`) ship to every worker in the handshake."""
