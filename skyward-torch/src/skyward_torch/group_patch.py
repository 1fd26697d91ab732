"""The torch plugin's default process group, kept safe from user code written for torchrun.

User code written for ``torchrun`` calls ``dist.init_process_group(...)`` (and often
``dist.destroy_process_group()``) itself. While the plugin's group exists those two calls would
fail (or tear down a group that later tasks rely on), so for the lifetime of the plugin's context
`default_group_owned` replaces the two *public* names ``torch.distributed.init_process_group`` and
``torch.distributed.destroy_process_group`` with thin wrappers:

- ``init_process_group(...)`` returns without doing anything when the default group already
  exists (warning if a different backend was asked for), and otherwise forwards to torch;
- ``destroy_process_group()`` of the default group is a no-op, the plugin owns it; destroying a
  subgroup (``destroy_process_group(group)``) forwards to torch.

Only the attributes of the ``torch.distributed`` package are replaced, not the functions in
``torch.distributed.distributed_c10d`` that torch itself calls, and the originals are put back
when the context exits.

This is one of Skyward's fast paths (`skyward.fastpaths.registry`): it relies on what torch does
not promise (that user code looks the two functions up on the package at call time, and
``GroupMember.WORLD``), so `detect` checks for what the wrappers use, and where anything is
missing, or ``SKYWARD_FAST_PATHS=off``, torch is left alone: user code that forms the group again
then gets torch's own error.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skyward import fastpaths

__all__ = ["NAME", "default_group_owned", "detect"]

NAME = "torch-default-group"
#: What the wrappers use on ``torch.distributed``.
ATTRIBUTES = ("init_process_group", "destroy_process_group", "is_initialized", "get_backend")


def detect(dist: Any) -> bool:
    """Whether `dist` (``torch.distributed``) has all the wrappers use, with fast paths on."""
    if not fastpaths.enabled(NAME):
        return False
    world = hasattr(getattr(dist, "GroupMember", None), "WORLD")
    return world and all(callable(getattr(dist, name, None)) for name in ATTRIBUTES)


@contextmanager
def default_group_owned(dist: Any) -> Iterator[bool]:
    """Make user calls to init/destroy the default group harmless while the plugin owns it (see the
    module's docstring); yields whether they were replaced (`detect`)."""
    if not detect(dist):
        yield False
        return
    original_init = dist.init_process_group
    original_destroy = dist.destroy_process_group
    dist.init_process_group = _init_once(dist, original_init)
    dist.destroy_process_group = _destroy_subgroups_only(dist, original_destroy)
    try:
        yield True
    finally:
        dist.init_process_group = original_init
        dist.destroy_process_group = original_destroy


def _init_once(dist: Any, original: Any) -> Any:
    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> None:
        if not dist.is_initialized():
            return original(*args, **kwargs)
        requested = kwargs.get("backend", args[0] if args else None)
        current = dist.get_backend()
        if requested is not None and str(requested).lower() not in str(current).lower():
            warnings.warn(
                f"torch.distributed.init_process_group(backend={requested!r}) was skipped: the torch plugin "
                f"already formed the default process group with backend {current!r}. Choose the backend "
                f"with sky.plugins.torch(backend={requested!r}).",
                RuntimeWarning,
                stacklevel=2,
            )
        return None

    return init_process_group


def _destroy_subgroups_only(dist: Any, original: Any) -> Any:
    @functools.wraps(original)
    def destroy_process_group(group: Any = None) -> None:
        if group is None or group is dist.GroupMember.WORLD:
            return None  # the plugin's group lives as long as the worker
        return original(group)

    return destroy_process_group
