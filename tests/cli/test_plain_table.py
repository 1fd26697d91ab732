"""The plain table every listing prints when stdout is not a terminal (`skyward.cli.output`).

These call the renderer itself; the tests in test_piped_listings.py run the commands through a
pipe and check the same rules on what they print.
"""

from __future__ import annotations

import re

import pytest
from rich.text import Text

from skyward.cli.output import plain_lines, table


def test_each_column_is_padded_to_its_widest_value() -> None:
    lines = plain_lines(table(None, ("pool", "id"), [("a", "i-1"), ("a-much-longer-pool", "i-2")]))
    assert lines == [
        "pool                 id",
        "a                    i-1",
        "a-much-longer-pool   i-2",
    ]


def test_an_empty_cell_is_a_dash_so_the_columns_stay_in_place() -> None:
    lines = plain_lines(table(None, ("name", "accelerator", "nodes"), [("dev", "", 2), ("cpu", None, 1)]))
    assert [line.split() for line in lines[1:]] == [["dev", "-", "2"], ["cpu", "-", "1"]]


def test_a_line_break_inside_a_value_stays_on_its_records_line() -> None:
    lines = plain_lines(table(None, ("provider", "error"), [("vastai", "refused\n  check VAST_API_KEY")]))
    assert lines[1] == "vastai     refused check VAST_API_KEY"


def test_no_value_holds_two_spaces_so_two_spaces_always_separate_columns() -> None:
    lines = plain_lines(table(None, ("type", "region"), [("1x  A100   PCIE", "US")]))
    assert re.split(r"  +", lines[1]) == ["1x A100 PCIE", "US"]


def test_a_styled_cell_prints_its_text_without_markup() -> None:
    lines = plain_lines(table(None, ("state",), [(Text("ready", style="green"),), ("[red]x[/red]",)]))
    assert lines[1:] == ["ready", "[red]x[/red]"]


def test_no_line_ends_in_spaces() -> None:
    lines = plain_lines(table(None, ("id", "state"), [("i-1", "running"), ("i-22222", "ok")]))
    assert all(line == line.rstrip() for line in lines)


def test_a_row_without_a_cell_per_column_is_refused_naming_the_fix() -> None:
    with pytest.raises(ValueError, match="one cell per column"):
        table(None, ("pool", "id"), [("only-one",)])
