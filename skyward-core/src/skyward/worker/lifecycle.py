"""Plugin hooks on the worker: `around_app` once per process, `around_process` once per executor
subprocess, `decorate` per task. Contexts enter in plugin order and exit in reverse.

A hook that raises is reported as a `PluginError` naming the plugin and the hook: on the worker a
bare `RuntimeError` from deep inside a plugin would otherwise read like the task's own failure.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

from skyward.errors import PluginError


def plugin_name(plugin: Any) -> str:
    return str(getattr(plugin, "name", None) or type(plugin).__name__)


def hook_failed(plugin: Any, hook: str, exc: BaseException, when: str = "") -> PluginError:
    """The error that says which plugin's hook failed, and how."""
    where = f" {when}" if when else ""
    return PluginError(
        f"The plugin {plugin_name(plugin)!r} failed in {hook}{where}: {type(exc).__name__}: {exc}"
    )


class AppLifecycle:
    """Enters every plugin's `around_app` lazily on the first task, and once entered, never again.

    If one plugin's context fails to enter, the ones entered before it are left again (in
    reverse) and the task fails with the error naming that plugin; the next task tries the whole
    chain afresh. So each context is entered at most once at a time, and a worker never runs a
    task with half its plugins set up.
    """

    def __init__(self, plugins: tuple[Any, ...], info: Any, hook: str = "around_app") -> None:
        self._plugins = plugins
        self._info = info
        self._hook = hook
        self._entered: list[tuple[Any, AbstractContextManager[Any]]] = []
        self._ready = False
        self._lock = threading.Lock()

    def ensure_entered(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            for plugin in self._plugins:
                around = getattr(plugin, self._hook, None)
                if around is None:
                    continue
                try:
                    manager = around(self._info)
                    manager.__enter__()
                except Exception as exc:
                    error = hook_failed(plugin, self._hook, exc, "on entering")
                    for left in self._leave():
                        error.add_note(str(left))
                    raise error from exc
                self._entered.append((plugin, manager))
            self._ready = True

    def close(self) -> list[PluginError]:
        """Leave every context entered, in reverse; what failed on leaving, each naming its plugin."""
        with self._lock:
            self._ready = False
            return self._leave()

    def _leave(self) -> list[PluginError]:
        errors = []
        while self._entered:
            plugin, manager = self._entered.pop()
            try:
                manager.__exit__(None, None, None)
            except Exception as exc:  # noqa: BLE001 - every context is left, each failure reported
                errors.append(hook_failed(plugin, self._hook, exc, "on leaving"))
        return errors


def enter_worker_contexts() -> None:
    """A task that does nothing. A worker enters its plugins' `around_app` contexts before it runs
    any task, and that is all the pool sends this for: see `Pool._enter_contexts_everywhere`."""


def decorate(fn: Any, plugins: tuple[Any, ...]) -> Any:
    """Chain plugin decorators so the first plugin's decorator is the outermost."""
    for plugin in reversed(plugins):
        decorator = getattr(plugin, "decorate", None)
        if decorator is None:
            continue
        try:
            fn = decorator(fn)
        except Exception as exc:
            raise hook_failed(plugin, "decorate", exc) from exc
    return fn
