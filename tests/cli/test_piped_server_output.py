"""`sky server status`, `sky compute list` and `sky compute view --once` read through a pipe: one
record per line, values whole at `COLUMNS=40`, `-` for an empty cell.

A real pool server (`sky server start`, tests/server/server_support.py) holds one Local pool with
a 60-character name, so nothing leaves this machine.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from server_support import Server  # noqa: E402

#: Longer than a 40-column table could hold on one line.
POOL = "acc-live-warm-pool-for-the-notebook-of-the-data-science-team"


def columns_of(line: str) -> list[str]:
    """A plain table's line split as its docs say: on runs of two spaces or more."""
    return re.split(r"  +", line)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server holding the ready Local pool POOL, its `sky` printing into a 40-column pipe."""
    started = Server(tmp_path_factory.mktemp("server")).start()
    started.env["COLUMNS"] = "40"
    try:
        done = started.sky("compute", "create", POOL, "--provider", "local", "--json")
        assert done.returncode == 0, done.stderr
        yield started
    finally:
        started.close()


def test_compute_list_on_a_pipe_prints_the_pool_on_one_line_with_its_name_whole(server: Server) -> None:
    done = server.sky("compute", "list")
    assert done.returncode == 0, done.stderr
    header, *records = done.stdout.splitlines()
    assert columns_of(header) == ["name", "state", "provider", "nodes", "accelerator", "running", "idle",
                                  "error"]
    assert [columns_of(record)[:4] for record in records] == [[POOL, "ready", "local", "1"]]


def test_compute_list_on_a_pipe_shows_an_empty_cell_as_a_dash(server: Server) -> None:
    record = server.sky("compute", "list").stdout.splitlines()[1]
    fields = record.split()  # awk's way: the dashes keep the columns in place
    assert len(fields) == 8
    assert (fields[4], fields[7]) == ("-", "-")  # no accelerator, no error


def test_compute_list_json_lists_the_pool_by_its_whole_name(server: Server) -> None:
    done = server.sky("compute", "list", "--json")
    assert [pool["name"] for pool in json.loads(done.stdout)["pools"]] == [POOL]


def test_server_status_on_a_pipe_prints_one_field_a_line_with_the_url_whole(server: Server) -> None:
    done = server.sky("server", "status")
    assert done.returncode == 0, done.stderr
    header, *records = done.stdout.splitlines()
    assert columns_of(header) == ["field", "value"]
    fields = dict(columns_of(record) for record in records)
    assert (fields["url"], fields["pid"], fields["pools"]) == (server.url, str(server.pid), "1")


def test_compute_view_once_on_a_pipe_prints_its_tables_an_empty_line_apart(server: Server) -> None:
    done = server.sky("compute", "view", POOL, "--once")
    assert done.returncode == 0, done.stderr
    pool, *others = done.stdout.rstrip("\n").split("\n\n")
    assert columns_of(pool.splitlines()[1])[:2] == [POOL, "ready"]
    events = others[-1].splitlines()
    assert columns_of(events[0]) == ["time", "event", "details"]
    assert len(events) > 1 and all(len(columns_of(line)) == 3 for line in events)
