"""What the embedded store keeps in SQLite: the tables, the shared SQL, opening the database, its errors.

The tables are those :data:`~cleo_rules.retrieval.tables.TABLES` describes
for both backends; here each piece's ``label`` is its label in the source's
hnswlib index, and its vector a float32 BLOB. The statements that differ
only by source are built from that description.

:func:`metadata_sql` is the one statement that joins pieces to their parents
for title, date and text, for any number of pieces of both sources at once:
a search looks its hits up by label, :meth:`MemoryStore.get
<cleo_rules.retrieval.store.MemoryStore.get>` looks pieces up by item id.
Every SQLite error becomes a :class:`~cleo_rules.errors.StoreError` that
says what it means and what to do (:func:`store_error`).
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import stat
import uuid
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from ..errors import StoreError
from .tables import SQLITE, TABLES, Source, SourceTable, create_statements, now

SCHEMA_VERSION = 1
DB_FILE = "memory.db"
LOCK_FILE = "index.lock"


SCHEMA = "".join(f"{statement};\n" for statement in [
    "CREATE TABLE IF NOT EXISTS meta (\n    key text PRIMARY KEY,\n    value text NOT NULL\n)",
    *create_statements(SQLITE)])


@functools.cache
def upsert_parent_sql(table: SourceTable) -> str:
    """Insert a conversation or document, or replace the stored one of the same id."""
    columns = ("id", *table.parent_columns, "content_hash", "ingested_at")
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
    return (
        f"INSERT INTO {table.parent} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT(id) DO UPDATE SET {updates}"
    )


@functools.cache
def insert_piece_sql(table: SourceTable) -> str:
    """Insert one snippet or passage with its vector (a BLOB); its label is the new row id."""
    columns = ("item", table.fk, "position", *table.bounds, "text", "embedding")
    return f"INSERT INTO {table.pieces} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


@functools.cache
def insert_messages_sql(table: SourceTable) -> str:
    """Insert one message of a conversation."""
    return f"INSERT INTO {table.messages} ({table.fk}, position, role, text) VALUES (?, ?, ?, ?)"


def metadata_sql(key: str) -> str:
    """The statement that fetches pieces with their parent's title and date.

    Rows are ``(source, label, item, parent id, title, date, text)`` for the
    pieces whose ``key`` (``"label"`` or ``"item"``) is in the JSON array
    bound to the source's parameter: ``?1`` for snippets, ``?2`` for
    passages. One statement, whatever the number of pieces.
    """
    if key not in ("label", "item"):
        raise ValueError(f"pieces are looked up by 'label' or 'item', not {key!r}")
    return "\nUNION ALL\n".join(
        f"SELECT '{t.source.value}', x.label, x.item, p.id, p.title, p.date, x.text\n"
        f"  FROM {t.pieces} AS x JOIN {t.parent} AS p ON p.id = x.{t.fk}\n"
        f" WHERE x.{key} IN (SELECT value FROM json_each(?{n}))"
        for n, t in enumerate(TABLES.values(), 1)
    )


METADATA_BY_LABEL = metadata_sql("label")
METADATA_BY_ITEM = metadata_sql("item")

GENERATIONS_SQL = "SELECT key, value FROM meta WHERE key IN ({})".format(
    ", ".join(f"'generation:{s.value}'" for s in Source)
)

COUNTS_SQL = "SELECT " + ", ".join(
    f"(SELECT count(*) FROM {table})" for table in ("conversations", "messages", "snippets", "documents", "passages")
)


def content_hashes(conn, ids: dict[Source, list[str]]) -> dict[tuple[Source, str], str]:
    """The stored content hash of every item among ``ids`` (item ids by source) that the store holds."""
    found = {}
    for source, table in TABLES.items():
        if ids.get(source):
            rows = conn.execute(
                f"SELECT id, content_hash FROM {table.parent} WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(ids[source]),),
            ).fetchall()
            found.update({(source, i): h for i, h in rows})
    return found


# -- opening, and SQLite's errors in the store's words ----------------------------------------

BUSY_TIMEOUT_MS = 10_000
"""How long a writer waits for another process's write transaction to end."""

