"""Where the running task is: the worker's `InstanceInfo`, as `sky.instance_info()` returns it.

The worker process learns its place in the pool once, in the handshake, and stores it here with
`set_instance_info`. A module global (not a ContextVar) holds it because every thread of the worker
runs on the same node: a task executed on a fresh executor thread must see it without anyone copying
contexts around. A `ContextVar` layered on top lets one worker process play several logical workers
(one per MIG slice, say) by overriding the info for the duration of a task; see `use_worker_index`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import attrs

from skyward.errors import NoActivePoolError
from skyward.task.instance import InstanceInfo

__all__ = [
    "current_instance_info",
    "instance_info",
    "is_head",
    "set_instance_info",
    "use_instance_info",
    "use_worker_index",
]

_NOT_ON_A_POOL = (
    "sky.instance_info() works inside a task running on a pool; call it inside a @sky.function "
    "dispatched with `>> pool` or `@ pool` (or pass the node explicitly where the helper allows it)"
)

# Shared by all threads of the worker: the node does not change from one thread to the next.
_process_info: InstanceInfo | None = None

# Per-context override: one process running several logical workers sets this around each task.
_override: ContextVar[InstanceInfo | None] = ContextVar("skyward_instance_info", default=None)


def set_instance_info(info: InstanceInfo | None) -> None:
    """Record this process's place in the pool; the worker calls it once, after the handshake.

    Passing None forgets it again (tests use this to leave no state behind).
    """
    global _process_info
    if info is not None and not isinstance(info, InstanceInfo):
        raise TypeError(f"set_instance_info() takes an InstanceInfo or None, not {type(info).__name__}")
    _process_info = info


def current_instance_info() -> InstanceInfo | None:
    """The info in force for this context, or None off a pool; for helpers that degrade gracefully."""
    override = _override.get()
    return override if override is not None else _process_info


def instance_info() -> InstanceInfo:
    """This worker's place in the cluster; raises `NoActivePoolError` when not running on a pool."""
    info = current_instance_info()
    if info is None:
        raise NoActivePoolError(_NOT_ON_A_POOL)
    return info


def is_head(info: InstanceInfo | None = None) -> bool:
    """True on the single head worker (global worker index 0); defaults to `instance_info()`."""
    return (info if info is not None else instance_info()).is_head


@contextmanager
def use_instance_info(info: InstanceInfo) -> Iterator[InstanceInfo]:
    """Make `info` what `instance_info()` returns in this context only, restoring it on exit.

    Threads the task starts do not inherit it unless they run in a copy of this context.
    """
    if not isinstance(info, InstanceInfo):
        raise TypeError(f"use_instance_info() takes an InstanceInfo, not {type(info).__name__}")
    token = _override.set(info)
    try:
        yield info
    finally:
        _override.reset(token)


@contextmanager
def use_worker_index(worker: int) -> Iterator[InstanceInfo]:
    """Run this context as logical worker `worker` of the node (several workers in one process).

    Yields the info with `worker` replaced, so `global_worker_index`, `is_head` and `shard()` follow.
    """
    base = instance_info()
    if not 0 <= worker < base.workers_per_node:
        raise ValueError(
            f"worker index {worker} is out of range: this node runs {base.workers_per_node} "
            f"worker(s), indices 0..{base.workers_per_node - 1}"
        )
    with use_instance_info(attrs.evolve(base, worker=worker)) as info:
        yield info
