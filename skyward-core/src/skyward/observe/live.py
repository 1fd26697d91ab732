"""The rich console's live area: a spinner line with elapsed times, and a metrics row per node.

One `rich.live.Live` runs from the pool's first event until the console closes, rather than a
spinner started and stopped as work comes and goes: lines printed through the rich console (the
console's own, and `print`s of the user's thread, which the live display redirects) then always
land above the live area, never on the spinner's line, and there is no stop racing a `print`.
When nothing is in progress the area is empty; it is cleared (transient) when the console closes.

The area is drawn by Rich's refresh thread. It reads a view the console replaces whole after each
event (`show`), and takes no lock of the console's: the console holds its own lock while it prints
through Rich, and Rich holds its lock while it draws. The spinner's text may come from a `status`
function called as it draws (the console's, which reads its counts without a lock): a task's start
and end then cost the console nothing, and the count is never older than a refresh.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs

from skyward.observe.dashboard import format_duration

__all__ = ["LiveArea", "View"]


@attrs.frozen
class View:
    """What the live area shows: the status (None: nothing in progress), since when, the bootstrap
    phase of each node with its start, and one metrics row per node."""

    status: str | None = None
    since: float | None = None
    phases: tuple[tuple[int, str, float], ...] = ()
    rows: tuple[str, ...] = ()


class LiveArea:
    def __init__(
        self, rich_console: Any, status: Callable[[], tuple[str | None, float | None]] | None = None
    ) -> None:
        from rich.live import Live
        from rich.spinner import Spinner

        self.view = View()
        #: The spinner's text and its step's start, read as it draws (else the view's).
        self._status = status
        self._spinner = Spinner("dots", text="")
        self._live = Live(
            self, console=rich_console, refresh_per_second=4, transient=True,
            redirect_stdout=True, redirect_stderr=True,
        )
        self._live.start()

    def show(self, view: View) -> None:
        self.view = view

    def stop(self) -> None:
        self._live.stop()

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        view, now = self.view, time.time()
        status, since = self._status() if self._status is not None else (view.status, view.since)
        items: list[Any] = []
        if status is not None:
            text = status
            if view.phases:
                phases = ", ".join(
                    f"node {node}: {phase} {format_duration(max(0.0, now - started))}"
                    for node, phase, started in view.phases
                )
                text += f" ({phases})"
            if since is not None:
                text += f" · {format_duration(max(0.0, now - since))}"
            self._spinner.update(text=Text(text))
            items.append(self._spinner)
        items.extend(Text(row, style="cyan") for row in view.rows)
        return Group(*items)
