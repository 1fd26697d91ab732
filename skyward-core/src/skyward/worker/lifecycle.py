"""Plugin hooks on the worker: `around_app` once per process, `around_process` once per executor
subprocess, `decorate` per task. Contexts enter in plugin order and exit in reverse."""

from __future__ import annotations

import functools
import threading
from contextlib import ExitStack
from typing import Any


class AppLifecycle:
    """Enters every plugin's `around_app` lazily, exactly once, on the first task."""

    def __init__(self, plugins: tuple[Any, ...], info: Any, hook: str = "around_app") -> None:
        self._plugins = plugins
        self._info = info
        self._hook = hook
        self._stack = ExitStack()
        self._entered = False
        self._lock = threading.Lock()

    def ensure_entered(self) -> None:
        if self._entered:
            return
        with self._lock:
            if self._entered:
                return
            for plugin in self._plugins:
                around = getattr(plugin, self._hook, None)
                if around is not None:
                    self._stack.enter_context(around(self._info))
            self._entered = True

    def close(self) -> None:
        with self._lock:
            self._stack.close()


def decorate(fn: Any, plugins: tuple[Any, ...]) -> Any:
    """Chain plugin decorators so the first plugin's decorator is the outermost."""
    decorators = [p.decorate for p in plugins if getattr(p, "decorate", None) is not None]
    return functools.reduce(lambda f, d: d(f), reversed(decorators), fn)
