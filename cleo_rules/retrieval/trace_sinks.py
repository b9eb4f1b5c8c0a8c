"""Where each memory backend keeps its turn traces: one ``traces`` table, written and read by shared SQL.

A trace row is :mod:`cleo_rules.trace`'s (its columns are
:data:`~cleo_rules.trace.COLUMNS`); this module stores it. Both backends
keep it in a table ``traces`` beside the memory, and build their statements
with the same functions, each in its own SQL dialect
(:class:`~cleo_rules.retrieval.tables.Dialect`: how a table is named, how a
parameter is written):

* :func:`insert_sql` writes one row, of known columns only;
* :func:`read_sql` reads rows oldest first, from a time on (``since``) and
  only turns that searched (``searched_only``);
* :func:`decode` gives a row read back as a dict, its ``results`` decoded
  from JSON.

:class:`SqliteTraces` is the embedded store's sink, over its SQLite
database (the table is created on the first write, so a store that never
traces has none); :class:`PgTraces` a PostgreSQL tenant's, in its schema
(created with the schema). Both are :class:`~cleo_rules.trace.TraceSink`\\ s.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..trace import COLUMNS, TABLE
from .sqlite_schema import sqlite_errors
from .tables import POSTGRES, SQLITE, Dialect

if TYPE_CHECKING:
    import sqlite_utils

    from .pg_tenant import TenantSchema

__all__ = ["PgTraces", "SqliteTraces", "decode", "ensure_table", "insert_sql", "read_sql"]

WRITABLE = tuple(c for c in COLUMNS if c != "id")
"""The columns a trace row may give (``id`` is the table's)."""


def insert_sql(dialect: Dialect, names: Sequence[str]) -> str:
    """The statement that inserts one row with columns ``names``; ``ValueError`` for a column no trace has."""
    return _insert_sql(dialect, tuple(names))


@functools.lru_cache(maxsize=64)
def _insert_sql(dialect: Dialect, names: tuple[str, ...]) -> str:  # a tracer writes the same columns every turn
    unknown = set(names) - set(WRITABLE)
    if unknown:
        raise ValueError(f"unknown trace column(s) {', '.join(sorted(unknown))}")
    sql = (f"INSERT INTO {dialect.prefix}{TABLE} ({', '.join(names)}) "  # names: checked against the known columns above
           f"VALUES ({', '.join([dialect.param] * len(names))})")
    return sql + " RETURNING id" if dialect.returning else sql


def read_sql(dialect: Dialect, *, since: str | None = None, searched_only: bool = False) -> tuple[str, list]:
    """``(statement, parameters)`` reading the rows at or after ``since`` (and with a query, if
    ``searched_only``), oldest first."""
    where, params = [], []
    if since:
        where.append(f"time >= {dialect.param}")
        params.append(since)
    if searched_only:
        where.append("query IS NOT NULL")
    sql = f"SELECT * FROM {dialect.prefix}{TABLE}" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
    return sql, params


def decode(names: Sequence[str], values: Sequence) -> dict:
    """One row read back: a dict by column name, with ``results`` and ``pack_bases`` decoded from JSON (``[]``
    when empty, and for a table an earlier version made, which has no ``pack_bases``)."""
    row = dict(zip(names, values))
    row["results"] = json.loads(row["results"]) if row.get("results") else []
    row["pack_bases"] = json.loads(row["pack_bases"]) if row.get("pack_bases") else []
    return row


# -- SQLite ------------------------------------------------------------------------------------


def ensure_table(db: sqlite_utils.Database) -> None:
    """Create the ``traces`` table and its index on ``time`` if they are missing; add columns an older table lacks."""
    table = db.table(TABLE)
    if TABLE not in db.table_names():
        table.create(COLUMNS, pk="id", not_null={"time", "message", "kind"}, if_not_exists=True)
        table.create_index(["time"], if_not_exists=True)
        return
    have = set(table.columns_dict)
    for name, kind in COLUMNS.items():
        if name not in have:  # a store traced by an earlier version
            table.add_column(name, kind)


class SqliteTraces:
    """The ``traces`` table of a SQLite database (the embedded store's), created on the first write."""

    def __init__(self, db: sqlite_utils.Database):
        self.db = db
        self._ready = False

    def write(self, row: dict) -> int:
        sql = insert_sql(SQLITE, list(row))
        try:
            if not self._ready:
                ensure_table(self.db)
                self._ready = True
            with self.db.conn:  # one INSERT: a deferred transaction takes the write lock with it
                cursor = self.db.conn.execute(sql, list(row.values()))
        except BaseException:
            self._ready = False
            raise
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def read(self, *, since: str | None = None, searched_only: bool = False) -> Iterator[dict]:
        with sqlite_errors(self.where):
            if TABLE not in self.db.table_names():
                return
            sql, params = read_sql(SQLITE, since=since, searched_only=searched_only)
            cursor = self.db.conn.execute(sql, params)
            names = [c[0] for c in cursor.description]
            for values in cursor:
                yield decode(names, values)

    @property
    def where(self) -> str:
        """The directory of the database, for messages."""
        try:
            name = self.db.conn.execute("PRAGMA database_list").fetchone()[2]
        except Exception:  # noqa: BLE001 - only a name for a message
            return "the memory store"
        return str(Path(name).parent) if name else "the memory store"


# -- PostgreSQL --------------------------------------------------------------------------------


class PgTraces:
    """A tenant's turn traces, in its schema's ``traces`` table."""

    def __init__(self, store: TenantSchema):
        self.store = store

    @property
    def where(self) -> str:
        return str(self.store.location)

    def write(self, row: dict) -> int:
        names = list(row)
        sql = self.store._sql(insert_sql(POSTGRES, names))
        with self.store._connection() as conn:
            (tid,) = conn.execute(sql, [row[n] for n in names]).fetchone() or (None,)
        assert tid is not None
        return int(tid)

    def read(self, *, since: str | None = None, searched_only: bool = False) -> Iterator[dict]:
        sql, params = read_sql(POSTGRES, since=since, searched_only=searched_only)
        with self.store._connection() as conn:
            cursor = conn.execute(self.store._sql(sql), params)
            names = [c.name for c in cursor.description or ()]
            rows = cursor.fetchall()
        for values in rows:
            yield decode(names, values)
