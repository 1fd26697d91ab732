"""The server's database (skyward/server/store.py): history buffered and committed in batches, task
events counted, reads limited to what they show, and each pool's history kept to its newest rows."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyward.server.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A store whose writer never flushes by itself: the tests say when."""
    opened = Store(tmp_path / "pools.db", flush_interval=3600)
    try:
        yield opened
    finally:
        opened.close()


def test_a_thousand_events_are_one_commit(store: Store) -> None:
    for i in range(1000):
        store.count("p", "TaskStarted", "train")
        store.event("p", "NodeReady", {"node": i})
    assert store.commits == 0  # nothing written on the emitting thread
    store.flush()
    assert store.commits == 1


def test_task_events_are_counted_in_one_row_per_kind(store: Store) -> None:
    store.event("p", "ClusterReady", {"nodes": 1})
    for i in range(2000):
        store.count("p", "TaskStarted", "score" if i % 2 else "train")
        store.count("p", "TaskCompleted", "train", error="KeyError: 'x'" if i == 7 else None)
    store.event("p", "ClusterDestroyed", {"reason": "deleted"})
    events = store.events("p")
    assert [e["type"] for e in events] == ["ClusterReady", "TaskStarted", "TaskCompleted", "ClusterDestroyed"]
    assert events[1]["data"] == {"count": 2000, "names": {"train": 1000, "score": 1000}}
    assert events[2]["data"] == {
        "count": 2000, "names": {"train": 2000}, "failed": 1, "error": "KeyError: 'x'"
    }


def test_view_reads_the_newest_rows_with_a_limit(store: Store) -> None:
    for i in range(500):
        store.event("p", "NodeReady", {"node": i})
    store.flush()
    queries: list[str] = []
    store._db.set_trace_callback(queries.append)
    newest = store.events("p", limit=20)
    assert [e["data"]["node"] for e in newest] == list(range(480, 500))
    (select,) = [q for q in queries if q.lstrip().upper().startswith("SELECT")]
    assert "LIMIT 20" in select


def test_each_pool_keeps_its_newest_runs_and_events(tmp_path: Path) -> None:
    store = Store(tmp_path / "pools.db", keep_runs=5, keep_events=3, flush_interval=3600)
    try:
        runs = [store.run_started("a", f"run-{i}.py", [], "head") for i in range(12)]
        store.run_started("b", "other.py", [], "head")
        for i in range(10):
            store.event("a", "NodeReady", {"node": i})
        store.flush()
        assert [r["id"] for r in store.runs("a")] == runs[-5:]
        assert [r["script"] for r in store.runs("b")] == ["other.py"]
        assert [e["data"]["node"] for e in store.events("a")] == [7, 8, 9]
    finally:
        store.close()
    db = sqlite3.connect(tmp_path / "pools.db")
    assert db.execute("SELECT COUNT(*) FROM runs WHERE pool = 'a'").fetchone() == (5,)


def test_a_buffered_run_is_read_back_at_once(store: Store) -> None:
    run = store.run_started("p", "train.py", ["--fast"], "head")
    store.run_ended(run, 3)
    assert [(r["id"], r["argv"], r["exit_code"]) for r in store.runs("p")] == [(run, ["--fast"], 3)]


def test_run_ids_are_not_given_again_after_a_restart(tmp_path: Path) -> None:
    first = Store(tmp_path / "pools.db", keep_runs=1)
    given = [first.run_started("p", "x.py", [], "head") for _ in range(3)]
    first.close()
    second = Store(tmp_path / "pools.db")
    try:
        assert second.run_started("p", "y.py", [], "head") > max(given)
    finally:
        second.close()


def test_a_database_of_an_older_server_keeps_its_pools(tmp_path: Path) -> None:
    path = tmp_path / "pools.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE pools (name TEXT PRIMARY KEY, config TEXT NOT NULL, state TEXT NOT NULL, "
               "error TEXT, created REAL NOT NULL, last_used REAL NOT NULL)")
    db.execute("INSERT INTO pools VALUES ('old', ?, 'ready', NULL, 1, 1)",
               (json.dumps({"provider": "local"}),))
    db.commit()
    db.close()
    store = Store(path)
    try:
        (row,) = store.pools()
        assert (row.name, row.config, row.pool_id) == ("old", {"provider": "local"}, None)
        store.put_pool("new", {}, "starting", pool_id="new-0123abcd")
        assert [r.pool_id for r in store.pools()] == [None, "new-0123abcd"]
    finally:
        store.close()
