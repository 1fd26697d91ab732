"""Bootstrap: an `Image` and plugin `Op`s become one bash script that a provider runs on each node.

- `ops.py`      `Op`, one named step a plugin adds
- `render.py`   `render_script(...) -> Script` (the script, identical for every provider)
- `runner.py`   `CommandRunner` (run/put on a node), `LocalRunner`, `run_bootstrap` (markers -> events)
- `wheels.py`   skyward's own wheels for the node, `resolve_source` for `skyward_source="auto"`
- `wheelmaker.py` a pure-Python wheel written with the standard library (no build backend)
- `prepare.py`  `prepare_node`: upload, render, run; what providers call

`sky.plan` (the script a pool would run, without a pool) is `skyward.client.planning`: it
resolves a pool's arguments and calls its hooks, which stand above this package.

Everything but `Op` loads on first use, so plugins importing `skyward.bootstrap.ops` stay cheap.
"""

from __future__ import annotations

from typing import Any

from skyward.bootstrap.ops import Op, as_op, as_ops

__all__ = [
    "CommandRunner", "LocalRunner", "Op", "Script", "as_op", "as_ops", "local_wheels", "prepare_node",
    "render_script", "resolve_source", "run_bootstrap",
]

_LAZY = {
    "Script": "render", "render_script": "render",
    "CommandRunner": "runner", "LocalRunner": "runner", "run_bootstrap": "runner",
    "local_wheels": "wheels", "resolve_source": "wheels",
    "prepare_node": "prepare",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'skyward.bootstrap' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"skyward.bootstrap.{module}"), name)
    globals()[name] = value
    return value
