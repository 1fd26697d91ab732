"""What the pool server holds, kept in SQLite so a restarted server knows what it held.

Three tables: `pools` (each pool's name, the table it was built from, its state, when it was
created and last used), `runs` (each `sky compute run` and each call of an attached script:
script, arguments, node, start, end, exit code) and `events` (what each pool told: its lifecycle
events, not its output lines nor its metric samples). `runs` and `events` outlive a deleted pool:
they are its history (`sky log NAME`). The standard library's sqlite3 is enough for one writer (the
server) and a few rows a minute; one connection is shared by the server's threads under a lock.
A row is written before the action it records (a pool is "starting" before its machines are asked
for), so a server killed at any moment leaves a row for every pool that may own machines.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import attrs

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
"""


@attrs.frozen
class PoolRow:
    """One pool as stored: `config` is the pool table it was built from (see `skyward.server.pools`)."""

    name: str
    config: dict[str, Any]
    state: str
    error: str | None
    created: float
    last_used: float


class Store:
    """The server's database (`pools.db` in the server's folder)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        path.chmod(0o600)
        with self._lock:
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def put_pool(self, name: str, config: dict[str, Any], state: str) -> None:
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO pools (name, config, state, error, created, last_used) "
                "VALUES (?, ?, ?, NULL, ?, ?)",
                (name, json.dumps(config), state, now, now),
            )

    def set_state(self, name: str, state: str, error: str | None = None) -> None:
        with self._lock:
            self._db.execute("UPDATE pools SET state = ?, error = ? WHERE name = ?", (state, error, name))

    def touch(self, name: str) -> None:
        with self._lock:
            self._db.execute("UPDATE pools SET last_used = ? WHERE name = ?", (time.time(), name))

    def drop_pool(self, name: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM pools WHERE name = ?", (name,))

    def pools(self) -> list[PoolRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT name, config, state, error, created, last_used FROM pools ORDER BY created"
            ).fetchall()
        return [PoolRow(r[0], json.loads(r[1]), r[2], r[3], r[4], r[5]) for r in rows]

    def run_started(self, pool: str, script: str, argv: list[str], node: str) -> int:
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO runs (pool, script, argv, node, started) VALUES (?, ?, ?, ?, ?)",
                (pool, script, json.dumps(argv), node, time.time()),
            )
        return int(cursor.lastrowid or 0)

    def run_ended(self, run: int, exit_code: int) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE runs SET ended = ?, exit_code = ? WHERE id = ?", (time.time(), exit_code, run)
            )

    def event(self, pool: str, kind: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO events (pool, time, type, data) VALUES (?, ?, ?, ?)",
                (pool, time.time(), kind, json.dumps(data, default=str)),
            )

    def events(self, pool: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT time, type, data FROM events WHERE pool = ? ORDER BY id", (pool,)
            ).fetchall()
        return [{"time": row[0], "type": row[1], "data": json.loads(row[2])} for row in rows]

    def runs(self, pool: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, script, argv, node, started, ended, exit_code FROM runs "
                "WHERE pool = ? ORDER BY id",
                (pool,),
            ).fetchall()
        keys = ("id", "script", "argv", "node", "started", "ended", "exit_code")
        return [{**dict(zip(keys, row, strict=True)), "argv": json.loads(row[2])} for row in rows]
