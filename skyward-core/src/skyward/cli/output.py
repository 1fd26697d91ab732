"""What every command prints with: rich tables for people, one JSON document for scripts.

Tables go to stdout through one rich console; when stdout is not a terminal rich drops colour, so
piped output stays plain text. `--json` output is written with `click.echo`, alone on stdout.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

#: `--json` on every listing.
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document instead of tables."
)


def console() -> Console:
    """stdout, with rich's own terminal detection (no colour when piped)."""
    return Console(highlight=False)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def _text(cell: Any) -> Text:
    return cell if isinstance(cell, Text) else Text("" if cell is None else str(cell))


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Table:
    """A table whose cells wrap instead of being cut, so nothing is lost on a narrow terminal.

    Cells are text as written (`[providers.gpu]` is not rich markup); pass a `Text` to style one."""
    drawn = Table(title=Text(title) if title else None, title_justify="left", header_style="bold")
    for column in columns:
        drawn.add_column(column, overflow="fold")
    for row in rows:
        drawn.add_row(*(_text(cell) for cell in row))
    return drawn
