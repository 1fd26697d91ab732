"""The pool's own plugin manager, and the adapters that make `Plugin` values hook implementations.

`PoolHooks` builds one manager per pool: the installed distributions' hook modules (core's
`skyward.client.core_hooks` among them) and then the pool's `plugins=[...]`. Each of its methods is one
`self.pm.hook.<name>(...)` call and the checks of what came back; the order is pluggy's, set up so
that it is the order the user wrote (see `skyward.extension.hookspecs`):

- a plugin's collecting hooks (`PluginAdapter`) are plain implementations, registered in reverse
  list order because pluggy calls the last registered first: they answer in plugin order;
- a plugin's folding hooks (`PluginFolds`) are hook wrappers, registered in list order so that the
  first plugin is the innermost: it transforms the starting value first, the next one its result.

Every failure of a plugin's hook is a `PluginError` naming the plugin, raised by its adapter.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy
import structlog

from skyward.bootstrap.ops import Op, as_ops
from skyward.client import core_hooks
from skyward.errors import PluginError
from skyward.extension import hookspecs, registry
from skyward.extension.hookspecs import hookimpl
from skyward.extension.plugin import LaunchCommand, LaunchContext, Plugin
from skyward.image import Image
from skyward.worker.lifecycle import PluginContext

if TYPE_CHECKING:
    from skyward.client.pool import Pool
    from skyward.options import Worker
    from skyward.providers.base import Cluster, Instance, Provider
    from skyward.spec import Spec

T = TypeVar("T")


def _plugin(name: str) -> str:
    """The plugin's own name, from its registration name (`index:name`, `dist:entry point`)."""
    return name.split(":", 1)[1]


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _call(plugin: Plugin, hook: str, fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)`, a failure of which is a PluginError naming the plugin and the hook."""
    try:
        return fn(*args)
    except Exception as exc:
        raise PluginError(f"The plugin {plugin.name!r} failed in {hook}: {exc}") from exc


class PluginAdapter:
    """A `Plugin`'s collecting hooks, as plain implementations (see the module docstring)."""

    def __init__(self, plugin: Plugin) -> None:
        self.plugin = plugin

    @hookimpl
    def skyward_workers_per_node(self, spec: Spec) -> int | None:
        if self.plugin.workers_per_node is None:
            return None
        value = _call(self.plugin, "skyward_workers_per_node", self.plugin.workers_per_node, spec)
        if value is not None and not _is_count(value):
            raise PluginError(
                f"The plugin {self.plugin.name!r} asked for {value!r} workers per node; use an int >= 1"
            )
        return value

    @hookimpl
    def skyward_bootstrap_ops(self, cluster: Cluster) -> tuple[Op, ...] | None:
        """The plugin's ops; a plain string becomes an Op named after the plugin."""
        if self.plugin.bootstrap is None:
            return None
        result = _call(self.plugin, "skyward_bootstrap_ops", self.plugin.bootstrap, cluster)
        if not result:
            return None
        values = (result,) if isinstance(result, (str, Op)) else result
        try:
            return as_ops(values, default_name=self.plugin.name)
        except TypeError as exc:
            raise PluginError(f"The plugin {self.plugin.name!r} returned a bad bootstrap op: {exc}") from exc

    @hookimpl
    def skyward_around_client(self, pool: Pool, cluster: Cluster) -> PluginContext | None:
        """The plugin's context, wrapped so that failing to enter or to leave names the plugin."""
        if self.plugin.around_client is None:
            return None
        manager = _call(self.plugin, "skyward_around_client", self.plugin.around_client, pool, cluster)
        if manager is None:
            return None
        if not (hasattr(type(manager), "__enter__") and hasattr(type(manager), "__exit__")):
            raise PluginError(
                f"The plugin {self.plugin.name!r} returned a value of type {type(manager).__name__!r} from "
                "around_client; return a context manager (decorate the hook with "
                "@contextlib.contextmanager and yield once)"
            )
        return PluginContext(self.plugin, "around_client", manager)

    @hookimpl
    def skyward_worker_plugins(self) -> list[Plugin] | None:
        p = self.plugin
        return [p] if (p.decorate or p.around_app or p.around_process) else None


class PluginFolds:
    """A `Plugin`'s folding hooks, as hook wrappers: each receives the value produced inside it
    (`yield`) and returns the plugin's own, or that value unchanged (see the module docstring)."""

    def __init__(self, plugin: Plugin) -> None:
        self.plugin = plugin

    @hookimpl(wrapper=True)
    def skyward_image_transform(self, cluster: Cluster) -> Generator[None, Image, Image]:
        image = yield
        return self._fold(
            "skyward_image_transform", self.plugin.transform, image, cluster, Image,
            "its image transform; return the Image it was given, or a copy "
            "(image.with_pip(...), dataclasses.replace(image, ...))",
        )

    @hookimpl(wrapper=True)
    def skyward_launcher(self, context: LaunchContext) -> Generator[None, LaunchCommand, LaunchCommand]:
        command = yield
        return self._fold(
            "skyward_launcher", self.plugin.launcher, command, context, LaunchCommand,
            "its launcher; return a LaunchCommand "
            "(LaunchCommand(launcher, command.entrypoint, command.args))",
        )

    def _fold(self, hook: str, step: Any, value: T, context: Any, kind: type[T], fix: str) -> T:
        """One plugin's step of a fold: its result of the right `kind`, or `value` when it has no
        step or returns None; another type is a PluginError saying what to return (`fix`)."""
        if step is None:
            return value
        result = _call(self.plugin, hook, step, value, context)
        if result is not None and not isinstance(result, kind):
            raise PluginError(
                f"The plugin {self.plugin.name!r} returned a value of type {type(result).__name__!r} "
                f"from {fix}"
            )
        return value if result is None else result


class PoolHooks:
    """One pool's hooks, answered in plugin order."""

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        for index, plugin in enumerate(plugins):
            if not isinstance(plugin, Plugin):
                raise PluginError(
                    f"plugins[{index}] is a {type(plugin).__name__}, not a sky.plugins.Plugin; build one "
                    "with Plugin.create(name).with_...() or a factory such as sky.plugins.joblib()"
                )
        self.plugins: tuple[Plugin, ...] = tuple(plugins)

    @functools.cached_property
    def pm(self) -> pluggy.PluginManager:
        """The manager, built on first use: discovering the installed distributions is deferred
        until a hook is called (a pool that never starts discovers nothing)."""
        pm = pluggy.PluginManager("skyward")
        pm.add_hookspecs(hookspecs)
        for name, module in registry.hook_modules():
            pm.register(module, name=name)
        if not pm.is_registered(core_hooks):  # core's starting values, whatever the entry points say
            pm.register(core_hooks, name=f"{registry.CORE_DISTRIBUTION}:core")
        for index, plugin in enumerate(self.plugins):
            if plugin.transform or plugin.launcher:
                pm.register(PluginFolds(plugin), name=f"{index}:{plugin.name}:folds")
        for index in reversed(range(len(self.plugins))):
            pm.register(PluginAdapter(self.plugins[index]), name=f"{index}:{self.plugins[index].name}")
        if os.environ.get("SKYWARD_TRACE_PLUGINS"):
            log = structlog.get_logger()
            pm.trace.root.setwriter(lambda text: log.info("skyward.plugin_trace", text=text))
            pm.enable_tracing()
        return pm

    def transform_image(self, image: Image, cluster: Cluster | None) -> Image:
        """The spec's image folded through every transform (the first plugin's first)."""
        result = self.pm.hook.skyward_image_transform(image=image, cluster=cluster)
        if not isinstance(result, Image):
            raise PluginError(f"skyward_image_transform answered {type(result).__name__!r}, not an Image")
        return result

    def bootstrap_ops(self, cluster: Cluster | None) -> tuple[Op, ...]:
        """Every implementation's ops, in call order (the pool's plugins in plugin order)."""
        ops: list[Op] = []
        for answer in self.pm.hook.skyward_bootstrap_ops(cluster=cluster):
            values = (answer,) if isinstance(answer, (str, Op)) else answer
            try:
                ops.extend(as_ops(values, default_name="bootstrap"))
            except TypeError as exc:
                raise PluginError(f"skyward_bootstrap_ops answered a bad bootstrap op: {exc}") from exc
        return tuple(ops)

    def launch_command(self, command: LaunchCommand, context: LaunchContext) -> LaunchCommand:
        """`command` folded through every launcher (the first plugin's wraps it first)."""
        result = self.pm.hook.skyward_launcher(command=command, context=context)
        if not isinstance(result, LaunchCommand):
            raise PluginError(f"skyward_launcher answered {type(result).__name__!r}, not a LaunchCommand")
        return result

    def worker_launch(
        self, provider: Provider, cluster: Cluster, *, index: int, total: int, instance: Instance,
        head: Instance, worker: Worker,
    ) -> LaunchCommand:
        """Node `index`'s worker command, folded through every plugin's launcher in plugin order.

        One place for the pool (every node it starts) and `sky.plan` (node 0 of a dry run), so the
        plan shows the line the pool would really run. `worker` is the pool's `sky.Worker`.
        """
        context = LaunchContext(
            node_id=index, num_nodes=total, head_addr=head.private_ip, rendezvous_port=cluster.head_port,
            private_ip=instance.private_ip, python_bin=provider.python_bin(cluster),
            venv_dir=provider.venv_dir(cluster), concurrency=worker.concurrency,
            executor=worker.resolved_executor,
        )
        return self.launch_command(LaunchCommand.worker(context.python_bin), context)

    def end_machine_command(self, provider: Provider, cluster: Cluster, instance: Instance) -> str | None:
        """The command `instance`'s guardian ends its machine with: the first hook answer, else the
        provider's own; None when nothing should end it (an SSH host)."""
        hook = self.pm.hook.skyward_end_machine_command
        answer = hook(provider=provider, cluster=cluster, instance=instance)
        if answer is None:
            answer = provider.end_machine_command(cluster, instance)
        if answer is not None and not isinstance(answer, str):
            raise PluginError(f"skyward_end_machine_command answered {type(answer).__name__!r}, not a str")
        return answer or None

    def enter_clients(self, stack: contextlib.ExitStack, pool: Pool, cluster: Cluster) -> None:
        """Enter each `around_client` context in call order; the stack leaves them in reverse. A
        plugin's context that fails on entering or on leaving is a PluginError naming it."""
        for manager in self.pm.hook.skyward_around_client(pool=pool, cluster=cluster):
            stack.enter_context(manager)

    def workers_per_node(self, spec: Spec) -> int:
        """The one count above 1 that implementations asked for, or 1; two different ones are refused."""
        asked = self.pm.hook.skyward_workers_per_node(spec=spec)
        odd = [value for value in asked if not _is_count(value)]
        if odd:
            raise PluginError(
                f"skyward_workers_per_node asked for {odd[0]!r} workers per node; use an int >= 1"
            )
        counts = {value for value in asked if value > 1}
        if len(counts) > 1:
            raise PluginError(
                f"Plugins disagree on workers per node: {self._asked_by(spec)}; keep one of them"
            )
        return counts.pop() if counts else 1

    def _asked_by(self, spec: Spec) -> dict[str, int]:
        """Who asked for how many workers per node, in call order: for the message that refuses them."""
        asked: dict[str, int] = {}
        for name, call in reversed(registry.callers(self.pm, "skyward_workers_per_node")):
            for value in call(spec=spec):
                asked[_plugin(name)] = value
        return asked

    def worker_plugins(self) -> tuple[Plugin, ...]:
        """The plugins whose worker hooks ship to every worker, in call order (plugin order)."""
        found: list[Plugin] = []
        for answer in self.pm.hook.skyward_worker_plugins():
            found.extend(answer)
        return tuple(found)
