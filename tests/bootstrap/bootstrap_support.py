"""Helpers for the bootstrap tests: a shared uv cache, event capture, and running a node bootstrap."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from skyward.bootstrap.ops import Op
from skyward.bootstrap.prepare import prepare_node
from skyward.bootstrap.render import Script
from skyward.bootstrap.runner import CommandRunner, LocalRunner
from skyward.extension.plugin import LaunchCommand
from skyward.observe.events import BootstrapCommand, BootstrapConsole, BootstrapError, BootstrapPhase
from skyward.providers.base import NodeSetup

#: One uv cache for every test and run, so only the first run downloads anything.
UV_CACHE = os.environ.get("UV_CACHE_DIR") or str(Path("~/.cache/skyward-tests/uv").expanduser())

needs_uv = pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed (pip install uv)")


def use_shared_uv_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", UV_CACHE)


class Events(list[Any]):
    """Every event emitted, in order, with shortcuts for the kinds the tests look at."""

    def __call__(self, event: Any) -> None:
        self.append(event)

    def phases(self) -> list[tuple[str, str]]:
        return [(e.phase, e.event) for e in self if isinstance(e, BootstrapPhase)]

    def commands(self) -> list[str]:
        return [e.command for e in self if isinstance(e, BootstrapCommand)]

    def console(self) -> list[str]:
        return [e.line for e in self if isinstance(e, BootstrapConsole)]

    def errors(self) -> list[BootstrapError]:
        return [e for e in self if isinstance(e, BootstrapError)]

    def strings(self) -> str:
        """Every string field of every event, joined: what a console or log could ever show."""
        import attrs

        parts = []
        for event in self:
            for field in attrs.fields(type(event)):
                value = getattr(event, field.name)
                if isinstance(value, str):
                    parts.append(value)
        return "\n".join(parts)


def setup_for(
    image: Any,
    ops: Iterable[Op | str] = (),
    *,
    emit: Events,
    timeout: float = 240,
    secrets: tuple[str, ...] = (),
) -> NodeSetup:
    return NodeSetup(
        image=image, ops=tuple(ops), launch=LaunchCommand(entrypoint="python -m skyward.worker"),
        emit=emit, bootstrap_timeout=timeout, secrets=secrets,
    )


def bootstrap(
    setup: NodeSetup, workdir: Path, *, runner: CommandRunner | None = None, node: int = 0,
    python: str | None = None, system_site_packages: bool = False,
) -> Script:
    """Run `prepare_node` for real on this machine (blocking); `python` and `system_site_packages`
    as a provider's `bootstrap_args` pass them (`SSH(python=...)` gives both)."""
    return asyncio.run(prepare_node(
        runner or LocalRunner(), setup, node=node, workdir=str(workdir), python=python,
        system_site_packages=system_site_packages,
    ))
