"""Helpers shared by the plugin tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
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


def distribution(root: Path, name: str, hooks: str) -> Path:
    """A distribution `name` whose module holds `hooks`, registered under the `skyward` group.

    A module and its `.dist-info` in `root`: on `PYTHONPATH` (see `run`), `importlib.metadata`
    finds it exactly as it finds an installed wheel.
    """
    module = name.replace("-", "_")
    (root / f"{module}.py").write_text("from skyward.extension.hookspecs import hookimpl\n" + hooks)
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[skyward]\n{name} = {module}\n")
    return root


def run(site: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter that sees the distributions in `site`."""
    python_path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    environ = {**os.environ, "PYTHONPATH": python_path, **env}
    command = [sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=environ)
