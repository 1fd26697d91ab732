"""What the pool server holds, kept in SQLite so a restarted server knows what it held.

Three tables: `pools` (each pool's name, the table it was built from with its secrets replaced by
references (`skyward.server.redact`), its state, when it was created and last used), `runs` (each
`sky compute run` and each call of an attached script: script, arguments, node, start, end, exit
code) and `events` (what each pool told: its lifecycle events, not its output lines nor its metric
samples). `runs` and `events` outlive a deleted pool: they are its history (`sky log NAME`).

Two kinds of writes, for two needs:

- **A pool's row is written at once**, before the action it records (a pool is "starting" before
  its machines are asked for), so a server killed at any moment leaves a row for every pool that
  may own machines. These are a few writes per pool's life, on the threads that start and end it.
- **History is buffered** and committed by a writer thread of its own, one transaction every
  `FLUSH_INTERVAL` seconds (sooner past `FLUSH_AT` waiting rows): an event is emitted on the
  pool's own loop, and a synchronous commit there (about 1 ms) would stall every task of a large
  `map` behind the disk. Task events (`TaskStarted`, `TaskCompleted`...) are *counted*, not kept
  one row each: each flush writes one row per pool and kind with the count, the task names and the
  last failure, where a map of 100,000 items would otherwise write 200,000 rows. A server killed
  loses at most the last second of history, never a pool.

**Retention**: each pool keeps its newest `KEEP_RUNS` runs and `KEEP_EVENTS` events; older rows
are deleted as new ones are written. Readers ask for what they show (`LIMIT`): `sky compute view`
reads 20 rows, not the pool's whole history. The standard library's sqlite3 is enough: one
connection, shared by the server's threads under a lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import structlog

#: Seconds between two commits of the buffered history.
FLUSH_INTERVAL = 1.0
#: Buffered rows that make the writer commit before `FLUSH_INTERVAL` is up.
FLUSH_AT = 1000
#: The newest runs kept per pool (`sky log NAME` shows them); older ones are deleted.
KEEP_RUNS = 1000
#: The newest event rows kept per pool; older ones are deleted.
KEEP_EVENTS = 2000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pools (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    state TEXT NOT NULL,
    error TEXT,
    created REAL NOT NULL,
    last_used REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pool TEXT NOT NULL,
    time REAL NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pool TEXT NOT NULL,
    script TEXT NOT NULL,
    argv TEXT NOT NULL,
    node TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    exit_code INTEGER
);
CREATE INDEX IF NOT EXISTS events_by_pool ON events (pool, id);
CREATE INDEX IF NOT EXISTS runs_by_pool ON runs (pool, id);
"""

_RUN_KEYS = ("id", "script", "argv", "node", "started", "ended", "exit_code")


@attrs.frozen
class PoolRow:
    """One pool as stored: `config` is the pool table it was built from, its secrets as references."""

    name: str
    config: dict[str, Any]
    state: str
    error: str | None
    created: float
    last_used: float
    #: The pool's id (`Pool.id`: what its machines, node folders and held record are keyed by);
    #: None in a row of an older server, whose pools were keyed by their name.
    pool_id: str | None = None


@attrs.define
class _Count:
    """The events of one kind a pool emitted since the last flush, as one row."""

    pool: str
    kind: str
    time: float
    count: int = 0
    names: dict[str, int] = attrs.field(factory=dict)
    failed: int = 0
    error: str = ""

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"count": self.count, "names": self.names}
        if self.failed:
            data.update(failed=self.failed, error=self.error)
        return data


