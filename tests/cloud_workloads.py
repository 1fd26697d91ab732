"""The tasks and checks the cloud providers' pool tests share (AWS, RunPod, Vast, Novita, Verda).

Each provider's tests run the same scenarios against their own fake cloud: a pool whose every node
answers, and a node taken back mid-task (preempted) that the pool replaces, retrying the task it
had in flight. The tasks run on workers, which cannot import this module, so it is shipped by value.
"""

from __future__ import annotations

import getpass
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import cloudpickle
from ssh_hosts import wait_until

import skyward as sky

cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: The events a preemption test records (`on_event=preemption_events(seen)`).
PREEMPTION_KINDS = (sky.InstancePreempted, sky.InstanceReplaced, sky.TaskRetried)


def login_here(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A provider's keyword arguments, defaulted to log in as this user (the fakes' sshds let in
    no other) and to build the node venvs from this interpreter (a bootstrap of seconds)."""
    kwargs.setdefault("ssh_user", getpass.getuser())
    kwargs.setdefault("python", sys.executable)
    return kwargs


def quiet_pool(provider: Any, **kwargs: Any) -> sky.Compute:
    """A pool (not started) on `provider`, with no console and no logging unless asked."""
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=provider, **kwargs)


@sky.function
def square(x: int) -> int:
    return x * x


@sky.function
def where() -> tuple[int, int, str]:
    info = sky.instance_info()
    return info.node, info.total_nodes, info.provider


@sky.function
def double_slowly_the_first_time(x: int, marker: str) -> tuple[int, str]:
    """The first attempt announces itself and stays in flight; a retry answers at once."""
    if not os.path.exists(marker):
        Path(marker).write_text("started")
        time.sleep(120)
    return 2 * x, sky.instance_info().id


@sky.function
def instance_id() -> str:
    return sky.instance_info().id


def assert_every_node_answers(pool: sky.Pool, nodes: int, provider: str) -> None:
    """A task runs on the pool, and every node answers as one of `nodes` on `provider`."""
    assert square(7) >> pool == 49
    answers = where() @ pool
    assert sorted(node for node, _, _ in answers) == list(range(nodes))
    assert {(total, name) for _, total, name in answers} == {(nodes, provider)}


def preemption_events(seen: list[sky.Event]) -> Callable[[sky.Event], None]:
    """An `on_event` that keeps the preemption events (`PREEMPTION_KINDS`) in `seen`."""
    return lambda e: seen.append(e) if isinstance(e, PREEMPTION_KINDS) else None


@attrs.frozen
class Preemption:
    """What `preempt_node_1` saw: the instances by node before and after, and the task's answer."""

    before: list[str]
    after: list[str]
    value: int
    ran_on: str

    @property
    def old(self) -> str:
        return self.before[1]


def preempt_node_1(
    pool: sky.Pool, marker: Path, take_back: Callable[[str], Any], timeout: float
) -> Preemption:
    """Start a task on node 1 of a two-node pool, have the cloud take that node's instance back
    (`take_back(instance id)`) while the task is in flight, and wait for the task's answer."""
    before = instance_id() @ pool  # by node index
    future = pool.run_async(double_slowly_the_first_time(21, str(marker)), target=1)
    assert wait_until(marker.exists, 30), "the task never started"
    take_back(before[1])
    value, ran_on = future.result(timeout=timeout)
    return Preemption(before, instance_id() @ pool, value, ran_on)


def assert_replaced_and_retried(seen: list[sky.Event], run: Preemption, reason: str, machine: str) -> None:
    """Node 1 was preempted (for `reason`) and replaced, its task retried once on the new `machine`
    with the right answer, and node 0 untouched."""
    assert run.value == 42
    assert run.ran_on != run.old and run.ran_on == run.after[1], f"the retry did not run on the new {machine}"
    assert run.after[0] == run.before[0]
    preempted = [e for e in seen if isinstance(e, sky.InstancePreempted)]
    assert [(e.node, e.instance_id) for e in preempted] == [(1, run.old)]
    assert reason in preempted[0].reason
    replaced = [e for e in seen if isinstance(e, sky.InstanceReplaced)]
    assert [(e.node, e.old_id, e.new_id) for e in replaced] == [(1, run.old, run.ran_on)]
    assert [(e.node, e.attempt) for e in seen if isinstance(e, sky.TaskRetried)] == [(1, 1)]


def assert_a_pool_leaves_the_machines_of_a_label_extending_its_own(
    make_pool: Callable[..., Any], live: Callable[[], set[Any]], accelerator: str,
) -> None:
    """A pool labelled `train-2` runs while a pool labelled `train` starts and ends: ending
    `train` leaves every machine of `train-2` (a clean-up by name prefix took them), and
    `train-2` still answers. `make_pool(label=..., accelerator=...)` is a quiet pool on the
    cloud's fake; `live()` the machines the fake holds now."""
    with make_pool(label="train-2", accelerator=accelerator) as other:
        theirs = live()
        with make_pool(label="train", accelerator=accelerator) as pool:
            assert square(2) >> pool == 4
        assert theirs <= live(), "ending `train` ended the machines of `train-2`"
        assert square(3) >> other == 9


def assert_two_pools_of_one_label_keep_apart(
    make_pool: Callable[..., Any], live: Callable[[], set[Any]], accelerator: str,
) -> None:
    """Two pools of one label (the same script started twice, `Train` and `train` alike) have
    ids of their own, and the second one's end leaves the first's machines."""
    with make_pool(label="Train", accelerator=accelerator) as first:
        theirs = live()
        with make_pool(label="train", accelerator=accelerator) as second:
            assert first.id != second.id
            assert square(2) >> second == 4
        assert theirs <= live(), "the second `train` ended the first's machines"
        assert square(3) >> first == 9
