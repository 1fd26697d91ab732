"""Helpers shared by the plugin tests."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import skyward as sky
from skyward.plugins import Plugin


def recorder(path: Path, name: str, hook: str = "around_app") -> Plugin:
    """A plugin whose `hook` context appends "enter NAME node=.. pid=.. tag=.." and "exit NAME
    node=.. pid=.." lines to `path`, so a test can read the order things happened in."""

    @contextlib.contextmanager
    def around(info: sky.InstanceInfo):
        with open(path, "a") as f:
            f.write(f"enter {name} node={info.node} pid={os.getpid()} tag={os.environ.get('TAG')}\n")
        yield
        with open(path, "a") as f:
            f.write(f"exit {name} node={info.node} pid={os.getpid()}\n")

    return getattr(Plugin.create(name), f"with_{hook}")(around)


def entries(path: Path) -> list[str]:
    """The "enter NAME" / "exit NAME" part of each line a `recorder` wrote."""
    return [line.split(" node=")[0] for line in path.read_text().splitlines()]
