"""The on-disk catalog: every source's last snapshot of offers, in one SQLite file.

`~/.skyward/offers.sqlite3` (under `$SKYWARD_HOME` when set). Each source (provider name and
`key`) has one snapshot: its offers and when they were fetched. A refresh replaces the whole
snapshot in one transaction, so a reader sees the old offers or the new ones, never a mix, and
several processes (two `sky` commands, a pool) may share the file. A failed refresh leaves the
snapshot as it was and records the error beside it.

The file is a cache: a copy with another layout (`user_version`) is dropped and rebuilt.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from skyward.market.offer import Offer
from skyward.home import skyward_home

#: Bumped whenever the tables change; an older file is rebuilt.
SCHEMA_VERSION = 1
#: The columns of an offer, in `Offer`'s field order.
COLUMNS = tuple(f.name for f in attrs.fields(Offer))
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS offers (
    source TEXT NOT NULL,
    {", ".join(f"{c} {'REAL' if c.endswith(('_price', '_gb', '_count')) or c == 'vcpus' else 'TEXT'}"
               for c in COLUMNS)}
);
CREATE INDEX IF NOT EXISTS offers_by_source ON offers (source);
CREATE INDEX IF NOT EXISTS offers_by_accelerator ON offers (accelerator COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS snapshots (
    source TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    fetched_at REAL,
    offers INTEGER NOT NULL DEFAULT 0,
    failed_at REAL,
    error TEXT
);
"""


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """A write transaction that holds the file's write lock from its start (`BEGIN IMMEDIATE`)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def default_path() -> Path:
    return skyward_home() / "offers.sqlite3"


def source_id(provider: str, key: str) -> str:
    """One source's id in the file: its provider and key (`runpod@https://api.runpod.io/graphql`)."""
    return f"{provider.lower()}@{key}"


@attrs.frozen
class Snapshot:
    """What the catalog holds for one source: when its offers were fetched (None: never), how many,
    and the last refresh that failed since (its time and error), if any."""

    source: str
    provider: str
    fetched_at: float | None = None
    offers: int = 0
    failed_at: float | None = None
    error: str | None = None

    def age(self, now: float | None = None) -> float | None:
        return None if self.fetched_at is None else max((now or time.time()) - self.fetched_at, 0.0)


@attrs.define
class Store:
    """The catalog file; each method opens and closes its own connection (cheap, and safe across
    threads and processes)."""

    path: Path = attrs.field(factory=default_path)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every write below takes its own `BEGIN IMMEDIATE` transaction.
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                with _transaction(db):  # one process or thread builds it; the others wait, then see it
                    if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                        db.execute("DROP TABLE IF EXISTS offers")
                        db.execute("DROP TABLE IF EXISTS snapshots")
                        for statement in filter(str.strip, _SCHEMA.split(";")):
                            db.execute(statement)
                        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            yield db
        finally:
            db.close()

    def snapshot(self, provider: str, key: str) -> Snapshot:
        source = source_id(provider, key)
        with self._connect() as db:
            row = db.execute(
                "SELECT source, provider, fetched_at, offers, failed_at, error FROM snapshots "
                "WHERE source = ?",
                (source,),
            ).fetchone()
        return Snapshot(*row) if row else Snapshot(source, provider)

    def replace(self, provider: str, key: str, offers: Iterable[Offer], now: float | None = None) -> int:
        """Make `offers` the source's whole snapshot, fetched `now`; how many there are."""
        source = source_id(provider, key)
        rows = [(source, *(getattr(o, c) for c in COLUMNS)) for o in offers]
        marks = ", ".join("?" for _ in range(len(COLUMNS) + 1))
        with self._connect() as db, _transaction(db):
            db.execute("DELETE FROM offers WHERE source = ?", (source,))
            db.executemany(f"INSERT INTO offers (source, {', '.join(COLUMNS)}) VALUES ({marks})", rows)
            db.execute(
                "INSERT OR REPLACE INTO snapshots (source, provider, fetched_at, offers, failed_at, error) "
                "VALUES (?, ?, ?, ?, NULL, NULL)",
                (source, provider, now if now is not None else time.time(), len(rows)),
            )
        return len(rows)

    def failed(self, provider: str, key: str, error: str, now: float | None = None) -> None:
        """Record a refresh that failed; the offers already there stay."""
        source = source_id(provider, key)
        with self._connect() as db, _transaction(db):
            db.execute(
                "INSERT INTO snapshots (source, provider, failed_at, error) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (source) DO UPDATE SET failed_at = excluded.failed_at, error = excluded.error",
                (source, provider, now if now is not None else time.time(), error),
            )

    def select(self, sql: str, params: Sequence[Any]) -> list[Offer]:
        """Offers of a query over the `offers` table (`query.OfferQuery` writes it)."""
        with self._connect() as db:
            rows = db.execute(sql, tuple(params)).fetchall()
        return [Offer(**dict(zip(COLUMNS, row, strict=True))) for row in rows]

    def scalar(self, sql: str, params: Sequence[Any]) -> Any:
        with self._connect() as db:
            return db.execute(sql, tuple(params)).fetchone()[0]
