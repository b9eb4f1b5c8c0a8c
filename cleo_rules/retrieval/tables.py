"""The two sources of memory and their tables, described once for both backends.

There are two sources of memory, :class:`Source`: past **conversations**,
searched as *snippets* (one per exchange), and **documents**, searched as
*passages*. Each source has a parent table (``conversations``,
``documents``) and a table of pieces (``snippets``, ``passages``);
conversations also keep their ``messages``. :data:`TABLES` describes each
source's tables once; the SQLite statements
(:mod:`~cleo_rules.retrieval.sqlite_schema`) and the PostgreSQL ones
(:mod:`~cleo_rules.retrieval.pg_schema`), the tables' own definitions
(:func:`create_statements`, in either :class:`Dialect`) among them, are
built from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from operator import attrgetter

from ..kinds import Source

__all__ = ["POSTGRES", "SQLITE", "TABLES", "Dialect", "Source", "SourceTable", "create_statements", "now", "source_of_item"]


@dataclass(frozen=True)
class SourceTable:
    """The tables and files of one source.

    ``parent`` holds the conversations or documents (``id`` and
    ``parent_columns``, then ``content_hash`` and ``ingested_at``);
    ``pieces`` their snippets or passages, each pointing at its parent
    through ``fk`` and keeping its place in it in ``bounds`` (the messages a
    snippet covers, the characters a passage covers); ``messages`` is the
    table of a conversation's messages (``None`` for documents);
    ``index_file`` the embedded store's hnswlib file of the source. A
    piece's item id is ``"<parent id>#<mark><position>"``.
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



@dataclass(frozen=True)
class Dialect:
    """How one backend's SQL spells what :data:`TABLES` and the traces table leave open.

    ``prefix`` goes before every table's name (PostgreSQL's ``{s}.``, the
    tenant's quoted schema, filled in by the store: :meth:`TenantSchema._sql
    <cleo_rules.retrieval.pg_tenant.TenantSchema._sql>`); ``param`` is how a
    parameter is written; ``returning``: ``INSERT ... RETURNING id`` gives the
    new row's id (else the cursor's ``lastrowid`` does). In a table's
    definition, ``if_not_exists`` follows ``CREATE TABLE`` and ``CREATE
    INDEX``, ``label`` is a piece's label column's type and key, ``vector``
    its embedding's type and ``on_delete`` follows each reference to a parent.
    """

    prefix: str
    param: str
    returning: bool
    if_not_exists: str
    label: str
    vector: str
    on_delete: str


#: the embedded store's: a piece's label is its hnswlib label, its vector float32 (``dim * 4`` bytes)
SQLITE = Dialect(prefix="", param="?", returning=False, if_not_exists="IF NOT EXISTS ",
                 label="INTEGER PRIMARY KEY AUTOINCREMENT", vector="BLOB", on_delete="")
#: PostgreSQL's, one schema per tenant: a piece's vector is pgvector's
POSTGRES = Dialect(prefix="{s}.", param="%s", returning=True, if_not_exists="",
                   label="bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", vector="vector",
                   on_delete=" ON DELETE CASCADE")


def create_statements(dialect: Dialect) -> list[str]:
    """Each source's tables, in order: the parent, its messages (conversations), its pieces and their index."""
    p, exists, out = dialect.prefix, dialect.if_not_exists, []
    for t in TABLES.values():
        refers = f"{t.fk} text NOT NULL REFERENCES {p}{t.parent}(id){dialect.on_delete}"
        out.append(f"CREATE TABLE {exists}{p}{t.parent} (\n    id text PRIMARY KEY,\n"
                   + "".join(f"    {c} text NOT NULL,\n" for c in t.parent_columns)
                   + "    content_hash text NOT NULL,\n    ingested_at text NOT NULL\n)")
        if t.messages is not None:
            out.append(f"CREATE TABLE {exists}{p}{t.messages} (\n    {refers},\n    position integer NOT NULL,\n"
                       f"    role text NOT NULL,\n    text text NOT NULL,\n    PRIMARY KEY ({t.fk}, position)\n)")
        out.append(f"CREATE TABLE {exists}{p}{t.pieces} (\n    label {dialect.label},\n    item text NOT NULL UNIQUE,\n"
                   f"    {refers},\n    position integer NOT NULL,\n"
                   + "".join(f"    {c} integer NOT NULL,\n" for c in t.bounds)
                   + f"    text text NOT NULL,\n    embedding {dialect.vector} NOT NULL\n)")
        out.append(f"CREATE INDEX {exists}{t.pieces}_{t.fk.removesuffix('_id')} ON {p}{t.pieces} ({t.fk})")
    return out


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
