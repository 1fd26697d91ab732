"""The hook catalogue is called through pluggy: a distribution's implementation takes its place among
the pool's plugins with pluggy's own markers (`tryfirst`, `trylast`, `wrapper`), on the client and on
the worker, whose hooks go through a plugin manager of their own."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
from plugin_support import distribution, run

import skyward as sky
from skyward.client.hooks import PoolHooks
from skyward.extension.hookspecs import hookimpl
from skyward.plugins import LaunchCommand, LaunchContext, Plugin
from skyward.worker.lifecycle import AppLifecycle, WorkerHooks

#: A distribution that places itself around the pool's plugins, each way pluggy allows.
SITE_HOOKS = """
@hookimpl(tryfirst=True)
def skyward_bootstrap_ops(cluster):
    return ["echo site-first"]


@hookimpl(specname="skyward_bootstrap_ops")
def after_the_plugins(cluster):
    return ["echo site-after"]


@hookimpl(wrapper=True)
def skyward_image_transform(cluster):
    image = yield
    return image.with_env(ORDER=image.env.get("ORDER", "") + "<site>")


@hookimpl(wrapper=True, tryfirst=True, specname="skyward_image_transform")
def sees_the_folded_image(cluster):
    image = yield
    return image.with_env(SEEN=image.env.get("ORDER", ""))
"""

PLAN = """
import json
import skyward as sky
from skyward.plugins import Plugin

def tagged(tag):
    return (
        Plugin.create(tag)
        .with_image_transform(lambda image, cluster: image.with_env(ORDER=image.env.get("ORDER", "") + tag))
        .with_bootstrap(lambda cluster: f"echo {tag}")
    )

result = sky.plan(plugins=[tagged("a"), tagged("b")])
print(json.dumps({"ops": [op.script for op in result.ops], "env": dict(result.image.env)}))
"""


def plan_with_site(tmp_path: Path) -> dict[str, object]:
    result = run(distribution(tmp_path, "skyward-site", SITE_HOOKS), PLAN)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_distributions_tryfirst_ops_come_before_the_pools_plugins_and_its_plain_ones_after(
    tmp_path: Path,
) -> None:
    assert plan_with_site(tmp_path)["ops"] == ["echo site-first", "echo a", "echo b", "echo site-after"]


def test_a_distributions_wrapper_transforms_first_and_a_tryfirst_wrapper_sees_the_folded_image(
    tmp_path: Path,
) -> None:
    env = plan_with_site(tmp_path)["env"]
    assert env == {"ORDER": "<site>ab", "SEEN": "<site>ab"}


def prefix(tag: str) -> Plugin:
    def launcher(command: LaunchCommand, context: LaunchContext) -> LaunchCommand:
        return LaunchCommand(f"{tag} {command.launcher}".strip(), command.entrypoint, command.args)

    return Plugin.create(tag).with_launcher(launcher)


def context() -> LaunchContext:
    return LaunchContext(
        node_id=0, num_nodes=1, head_addr="10.0.0.1", rendezvous_port=4000, private_ip="10.0.0.1",
        python_bin="python", venv_dir="/venv", concurrency=1, executor="thread",
    )


def test_a_launch_context_still_answers_casty_port_with_a_deprecation_warning() -> None:
    """A launcher written against `casty_port` keeps working and is told the name to read instead."""
    with pytest.warns(DeprecationWarning, match="rendezvous_port"):
        assert context().casty_port == context().rendezvous_port == 4000


def test_a_tryfirst_launcher_wrapper_on_the_pools_manager_sees_the_command_every_plugin_wrapped() -> None:
    seen: list[str] = []

    class Audit:
        @hookimpl(wrapper=True, tryfirst=True)
        def skyward_launcher(self) -> Generator[None, LaunchCommand, LaunchCommand]:
            command = yield
            seen.append(command.render())
            return command

    hooks = PoolHooks((prefix("first"), prefix("second")))
    hooks.pm.register(Audit())
    final = hooks.launch_command(LaunchCommand.worker("python"), context())
    assert seen == [final.render()] == ["second first python -m skyward.worker"]


def wrapping(tag: str) -> Plugin:
    def decorate(fn: Callable[..., str]) -> Callable[..., str]:
        @functools.wraps(fn)
        def wrapper() -> str:
            return f"{tag}({fn()})"

        return wrapper

    return Plugin.create(tag).with_decorator(decorate)


def test_the_worker_decorates_through_its_manager_so_a_wrapper_there_sees_the_decorated_function() -> None:
    seen: list[str] = []

    class Audit:
        @hookimpl(wrapper=True, tryfirst=True)
        def skyward_decorate(self) -> Generator[None, Callable[[], str], Callable[[], str]]:
            fn = yield
            seen.append(fn())
            return fn

    hooks = WorkerHooks((wrapping("a"), wrapping("b")))
    hooks.pm.register(Audit())
    assert hooks.decorate(lambda: "x")() == "a(b(x))"
    assert seen == ["a(b(x))"]


def test_the_worker_enters_every_around_app_context_its_manager_answers_in_call_order() -> None:
    log: list[str] = []

    def logged(name: str) -> Callable[[object], contextlib.AbstractContextManager[None]]:
        @contextlib.contextmanager
        def around(info: object) -> Iterator[None]:
            log.append(f"enter {name}")
            yield
            log.append(f"exit {name}")

        return around

    class Site:
        @hookimpl(tryfirst=True)
        def skyward_around_app(self, info: object) -> contextlib.AbstractContextManager[None]:
            return logged("site")(info)

    hooks = WorkerHooks((Plugin.create("a").with_around_app(logged("a")),))
    hooks.pm.register(Site())
    app = AppLifecycle(hooks, sky.InstanceInfo(node=0, total_nodes=1))
    app.ensure_entered()
    app.ensure_entered()  # entered once
    assert app.close() == []
    assert log == ["enter site", "enter a", "exit a", "exit site"]


WORKER_HOOKS = """
@hookimpl
def skyward_worker_plugins():
    from skyward.plugins import Plugin

    def decorate(fn):
        def wrapper(*args, **kwargs):
            return f"site({fn(*args, **kwargs)})"
        return wrapper

    return [Plugin.create("site").with_decorator(decorate)]
"""

POOL = """
import skyward as sky
from skyward.plugins import Plugin

def decorate(fn):
    def wrapper(*args, **kwargs):
        return f"a({fn(*args, **kwargs)})"
    return wrapper

@sky.function
def core():
    return "x"

plugins = [Plugin.create("a").with_decorator(decorate)]
with sky.Compute(provider=sky.Local(), plugins=plugins, console=False) as pool:
    print(core() >> pool)
"""


def test_a_distributions_worker_plugin_ships_to_every_pool_after_the_pools_own(tmp_path: Path) -> None:
    result = run(distribution(tmp_path, "skyward-site", WORKER_HOOKS), POOL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "a(site(x))"
