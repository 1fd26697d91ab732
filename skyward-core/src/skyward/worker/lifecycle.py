"""Plugin hooks on the worker: `around_app` once per process, `around_process` once per executor
subprocess, `decorate` once per function. Contexts enter in plugin order and exit in reverse.

The worker walks the same hook catalogue as the client (`skyward.extension.hookspecs`): `WorkerHooks` is a
plugin manager holding core's starting values (`skyward.extension.folds`) and the `Plugin` values the pool
shipped, and the worker calls `skyward_decorate`, `skyward_around_app` and
`skyward_around_process` through it. None of it runs per task: a function is decorated once (the
wrapper is cached), and the contexts are entered once.

A hook that raises is reported as a `PluginError` naming the plugin and the hook: on the worker a
bare `RuntimeError` from deep inside a plugin would otherwise read like the task's own failure.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING

import pluggy

from skyward.errors import PluginError
from skyward.extension import folds, hookspecs
from skyward.extension.hookspecs import TaskFunction, hookimpl

if TYPE_CHECKING:
    from skyward.extension.plugin import Plugin, ProcessLifecycle
    from skyward.task.instance import InstanceInfo


def hook_failed(plugin: Plugin, hook: str, exc: BaseException, when: str = "") -> PluginError:
    """The error that says which plugin's hook failed, and how."""
    where = f" {when}" if when else ""
    return PluginError(f"The plugin {plugin.name!r} failed in {hook}{where}: {type(exc).__name__}: {exc}")


class PluginContext(AbstractContextManager[object]):
    """A plugin's context manager whose failure on entering or leaving names the plugin and hook.

    An exception of the block it wraps passes through unchanged, and what the plugin's exit
    returns (suppressing it or not) is kept.
    """

    def __init__(self, plugin: Plugin, hook: str, manager: AbstractContextManager[object]) -> None:
        self.plugin = plugin
        self.hook = hook
        self.manager = manager

    def __enter__(self) -> object:
        try:
            return self.manager.__enter__()
        except Exception as exc:
            raise hook_failed(self.plugin, self.hook, exc, "on entering") from exc

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        try:
            return bool(self.manager.__exit__(exc_type, exc, tb))
        except Exception as error:
            if error is exc:
                raise  # the block's own exception, passed through
            raise hook_failed(self.plugin, self.hook, error, "on leaving") from error


class WorkerAdapter:
    """One shipped `Plugin`'s worker hooks. `WorkerHooks` registers them in reverse plugin order, as
    pluggy calls the last registered first: the contexts then come in plugin order, and the first
    plugin's decorator is the outermost wrapper (it wraps the others' result, last)."""

    def __init__(self, plugin: Plugin) -> None:
        self.plugin = plugin

    @hookimpl(wrapper=True)
    def skyward_decorate(self) -> Generator[None, TaskFunction, TaskFunction]:
        fn = yield
        if self.plugin.decorate is None:
            return fn
        try:
            return self.plugin.decorate(fn)
        except Exception as exc:
            raise hook_failed(self.plugin, "decorate", exc) from exc

    @hookimpl
    def skyward_around_app(self, info: InstanceInfo) -> PluginContext | None:
        return self._context("around_app", self.plugin.around_app, info)

    @hookimpl
    def skyward_around_process(self, info: InstanceInfo) -> PluginContext | None:
        return self._context("around_process", self.plugin.around_process, info)

    def _context(
        self, hook: str, around: ProcessLifecycle | None, info: InstanceInfo
    ) -> PluginContext | None:
        if around is None:
            return None
        try:
            return PluginContext(self.plugin, hook, around(info))
        except Exception as exc:
            raise hook_failed(self.plugin, hook, exc, "on entering") from exc


class WorkerHooks:
    """The worker's plugin manager: core's starting values (`skyward.extension.folds`), then the shipped
    plugins (see WorkerAdapter)."""

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.pm = pluggy.PluginManager("skyward")
        self.pm.add_hookspecs(hookspecs)
        self.pm.register(folds, name="skyward-core:folds")
        for index in reversed(range(len(plugins))):
            self.pm.register(WorkerAdapter(plugins[index]), name=f"{index}:{plugins[index].name}")

    def decorate(self, fn: TaskFunction) -> TaskFunction:
        """`fn` in every plugin's decorator, the first plugin's outermost."""
        return self.pm.hook.skyward_decorate(fn=fn)

    def contexts(self, hook: str, info: InstanceInfo) -> list[PluginContext]:
        """Each plugin's `around_app` or `around_process` context, in plugin order, not yet entered."""
        return getattr(self.pm.hook, f"skyward_{hook}")(info=info)


class AppLifecycle:
    """Enters every plugin's `around_app` lazily on the first task, and once entered, never again.

    If one plugin's context fails to enter, the ones entered before it are left again (in
    reverse) and the task fails with the error naming that plugin; the next task tries the whole
    chain afresh. So each context is entered at most once at a time, and a worker never runs a
    task with half its plugins set up. Once entered, a task costs one attribute read here.
    """

    def __init__(self, hooks: WorkerHooks, info: InstanceInfo, hook: str = "around_app") -> None:
        self._hooks = hooks
        self._info = info
        self._hook = hook
        self._entered: list[PluginContext] = []
        self._ready = False
        self._lock = threading.Lock()

    def ensure_entered(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            try:
                for context in self._hooks.contexts(self._hook, self._info):
                    context.__enter__()
                    self._entered.append(context)
            except PluginError as error:
                for left in self._leave():
                    error.add_note(str(left))
                raise
            self._ready = True

    def close(self) -> list[PluginError]:
        """Leave every context entered, in reverse; what failed on leaving, each naming its plugin."""
        with self._lock:
            self._ready = False
            return self._leave()

    def _leave(self) -> list[PluginError]:
        errors = []
        while self._entered:
            context = self._entered.pop()
            try:
                context.__exit__(None, None, None)
            except PluginError as error:  # every context is left, each failure reported
                errors.append(error)
        return errors


def enter_worker_contexts() -> None:
    """A task that does nothing. A worker enters its plugins' `around_app` contexts before it runs
    any task, and that is all the pool sends this for: see
    `client.dispatch.Dispatcher._enter_contexts_everywhere`."""
