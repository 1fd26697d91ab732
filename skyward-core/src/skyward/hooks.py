"""The pool's own plugin manager and a typed facade over its hooks.

Callers never touch `pm.hook` directly: each method here walks the implementations in the order
the user listed the plugins, which is the order the reference promises (transforms and launchers
fold in plugin order, bootstrap ops append in plugin order, `around_client` enters in order and
exits in reverse).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pluggy
import structlog

from skyward import hookspecs
from skyward.bootstrap.ops import Op, as_ops
from skyward.errors import PluginError
from skyward.hookspecs import hookimpl
from skyward.image import Image
from skyward.plugin import LaunchCommand, LaunchContext, Plugin


def _plugin(name: str) -> str:
    """The plugin's own name, from its registration name (`index:name`)."""
    return name.split(":", 1)[1]


def _named_exit(plugin: str, manager: Any, exit_: Any) -> Any:
    """`manager`'s exit, for an ExitStack: an exception it raises of its own names the plugin."""

    def leave(exc_type: Any, exc: Any, tb: Any) -> bool:
        try:
            return bool(exit_(manager, exc_type, exc, tb))
        except Exception as error:
            if error is exc:
                raise  # the pool's own exception, passed through
            raise PluginError(
                f"The plugin {plugin!r} failed in around_client on leaving: {error!r}"
            ) from error

    return leave


class PluginAdapter:
    """Registers one `Plugin` value as pluggy hook implementations."""

    def __init__(self, plugin: Plugin) -> None:
        self.plugin = plugin

    @hookimpl
    def skyward_image_transform(self, image: Any, cluster: Any) -> Any:
        return self.plugin.transform(image, cluster) if self.plugin.transform else None

    @hookimpl
    def skyward_bootstrap_ops(self, cluster: Any) -> Any:
        return self.plugin.bootstrap(cluster) if self.plugin.bootstrap else None

    @hookimpl
    def skyward_launcher(self, command: LaunchCommand, context: LaunchContext) -> Any:
        return self.plugin.launcher(command, context) if self.plugin.launcher else None

    @hookimpl
    def skyward_around_client(self, pool: Any, cluster: Any) -> Any:
        return self.plugin.around_client(pool, cluster) if self.plugin.around_client else None

    @hookimpl
    def skyward_workers_per_node(self, spec: Any) -> Any:
        return self.plugin.workers_per_node(spec) if self.plugin.workers_per_node else None

    @hookimpl
    def skyward_worker_plugins(self) -> Any:
        p = self.plugin
        return [p] if (p.decorate or p.around_app or p.around_process) else None


