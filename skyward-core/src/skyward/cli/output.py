"""What every command prints with: a table for people, plain lines for pipes, JSON for scripts.

A listing is built once, as a `Table` (title, columns, rows), and `draw` draws it for wherever
stdout goes:

- a terminal: a rich table, as wide as the terminal, cells folded onto more lines when it is
  narrow (the columns in `whole`, such as ids, are never folded);
- anything else (a pipe, a file): plain text as `kubectl get` and `docker ps` print it: a header
  line, then one line per record, each column padded to its widest value and columns separated by
  three spaces. Nothing is wrapped or cut whatever `$COLUMNS` says, so `grep NAME` finds a whole
  record. An empty cell is `-` and a value never holds two spaces in a row (whitespace runs and
  line breaks inside a value become one space), so `awk -F '  +'` always splits the columns and
  `awk '{print $N}'` does until the first value with a space in it. Titles are left out; two
  tables (or a table and a line) are separated by one empty line.

Notes about a listing (a provider skipped, nothing found) go to stderr through `note`, so that
piped stdout holds the records and nothing else. `--json` output is written with `click.echo`,
alone on stdout.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import click
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

#: `--json` on every listing.
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document instead of tables."
)

#: Between two columns of a plain table: at least two spaces, so `awk -F '  +'` splits them.
SEPARATOR = "   "
#: An empty cell of a plain table, so that splitting on spaces keeps the columns in place.
EMPTY = "-"

_WHITESPACE = re.compile(r"\s+")


@attrs.frozen
class Table:
    """One listing, drawn by `draw` as a rich table on a terminal or as plain lines elsewhere.

    `whole` holds the indexes of columns that a rich table must not fold (ids, names copied into
    a console or a script); a plain table never folds anything.
    """

    title: str | None
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    whole: frozenset[int] = frozenset()


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]],
          whole: Iterable[int] = ()) -> Table:
    """A listing. Cells are text as written (`[providers.gpu]` is not rich markup); pass a rich
    `Text` to colour one on a terminal (a pipe gets its plain text)."""
    width = len(columns)
    kept = tuple(tuple(row) for row in rows)
    for row in kept:
        if len(row) != width:
            raise ValueError(f"a row of {len(row)} cells in a table of {width} columns: {row!r}; "
                             "give every row one cell per column")
    return Table(title, tuple(columns), kept, frozenset(whole))


def stdout_is_terminal() -> bool:
    """Whether a person is reading stdout. Not rich's own test, which `FORCE_COLOR` (set in many
    CI runners) turns into "yes", and would fold a piped table to `$COLUMNS` again."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def console() -> Console:
    """stdout, with rich's own terminal detection (no colour when piped)."""
    return Console(highlight=False)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def note(message: str) -> None:
    """A line about a listing rather than of it (a provider skipped, nothing found): on stderr,
    so that piped stdout is the header and the records only."""
    click.echo(message, err=True)


def plain_cell(cell: Any) -> str:
    """A cell as one run of text: no line break, no two spaces in a row, `-` when empty."""
    text = cell.plain if isinstance(cell, Text) else "" if cell is None else str(cell)
    return _WHITESPACE.sub(" ", text).strip() or EMPTY


def plain_lines(drawn: Table) -> list[str]:
    """The header and one line per row, each column padded to its widest cell; the last column
    is not padded, so no line ends in spaces."""
    grid = [[plain_cell(c) for c in drawn.columns], *([plain_cell(c) for c in row] for row in drawn.rows)]
    widths = [max(len(line[i]) for line in grid) for i in range(len(drawn.columns))]
    return [
        SEPARATOR.join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in grid
    ]


def _rich_cell(cell: Any) -> Text:
    return cell if isinstance(cell, Text) else Text("" if cell is None else str(cell))


def rich_table(drawn: Table) -> RichTable:
    """The terminal's table: cells fold instead of being cut, so nothing is lost when it is
    narrow, except in the `whole` columns, which stay on one line."""
    out = RichTable(title=Text(drawn.title) if drawn.title else None, title_justify="left",
                    header_style="bold")
    for index, column in enumerate(drawn.columns):
        out.add_column(column, overflow="fold", no_wrap=index in drawn.whole)
    for row in drawn.rows:
        out.add_row(*(_rich_cell(cell) for cell in row))
    return out


def draw(*items: Table | Text | str) -> None:
    """Print tables (and lines such as `valid`) for wherever stdout goes: rich tables on a
    terminal, plain lines elsewhere, an empty line between two items."""
    if not items:
        return
    if stdout_is_terminal():
        out = console()
        for item in items:
            out.print(rich_table(item) if isinstance(item, Table) else _rich_cell(item))
        return
    blocks = [plain_lines(item) if isinstance(item, Table) else [plain_cell(item)] for item in items]
    click.echo("\n\n".join("\n".join(lines) for lines in blocks))
