"""What the memory store keeps in SQLite: the tables, one description per source, the shared SQL.

There are two sources of memory, :class:`Source`: past **conversations**,
searched as *snippets* (one per exchange), and **documents**, searched as
*passages*. Each source has a parent table (``conversations``,
``documents``) and a table of pieces (``snippets``, ``passages``) whose
``label`` is the piece's label in the source's hnswlib index; conversations
also keep their ``messages``. :data:`TABLES` describes each source's tables
once, and the statements that differ only by source are built from it.

:func:`metadata_sql` is the one statement that joins pieces to their parents
for title, date and text, for any number of pieces of both sources at once:
a search looks its hits up by label, :meth:`MemoryStore.get
<cleo_rules.retrieval.store.MemoryStore.get>` looks pieces up by item id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from datetime import datetime
from pathlib import Path

import sqlite_utils

from ..errors import StoreError
from ..kinds import Source

SCHEMA_VERSION = 1
DB_FILE = "memory.db"
LOCK_FILE = "index.lock"


@dataclass(frozen=True)
class SourceTable:
    """The tables and files of one source.

    ``parent`` holds the conversations or documents (``id`` and
    ``parent_columns``, then ``content_hash`` and ``ingested_at``);
    ``pieces`` their snippets or passages, each pointing at its parent
    through ``fk`` and keeping its place in it in ``bounds`` (the messages a
    snippet covers, the characters a passage covers); ``messages`` is the
    table of a conversation's messages (``None`` for documents). A piece's
    item id is ``"<parent id>#<mark><position>"``.
    """

    source: Source
    parent: str
    pieces: str
    fk: str
    parent_columns: tuple[str, ...]
    bounds: tuple[str, str]
    index_file: str
    mark: str
    messages: str | None = None

    @property
    def label(self) -> str:
        """One piece, in words: ``"snippet"`` or ``"passage"``."""
        return self.pieces[:-1]

    @cached_property
    def parent_values(self) -> attrgetter:
        """``parent_values(item)``: an item's values for ``parent_columns`` (two or more: a tuple)."""
        return attrgetter(*self.parent_columns)

    def item_id(self, parent_id: str, position: int) -> str:
        return f"{parent_id}#{self.mark}{position}"

    @cached_property
    def insert_messages_sql(self) -> str:
        return f"INSERT INTO {self.messages} ({self.fk}, position, role, text) VALUES (?, ?, ?, ?)"

    @cached_property
    def upsert_parent_sql(self) -> str:
        columns = ("id", *self.parent_columns, "content_hash", "ingested_at")
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
        return (
            f"INSERT INTO {self.parent} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT(id) DO UPDATE SET {updates}"
        )

    @cached_property
    def insert_piece_sql(self) -> str:
        columns = ("item", self.fk, "position", *self.bounds, "text", "embedding")
        return f"INSERT INTO {self.pieces} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


TABLES: dict[Source, SourceTable] = {
    Source.CONVERSATION: SourceTable(
        Source.CONVERSATION, "conversations", "snippets", "conversation_id", ("title", "date"),
        ("first_message", "last_message"), "snippets.hnsw", "s", messages="messages",
    ),
    Source.DOCUMENT: SourceTable(
        Source.DOCUMENT, "documents", "passages", "document_id", ("title", "date", "text"),
        ("start_char", "end_char"), "passages.hnsw", "p",
    ),
}

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    date TEXT NOT NULL,            -- when the conversation started (ISO 8601)
    content_hash TEXT NOT NULL,
    ingested_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    position INTEGER NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
);
CREATE TABLE IF NOT EXISTS snippets (
    label INTEGER PRIMARY KEY AUTOINCREMENT,   -- the hnswlib label
    item TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    position INTEGER NOT NULL,
    first_message INTEGER NOT NULL,
    last_message INTEGER NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB NOT NULL                    -- float32, dim * 4 bytes
);
CREATE INDEX IF NOT EXISTS snippets_conversation ON snippets(conversation_id);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    date TEXT NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    ingested_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS passages (
    label INTEGER PRIMARY KEY AUTOINCREMENT,   -- the hnswlib label
    item TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES documents(id),
    position INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB NOT NULL                    -- float32, dim * 4 bytes
);
CREATE INDEX IF NOT EXISTS passages_document ON passages(document_id);
"""


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


_BY_MARK = {t.mark: t.source for t in TABLES.values()}


def source_of_item(item: str) -> Source | None:
    """The source an item id belongs to (``"c1#s0"``: conversation), None when it is no item id."""
    _, sep, tail = item.rpartition("#")
    if not sep or len(tail) < 2 or not (tail[1:].isascii() and tail[1:].isdigit()):
        return None
    return _BY_MARK.get(tail[0])


def now() -> str:
    """The local time, to the second, as ISO 8601 with its offset."""
    return datetime.now().astimezone().isoformat(timespec="seconds")


def open_database(path: Path) -> sqlite_utils.Database:
    """Open (creating when new) the store's database in directory ``path``.

    WAL, a generous busy timeout, the tables above and the ``meta`` rows
    every store has. Raises :class:`~cleo_rules.errors.StoreError` when the
    file is not a usable database or was written by another schema version.
    """
    try:
        db = sqlite_utils.Database(path / DB_FILE)
        db.execute("PRAGMA busy_timeout = 10000")
        db.enable_wal()
        db.execute("PRAGMA synchronous = NORMAL")
        db.executescript(SCHEMA)
    except Exception as exc:  # sqlite3.DatabaseError: file is not a database, ...
        raise StoreError(f"cannot open memory database {path / DB_FILE}: {exc}") from None
    try:
        with db.atomic():
            for key, value in (
                ("schema_version", str(SCHEMA_VERSION)),
                ("created_at", now()),
                *((f"generation:{s.value}", "0") for s in Source),
                ("store_id", uuid.uuid4().hex),
            ):
                db.conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        version = int(db.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"memory store {path} has schema version {version}; this cleo-rules reads version {SCHEMA_VERSION}"
            )
    except BaseException:
        db.close()
        raise
    return db