class PoolHooks:
    """One pool's hooks, in plugin order."""

    def __init__(self, plugins: tuple[Any, ...]) -> None:
        self.pm = pluggy.PluginManager("skyward")
        self.pm.add_hookspecs(hookspecs)
        self._names: list[str] = []
        for index, plugin in enumerate(plugins):
            if not isinstance(plugin, Plugin):
                raise PluginError(
                    f"plugins[{index}] is a {type(plugin).__name__}, not a sky.plugins.Plugin; build one with "
                    "Plugin.create(name).with_...() or a factory such as sky.plugins.joblib()"
                )
            name = f"{index}:{plugin.name}"
            self.pm.register(PluginAdapter(plugin), name=name)
            self._names.append(name)
        self.pm.check_pending()
        if os.environ.get("SKYWARD_TRACE_PLUGINS"):
            self.pm.trace.root.setwriter(lambda text: structlog.get_logger().info("skyward.plugin_trace", text=text))
            self.pm.enable_tracing()

    def _in_order(self, hook_name: str) -> list[tuple[str, Any]]:
        caller = getattr(self.pm.hook, hook_name)
        impls = {impl.plugin_name: impl for impl in caller.get_hookimpls()}
        return [(name, impls[name].function) for name in self._names if name in impls]

    def _call(self, name: str, hook: Any, **kwargs: Any) -> Any:
        try:
            return hook(**kwargs)
        except Exception as exc:
            raise PluginError(f"The plugin {_plugin(name)!r} failed in {hook.__name__}: {exc}") from exc

    def transform_image(self, image: Any, cluster: Any) -> Any:
        for name, hook in self._in_order("skyward_image_transform"):
            result = self._call(name, hook, image=image, cluster=cluster)
            if result is not None:
                if not isinstance(result, Image):
                    raise PluginError(
                        f"The plugin {_plugin(name)!r} returned a value of type {type(result).__name__!r} "
                        "from its image transform; return the Image it was given, or a copy "
                        "(image.with_pip(...), dataclasses.replace(image, ...))"
                    )
                image = result
        return image

    def bootstrap_ops(self, cluster: Any) -> tuple[Op, ...]:
        """Each plugin's ops in plugin order; a plain string becomes an Op named after its plugin."""
        ops: list[Op] = []
        for name, hook in self._in_order("skyward_bootstrap_ops"):
            result = self._call(name, hook, cluster=cluster)
            if not result:
                continue
            values = (result,) if isinstance(result, (str, Op)) else result
            try:
                ops.extend(as_ops(values, default_name=_plugin(name)))
            except TypeError as exc:
                raise PluginError(f"The plugin {_plugin(name)!r} returned a bad bootstrap op: {exc}") from exc
        return tuple(ops)

    def launch_command(self, command: LaunchCommand, context: LaunchContext) -> LaunchCommand:
        for name, hook in self._in_order("skyward_launcher"):
            result = self._call(name, hook, command=command, context=context)
            if result is not None:
                if not isinstance(result, LaunchCommand):
                    raise PluginError(
                        f"The plugin {_plugin(name)!r} returned a value of type {type(result).__name__!r} "
                        "from its launcher; return a LaunchCommand "
                        "(LaunchCommand(launcher, command.entrypoint, command.args))"
                    )
                command = result
        return command

    def worker_launch(
        self, provider: Any, cluster: Any, *, index: int, total: int, instance: Any, head: Any, worker: Any
    ) -> LaunchCommand:
        """Node `index`'s worker command, folded through every plugin's launcher in plugin order.

        One place for the pool (every node it starts) and `sky.plan` (node 0 of a dry run), so the
        plan shows the line the pool would really run. `worker` is the pool's `sky.Worker`.
        """
        context = LaunchContext(
            node_id=index, num_nodes=total, head_addr=head.private_ip, casty_port=cluster.head_port,
            private_ip=instance.private_ip, python_bin=provider.python_bin(cluster),
            venv_dir=provider.venv_dir(cluster), concurrency=worker.concurrency,
            executor=worker.resolved_executor,
        )
        return self.launch_command(LaunchCommand.worker(context.python_bin), context)

    def enter_clients(self, stack: contextlib.ExitStack, pool: Any, cluster: Any) -> None:
        """Enter each plugin's `around_client` in order; the stack leaves them in reverse. A failure
        on entering or on leaving is a PluginError naming the plugin."""
        for name, hook in self._in_order("skyward_around_client"):
            manager = self._call(name, hook, pool=pool, cluster=cluster)
            if manager is None:
                continue
            plugin = _plugin(name)
            if not (hasattr(type(manager), "__enter__") and hasattr(type(manager), "__exit__")):
                raise PluginError(
                    f"The plugin {plugin!r} returned a value of type {type(manager).__name__!r} from "
                    "around_client; return a context manager (decorate the hook with "
                    "@contextlib.contextmanager and yield once)"
                )
            try:
                exit_ = type(manager).__exit__
                type(manager).__enter__(manager)
            except Exception as exc:
                raise PluginError(
                    f"The plugin {plugin!r} failed in around_client on entering: {exc!r}"
                ) from exc
            stack.push(_named_exit(plugin, manager, exit_))

    def workers_per_node(self, spec: Any) -> int:
        asked: dict[str, int] = {}
        for name, hook in self._in_order("skyward_workers_per_node"):
            value = self._call(name, hook, spec=spec)
            if value is not None:
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise PluginError(f"The plugin {name.split(':', 1)[1]!r} asked for {value!r} workers per node; use an int >= 1")
                asked[name.split(":", 1)[1]] = value
        counts = {v for v in asked.values() if v > 1}
        if len(counts) > 1:
            raise PluginError(f"Plugins disagree on workers per node: {asked}; keep one of them")
        return counts.pop() if counts else 1

    def worker_plugins(self) -> tuple[Plugin, ...]:
        found: list[Plugin] = []
        for name, hook in self._in_order("skyward_worker_plugins"):
            result = self._call(name, hook)
            if result:
                found.extend(result)
        return tuple(found)
