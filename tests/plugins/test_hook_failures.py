"""A plugin hook that fails is named, on the client and on the worker; nothing is left half set
up, and a failure as the pool or a worker shuts down is still reported."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from plugin_support import entries, recorder

import skyward as sky
from skyward.plugins import Plugin


def compute(plugins: list[Plugin], **kwargs: object) -> sky.Pool:
    return sky.Compute(provider=sky.Local(), nodes=1, plugins=plugins, console=False, **kwargs)


@sky.function
def pid() -> int:
    return os.getpid()


def failing_once(marker: Path) -> Plugin:
    """Fails to enter the first time only (the marker file remembers)."""

    @contextlib.contextmanager
    def around(info: sky.InstanceInfo):
        if not marker.exists():
            marker.touch()
            raise RuntimeError("not ready yet")
        yield

    return Plugin.create("flaky").with_around_app(around)


def test_an_around_app_that_fails_to_enter_is_named_and_the_plugins_before_it_are_left(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    with compute([recorder(log, "good"), failing_once(tmp_path / "failed")]) as pool:
        with pytest.raises(sky.PluginError, match="'flaky' failed in around_app on entering: RuntimeError: not ready yet"):
            pid() >> pool
        assert entries(log) == ["enter good", "exit good"]
        # The next task sets the whole chain up afresh; from then on it stays entered.
        worker = pid() >> pool
        assert pid() >> pool == worker
        assert entries(log) == ["enter good", "exit good", "enter good"]
    assert entries(log) == ["enter good", "exit good", "enter good", "exit good"]


def test_an_around_app_that_fails_on_leaving_is_reported_as_an_error_event() -> None:
    @contextlib.contextmanager
    def around(info: sky.InstanceInfo):
        yield
        raise RuntimeError("checkpoint not saved")

    errors: list[sky.Error] = []
    pool = compute([Plugin.create("saver").with_around_app(around)])
    pool.on(sky.Error, errors.append)
    with pool:
        pid() >> pool
    assert [e.node for e in errors] == [0]
    assert "'saver' failed in around_app on leaving: RuntimeError: checkpoint not saved" in errors[0].message


def test_what_an_around_app_prints_as_the_worker_leaves_it_reaches_the_client() -> None:
    @contextlib.contextmanager
    def around(info: sky.InstanceInfo):
        yield
        print("saved the last checkpoint", flush=True)

    lines: list[str] = []
    pool = compute([Plugin.create("saver").with_around_app(around)])
    pool.on(sky.Log, lambda event: lines.append(event.line))
    with pool:
        pid() >> pool
    assert "saved the last checkpoint" in lines


def test_a_decorator_that_raises_is_named() -> None:
    def decorate(fn):
        raise ValueError("cannot wrap this")

    with compute([Plugin.create("wrapper").with_decorator(decorate)]) as pool:
        with pytest.raises(sky.PluginError, match="'wrapper' failed in decorate: ValueError: cannot wrap this"):
            pid() >> pool


def test_the_process_executor_decorates_each_function_once_per_subprocess(tmp_path: Path) -> None:
    count = tmp_path / "decorated"

    def decorate(fn):
        with open(count, "a") as f:
            f.write("x")
        return fn

    worker = sky.Worker(executor="process")
    with compute([Plugin.create("counting").with_decorator(decorate)], worker=worker) as pool:
        pids = {pid() >> pool for _ in range(4)}
    assert len(pids) == 1
    assert count.read_text() == "x"


def around_client(name: str, fail_on: str) -> Plugin:
    @contextlib.contextmanager
    def around(pool: sky.Pool, cluster: object):
        if fail_on == "enter":
            raise RuntimeError("no tracker")
        yield
        if fail_on == "exit":
            raise RuntimeError("tracker upload failed")

    return Plugin.create(name).with_around_client(around)


def test_an_around_client_that_fails_to_enter_is_named_and_the_next_pool_starts() -> None:
    with pytest.raises(sky.PluginError, match="'tracker' failed in around_client on entering: RuntimeError"):
        with compute([around_client("tracker", "enter")]):
            pass
    with compute([]) as pool:
        assert isinstance(pid() >> pool, int)


def test_an_around_client_that_fails_on_leaving_is_named() -> None:
    with pytest.raises(sky.PluginError, match="'tracker' failed in around_client on leaving: RuntimeError"):
        with compute([around_client("tracker", "exit")]) as pool:
            pid() >> pool


def test_an_exception_of_the_block_passes_through_around_client_unchanged() -> None:
    with pytest.raises(KeyError, match="mine"), compute([around_client("tracker", "neither")]):
        raise KeyError("mine")


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        (Plugin.create("odd").with_around_client(lambda pool, cluster: 3), "'odd' returned a value of type 'int' from around_client"),
        (Plugin.create("odd").with_image_transform(lambda image, cluster: "img"), "'odd' returned a value of type 'str' from its image transform"),
        (Plugin.create("odd").with_launcher(lambda command, context: "python -m x"), "'odd' returned a value of type 'str' from its launcher"),
        (Plugin.create("odd").with_bootstrap(lambda cluster: (3,)), "'odd' returned a bad bootstrap op"),
    ],
    ids=["around_client", "transform", "launcher", "bootstrap"],
)
def test_a_hook_that_returns_the_wrong_kind_of_value_is_named(plugin: Plugin, message: str) -> None:
    with pytest.raises(sky.PluginError, match=message), compute([plugin]):
        pass


def test_a_bootstrap_hook_may_return_one_string_which_becomes_one_op_named_after_its_plugin() -> None:
    plugin = Plugin.create("git").with_bootstrap(lambda cluster: "apt-get install -y git")
    result = sky.plan(plugins=[plugin])
    assert [(op.name, op.script) for op in result.ops] == [("git", "apt-get install -y git")]
