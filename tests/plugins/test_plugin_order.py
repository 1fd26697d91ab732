"""Every hook's ordering rule, observed through a real pool of Local workers."""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path

import pytest
from plugin_support import recorder

import skyward as sky
from skyward.bootstrap import Op
from skyward.plugins import LaunchCommand, Plugin


def compute(plugins: list[Plugin], **kwargs: object) -> sky.Pool:
    return sky.Compute(provider=sky.Local(), nodes=kwargs.pop("nodes", 1), plugins=plugins, console=False, **kwargs)


@sky.function
def env(name: str) -> str | None:
    return os.environ.get(name)


def test_transforms_fold_in_plugin_order_each_seeing_the_previous_image() -> None:
    def append(tag: str) -> Plugin:
        return Plugin.create(tag).with_image_transform(lambda image, cluster: image.with_env(ORDER=image.env.get("ORDER", "") + tag))

    with compute([append("a"), append("b"), append("c")]) as pool:
        assert env("ORDER") >> pool == "abc"
        assert pool.image.env["ORDER"] == "abc"


def test_bootstrap_ops_are_appended_in_plugin_order() -> None:
    plugins = [
        Plugin.create("first").with_bootstrap(lambda cluster: ("echo one", Op("second-op", "echo two"))),
        Plugin.create("second").with_bootstrap(lambda cluster: ("echo three",)),
    ]
    with pytest.warns(UserWarning, match="runs no bootstrap"), compute(plugins) as pool:
        assert [str(op) for op in pool.bootstrap_ops] == ["echo one", "echo two", "echo three"]


def test_around_client_enters_in_order_and_exits_in_reverse() -> None:
    log: list[str] = []

    def tracked(name: str) -> Plugin:
        @contextlib.contextmanager
        def around(pool: sky.Pool, cluster: object):
            log.append(f"enter {name}")
            yield
            log.append(f"exit {name}")

        return Plugin.create(name).with_around_client(around)

    with compute([tracked("a"), tracked("b")]):
        assert log == ["enter a", "enter b"]
    assert log == ["enter a", "enter b", "exit b", "exit a"]


@sky.function
def noop() -> int:
    return os.getpid()


def test_around_app_enters_lazily_on_the_first_task(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    with compute([recorder(log, "a")]) as pool:
        assert not log.exists()
        noop() >> pool
        assert log.read_text().count("enter a") == 1


def test_around_app_enters_once_per_worker_and_exits_in_reverse_at_shutdown(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    with compute([recorder(log, "a"), recorder(log, "b")], nodes=2) as pool:
        for _ in range(3):
            noop() @ pool
    lines = log.read_text().splitlines()
    for node in (0, 1):
        mine = [line.split(" node=")[0] for line in lines if f"node={node}" in line]
        assert mine == ["enter a", "enter b", "exit b", "exit a"]


def test_around_process_enters_once_per_executor_subprocess_after_env_is_set(tmp_path: Path) -> None:
    log = tmp_path / "process.log"
    worker = sky.Worker(executor="process", concurrency=1)
    with compute([recorder(log, "p", hook="around_process")], worker=worker, image=sky.Image(env={"TAG": "set"})) as pool:
        pids = {noop() >> pool for _ in range(3)}
    lines = log.read_text().splitlines()
    assert len(pids) == 1
    pid = pids.pop()
    assert [line.split(" node=")[0] for line in lines] == ["enter p", "exit p"]
    assert f"pid={pid}" in lines[0] and f"pid={pid}" in lines[1]  # left when the worker shut down
    assert "tag=set" in lines[0]


def test_around_process_runs_again_in_each_fresh_subprocess(tmp_path: Path) -> None:
    log = tmp_path / "process.log"
    worker = sky.Worker(executor="process", reuse_processes=False)
    with compute([recorder(log, "p", hook="around_process")], worker=worker) as pool:
        pids = [noop() >> pool for _ in range(3)]
    lines = log.read_text().splitlines()
    assert len(set(pids)) == 3
    for pid in pids:  # each subprocess entered and left its context
        assert [line.split(" node=")[0] for line in lines if f"pid={pid}" in line] == ["enter p", "exit p"]


def test_first_plugins_decorator_is_the_outermost() -> None:
    def wrapping(tag: str) -> Plugin:
        def decorate(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return f"{tag}({fn(*args, **kwargs)})"

            return wrapper

        return Plugin.create(tag).with_decorator(decorate)

    @sky.function
    def core() -> str:
        return "x"

    with compute([wrapping("a"), wrapping("b"), wrapping("c")]) as pool:
        assert core() >> pool == "a(b(c(x)))"


def test_launchers_fold_in_plugin_order_and_the_worker_starts_through_the_final_command() -> None:
    def prefix(var: str) -> Plugin:
        def launcher(command: LaunchCommand, context: object) -> LaunchCommand:
            order = f"{command.launcher} " if command.launcher else ""
            return LaunchCommand(f"env {var}=1 LAUNCH_ORDER={var} {order}".strip(), command.entrypoint, command.args)

        return Plugin.create(var).with_launcher(launcher)

    with compute([prefix("FIRST"), prefix("SECOND")]) as pool:
        # SECOND wraps FIRST's command, so FIRST's `env` runs last and its assignment wins.
        assert (env("FIRST") >> pool, env("SECOND") >> pool, env("LAUNCH_ORDER") >> pool) == ("1", "1", "FIRST")


def test_a_plugin_that_raises_is_named_and_the_next_pool_still_starts() -> None:
    def explode(image: object, cluster: object) -> object:
        raise RuntimeError("boom")

    with pytest.raises(sky.PluginError, match="'exploder' failed in skyward_image_transform: boom"), compute([Plugin.create("exploder").with_image_transform(explode)]):
        pass
    with compute([]) as pool:
        assert env("HOME") >> pool == os.environ["HOME"]


def test_something_that_is_not_a_plugin_is_refused_with_the_fix() -> None:
    with pytest.raises(sky.PluginError, match=r"plugins\[0\] is a str, not a sky.plugins.Plugin"), compute(["torch"]):  # type: ignore[list-item]
        pass