class Store:
    """The server's database (`pools.db` in the server's folder)."""

    def __init__(self, path: Path, keep_runs: int = KEEP_RUNS, keep_events: int = KEEP_EVENTS,
                 flush_interval: float = FLUSH_INTERVAL) -> None:
        self.path = path
        self.keep_runs, self.keep_events, self.flush_interval = keep_runs, keep_events, flush_interval
        #: Guards the connection, and a flush whole (its rows leave the buffer and reach the disk in order).
        self._lock = threading.Lock()
        #: Guards the buffer only: held for an append, never across a disk write.
        self._buffer_lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        path.chmod(0o600)
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(pools)")}
        if "pool_id" not in columns:  # a database of an older server
            self._db.execute("ALTER TABLE pools ADD COLUMN pool_id TEXT")
        self._pending: list[tuple[Any, ...]] = []
        self._counts: dict[tuple[str, str], _Count] = {}
        self._touched: dict[str, float] = {}
        self._next_run = self._last_run_id() + 1
        #: Transactions committed so far (`GET /v1/server` shows it).
        self.commits = 0
        self._wake = threading.Event()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="skyward-store", daemon=True)
        self._writer.start()

    def _last_run_id(self) -> int:
        """The highest run id ever given (AUTOINCREMENT's record too: pruned ids are not given again)."""
        row = self._db.execute("SELECT MAX(id) FROM runs").fetchone()
        seq = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'runs'").fetchone()
        return max(int(row[0] or 0), int(seq[0]) if seq else 0)

    def close(self) -> None:
        """Commit what is buffered and close the database."""
        self._closed = True
        self._wake.set()
        self._writer.join(10)
        with self._lock:
            self._flush_locked()
            self._db.close()

    # -- a pool's row: written at once -------------------------------------------------------------

    def _now(self, sql: str, parameters: tuple[Any, ...]) -> None:
        with self._lock:
            self._db.execute(sql, parameters)
            self.commits += 1

    def put_pool(self, name: str, config: dict[str, Any], state: str, pool_id: str | None = None) -> None:
        now = time.time()
        self._now("INSERT OR REPLACE INTO pools (name, config, state, error, created, last_used, pool_id) "
                  "VALUES (?, ?, ?, NULL, ?, ?, ?)", (name, json.dumps(config), state, now, now, pool_id))

    def set_state(self, name: str, state: str, error: str | None = None) -> None:
        self._now("UPDATE pools SET state = ?, error = ? WHERE name = ?", (state, error, name))

    def drop_pool(self, name: str) -> None:
        self._now("DELETE FROM pools WHERE name = ?", (name,))

    def pools(self) -> list[PoolRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT name, config, state, error, created, last_used, pool_id FROM pools ORDER BY created"
            ).fetchall()
        return [PoolRow(r[0], json.loads(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]

    # -- history: buffered, committed by the writer -------------------------------------------------

    def _buffer(self, row: tuple[Any, ...]) -> None:
        with self._buffer_lock:
            self._pending.append(row)
            full = len(self._pending) >= FLUSH_AT
        if full:
            self._wake.set()

    def touch(self, name: str) -> None:
        with self._buffer_lock:
            self._touched[name] = time.time()

    def run_started(self, pool: str, script: str, argv: list[str], node: str) -> int:
        """A run's id, given at once; its row is written with the next flush."""
        with self._buffer_lock:
            run, self._next_run = self._next_run, self._next_run + 1
        self._buffer(("run", run, pool, script, json.dumps(argv), node, time.time()))
        return run

    def run_ended(self, run: int, exit_code: int) -> None:
        self._buffer(("ended", run, time.time(), exit_code))

    def event(self, pool: str, kind: str, data: dict[str, Any]) -> None:
        self._buffer(("event", pool, time.time(), kind, json.dumps(data, default=str)))

    def count(self, pool: str, kind: str, name: str, error: str | None = None) -> None:
        """One more event of `kind` (a task's), kept as a count in the flush's one row for the kind."""
        with self._buffer_lock:
            counted = self._counts.get((pool, kind))
            if counted is None:
                counted = self._counts[(pool, kind)] = _Count(pool, kind, time.time())
                self._pending.append(("count", counted))
            counted.count += 1
            counted.names[name] = counted.names.get(name, 0) + 1
            if error is not None:
                counted.failed += 1
                counted.error = error

    def flush(self) -> None:
        """Commit what is buffered, in one transaction."""
        with self._lock:
            self._flush_locked()

    def _write_loop(self) -> None:
        while not self._closed:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            self.flush()

    def _flush_locked(self) -> None:
        with self._buffer_lock:
            rows, touched = self._pending, self._touched
            self._pending, self._touched, self._counts = [], {}, {}
        if not rows and not touched:
            return
        written: set[str] = set()
        try:
            self._db.execute("BEGIN")
            for row in rows:
                self._apply(row, written)
            self._db.executemany("UPDATE pools SET last_used = ? WHERE name = ?",
                                 [(when, name) for name, when in touched.items()])
            for pool in written:
                self._prune(pool)
            self._db.execute("COMMIT")
        except sqlite3.Error as error:  # history is best effort: these rows are lost, the server goes on
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            structlog.get_logger().warning("skyward.server_history_lost", rows=len(rows), error=str(error))
            return
        self.commits += 1

    def _apply(self, row: tuple[Any, ...], written: set[str]) -> None:
        kind = row[0]
        if kind == "event":
            self._db.execute("INSERT INTO events (pool, time, type, data) VALUES (?, ?, ?, ?)", row[1:])
            written.add(row[1])
        elif kind == "count":
            counted: _Count = row[1]
            self._db.execute("INSERT INTO events (pool, time, type, data) VALUES (?, ?, ?, ?)",
                             (counted.pool, counted.time, counted.kind, json.dumps(counted.data())))
            written.add(counted.pool)
        elif kind == "run":
            self._db.execute(
                "INSERT INTO runs (id, pool, script, argv, node, started) VALUES (?, ?, ?, ?, ?, ?)", row[1:]
            )
            written.add(row[2])
        elif kind == "ended":
            self._db.execute("UPDATE runs SET ended = ?, exit_code = ? WHERE id = ?",
                             (row[2], row[3], row[1]))

    def _prune(self, pool: str) -> None:
        """Keep the pool's newest `keep_events` events and `keep_runs` runs."""
        for table, keep in (("events", self.keep_events), ("runs", self.keep_runs)):
            self._db.execute(
                f"DELETE FROM {table} WHERE pool = ? AND id <= "  # noqa: S608 - table names are ours
                f"(SELECT id FROM {table} WHERE pool = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (pool, pool, keep),
            )

    # -- reading -----------------------------------------------------------------------------------

    def events(self, pool: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The pool's events, oldest first: the newest `limit` of them (all that are kept: None)."""
        rows = self._newest("SELECT id, time, type, data FROM events WHERE pool = ?", pool, limit)
        return [{"time": row[1], "type": row[2], "data": json.loads(row[3])} for row in rows]

    def runs(self, pool: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The pool's runs, oldest first: the newest `limit` of them (all that are kept: None)."""
        select = "SELECT id, script, argv, node, started, ended, exit_code FROM runs WHERE pool = ?"
        rows = self._newest(select, pool, limit)
        return [{**dict(zip(_RUN_KEYS, row, strict=True)), "argv": json.loads(row[2])} for row in rows]

    def _newest(self, select: str, pool: str, limit: int | None) -> list[tuple[Any, ...]]:
        with self._lock:
            self._flush_locked()  # what was buffered is part of the answer
            newest_first = f"{select} ORDER BY id DESC LIMIT ?"
            rows = self._db.execute(newest_first, (pool, -1 if limit is None else limit)).fetchall()
        return rows[::-1]
