"""The pool's first task enters the plugins' `around_app` contexts on every worker, wherever it goes.

Some contexts are collectives (torch's process group, `jax.distributed`): each worker blocks in
them until every worker has arrived. Here a file barrier stands in for one: a worker entering it
waits until every node has entered.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

import skyward as sky
from skyward.plugins import Plugin

NODES = 2


def barrier(folder: Path, nodes: int = NODES, patience: float = 60.0) -> Plugin:
    """An `around_app` that, like a rendezvous, returns only once every node has entered it."""

    @contextlib.contextmanager
    def around(info: sky.InstanceInfo):
        (folder / f"node-{info.node}").touch()
        deadline = time.monotonic() + patience
        while len(list(folder.glob("node-*"))) < nodes:
            if time.monotonic() > deadline:
                raise TimeoutError(f"node {info.node} waited alone at the barrier")
            time.sleep(0.01)
        yield

    return Plugin.create("barrier").with_around_app(around)


def compute(plugins: list[Plugin], nodes: int = NODES) -> sky.Pool:
    return sky.Compute(provider=sky.Local(), nodes=nodes, plugins=plugins, console=False, logging=False)


@sky.function
def node() -> int:
    return sky.instance_info().node


def started_names(pool: sky.Pool) -> list[str]:
    names: list[str] = []
    pool.on(sky.TaskStarted, lambda event: names.append(event.name))
    return names


def test_a_first_task_on_one_node_meets_every_other_worker_in_the_contexts(tmp_path: Path) -> None:
    with compute([barrier(tmp_path)]) as pool:
        assert node() >> pool in range(NODES)
        assert sorted(path.name for path in tmp_path.iterdir()) == ["node-0", "node-1"]


@pytest.mark.parametrize("target", [0, 1])
def test_a_first_task_pinned_to_a_node_meets_the_others_too(tmp_path: Path, target: int) -> None:
    with compute([barrier(tmp_path)]) as pool:
        assert pool.run(node(), target=target) == target


def test_a_first_async_task_meets_the_others_too(tmp_path: Path) -> None:
    with compute([barrier(tmp_path)]) as pool:
        assert (node() > pool).result(timeout=120) in range(NODES)


def test_the_other_workers_get_one_empty_task_each_once(tmp_path: Path) -> None:
    pool = compute([barrier(tmp_path)])
    names = started_names(pool)
    with pool:
        pool.run(node(), target=0)
        pool.run(node(), target=1)
        pool.run(node(), target=1)
    assert sorted(names) == ["enter_worker_contexts", "node", "node", "node"]


def test_a_broadcast_first_reaches_every_worker_itself_and_adds_no_task(tmp_path: Path) -> None:
    pool = compute([barrier(tmp_path)])
    names = started_names(pool)
    with pool:
        assert node() @ pool == [0, 1]
    assert names == ["node", "node"]


def test_a_pool_whose_plugins_have_no_worker_contexts_sends_only_the_callers_tasks() -> None:
    pool = compute([Plugin.create("inert").with_decorator(lambda fn: fn)])
    names = started_names(pool)
    with pool:
        node() >> pool
    assert names == ["node"]


def test_a_lone_worker_enters_its_contexts_with_its_own_first_task(tmp_path: Path) -> None:
    pool = compute([barrier(tmp_path, nodes=1)], nodes=1)
    names = started_names(pool)
    with pool:
        assert node() >> pool == 0
    assert names == ["node"]


def test_a_worker_that_fails_to_enter_says_so_with_its_next_task() -> None:
    @contextlib.contextmanager
    def around(info: sky.InstanceInfo):
        if info.node == 1:
            raise RuntimeError(f"no device on node {info.node}")
        yield

    with compute([Plugin.create("picky").with_around_app(around)]) as pool:
        assert pool.run(node(), target=0) == 0
        why = "'picky' failed in around_app on entering: RuntimeError: no device on node 1"
        with pytest.raises(sky.PluginError, match=why):
            pool.run(node(), target=1)
        assert pool.run(node(), target=0) == 0  # the pool keeps working