READ_BUSY_TIMEOUT_MS = 2_000
"""How long a read-only connection waits (in WAL mode readers wait only while a crashed writer is recovered)."""

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def describe_mode(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words ("a FIFO", "a directory", ...)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def check_regular(path: Path, hint: str = "") -> bool:
    """True when ``path`` is a regular file (symbolic links followed), False when it does not exist.

    Anything else (a directory, a FIFO, a device, a dangling link) raises
    :class:`~cleo_rules.errors.StoreError` (E304) before anything opens it:
    reading a FIFO or ``/dev/zero`` would never end.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise StoreError(f"{path} is a dangling symbolic link, not a regular file{hint}", code="E304") from None
        return False
    except OSError as exc:
        raise StoreError(f"cannot use memory store file {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{path} is {describe_mode(st.st_mode)}, not a regular file{hint}", code="E304")
    return True


def store_error(exc: BaseException, where) -> StoreError:
    """The :class:`~cleo_rules.errors.StoreError` that says what a SQLite error means and what to do."""
    text = str(exc)
    low = text.lower()
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in low or "busy" in low):
        return StoreError(f"memory store {where} is busy: another process holds its database ({text}); "
                          "try again when that process (an ingest, a rebuild) has finished", code="E302")
    if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in low or "not a database" in low
                                                   or "corrupt" in low):
        return StoreError(f"memory store {where} is damaged: SQLite says {text!r} about {DB_FILE}; restore the "
                          "directory from a backup, or ingest the data again into a new store", code="E303")
    if "readonly" in low or "read-only" in low:
        return StoreError(f"cannot write to memory store {where}: {text}; check that the directory and its files "
                          "are writable by this user")
    if "full" in low:
        return StoreError(f"cannot write to memory store {where}: {text}; free some disk space and try again "
                          "(nothing was lost: the transaction in flight was rolled back)")
    return StoreError(f"memory store {where}: SQLite error: {text}")


@contextmanager
def sqlite_errors(where):
    """Turn any ``sqlite3.Error`` raised inside into a :class:`StoreError` (see :func:`store_error`)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise store_error(exc, where) from exc


@contextmanager
def write_transaction(db: sqlite_utils.Database):
    """A write transaction that takes the write lock at once (``BEGIN IMMEDIATE``).

    A deferred ``BEGIN`` that reads first and writes later fails at once,
    whatever the busy timeout, when another process committed in between
    (WAL mode cannot upgrade a stale read snapshot); an immediate one waits
    its turn. Nested inside another transaction it is a savepoint.
    """
    conn = db.conn
    if conn.in_transaction:
        with db.atomic():
            yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


_META_DEFAULTS = ("schema_version", "created_at", *(f"generation:{s.value}" for s in Source), "store_id")
_TABLE_NAMES = ("meta", "conversations", "messages", "snippets", "documents", "passages")


def _create_file(path: Path) -> None:
    """Create an empty file readable and writable by its owner only (SQLite's -wal and -shm follow its mode)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    except FileExistsError:  # another process created the store meanwhile
        return
    except OSError as exc:
        raise StoreError(f"cannot create memory database {path}: {exc.strerror or exc}") from None
    os.close(fd)


def open_database(path: Path, *, create: bool = True, read_only: bool = False) -> sqlite_utils.Database:
    """Open the store's database in directory ``path``.

    ``create`` makes a new store when there is none (tables and ``meta``
    rows, the file created mode 0600); otherwise a directory without one
    raises :class:`~cleo_rules.errors.StoreError` (E301: "no memory store
    in DIR"). ``read_only`` opens SQLite with ``mode=ro``: nothing is ever
    written, not even on close, and readers go on while another process
    writes (WAL). Opening an existing store writes nothing in either mode.

    Raises :class:`~cleo_rules.errors.StoreError` when a file is not a
    regular file (E304), the database is busy (E302), damaged or not a
    database (E303), or was written by another schema version.
    """
    file = path / DB_FILE
    exists = check_regular(file, "; a memory store's database is a regular file")
    for suffix in ("-wal", "-shm"):
        check_regular(path / (DB_FILE + suffix), "; remove it while no process uses the store")
    if not exists:
        if not create or read_only:
            raise StoreError(no_store_message(path), code="E301")
        _create_file(file)
    try:
        with sqlite_errors(path):
            if read_only:
                conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True,
                                       timeout=READ_BUSY_TIMEOUT_MS / 1000)
            else:
                conn = sqlite3.connect(str(file), timeout=BUSY_TIMEOUT_MS / 1000)
    except StoreError as exc:
        raise StoreError(f"cannot open memory database {file}: {exc}", code=exc.code) from None
    db = sqlite_utils.Database(conn)
    try:
        with sqlite_errors(path):
            _prepare(db, path, create=create and not read_only, read_only=read_only)
    except BaseException:
        db.close()
        raise
    return db


def no_store_message(path: Path) -> str:
    return (f"no memory store in {path} (create one with `cleo-rules memory ingest --db {path} FILE`, "
            "or give the directory of an existing store)")


def _prepare(db: sqlite_utils.Database, path: Path, *, create: bool, read_only: bool) -> None:
    conn = db.conn
    conn.execute(f"PRAGMA busy_timeout = {READ_BUSY_TIMEOUT_MS if read_only else BUSY_TIMEOUT_MS}")
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not set(_TABLE_NAMES) <= tables:
        if not create:
            if tables & set(_TABLE_NAMES):
                raise StoreError(f"memory store {path} is damaged: its database lacks the tables "
                                 f"{', '.join(sorted(set(_TABLE_NAMES) - tables))}; restore the directory from a "
                                 "backup, or ingest the data again into a new store", code="E303")
            raise StoreError(no_store_message(path), code="E301")
        db.enable_wal()
        conn.executescript("BEGIN IMMEDIATE;\n" + SCHEMA + "\n".join(
            f"INSERT OR IGNORE INTO meta (key, value) VALUES ('{key}', '{value}');" for key, value in (
                ("schema_version", str(SCHEMA_VERSION)), ("created_at", now()),
                *((f"generation:{s.value}", "0") for s in Source), ("store_id", uuid.uuid4().hex),
            )) + "\nCOMMIT;")
    elif not read_only:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        if str(mode).lower() != "wal":
            db.enable_wal()
    if not read_only:
        conn.execute("PRAGMA synchronous = NORMAL")
    check_meta(dict(conn.execute("SELECT key, value FROM meta").fetchall()), path)


def check_meta(meta: dict, path: Path) -> None:
    """Refuse a store whose ``meta`` rows are missing or not what this version wrote."""

    def damaged(detail: str) -> StoreError:
        return StoreError(f"memory store {path} is damaged: {detail} in its meta table; restore the directory "
                          "from a backup, or ingest the data again into a new store", code="E303")

    for key in _META_DEFAULTS:
        if key not in meta:
            raise damaged(f"the row {key!r} is missing")
    for key in ("schema_version", *(f"generation:{s.value}" for s in Source), "dim"):
        value = meta.get(key)
        if value is None and key == "dim":
            continue
        if not (isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 19):
            raise damaged(f"{key!r} is {str(value)[:40]!r}, not a whole number")
    if int(meta["schema_version"]) != SCHEMA_VERSION:
        raise StoreError(f"memory store {path} has schema version {meta['schema_version']}; "
                         f"this cleo-rules reads version {SCHEMA_VERSION}")
