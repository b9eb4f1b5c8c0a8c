"""What the PostgreSQL memory keeps: one schema per tenant, its tables, its migrations, its SQL.

A location is a libpq URL, optionally naming the tenant::

    postgresql://cleo@db.internal:5432/cleo?tenant=acme

``tenant`` (default ``"default"``) is taken off before the URL reaches
libpq; every other parameter (``host=/run/postgresql``, ``sslmode=...``)
goes through. Tenant ``acme`` lives in schema ``cleo_acme``
(:func:`~cleo_rules.retrieval.pg_names.schema_name`: no two tenants share
one, however long their names), whose ``meta`` row ``tenant`` records whose
it is (:mod:`~cleo_rules.retrieval.pg_owners`): the same tables as the embedded store's SQLite
database (:data:`~cleo_rules.retrieval.tables.TABLES` describes both), with
each snippet's and passage's vector in a ``vector(dim)`` column under an
HNSW index (``vector_cosine_ops``), and the turn traces beside them.

The schema's version is its ``meta`` row ``schema_version``.
:data:`MIGRATIONS` lists every step from nothing to :data:`SCHEMA_VERSION`;
a new store runs them all, an older one the steps it lacks, and a newer one
is refused (:func:`check_version`).

Nothing here imports psycopg: statements are strings with ``{s}`` for the
quoted schema and psycopg's ``%(name)s`` parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from ..errors import StoreError
from ..kinds import Source
from ..tenant_names import not_a_tenant, valid_tenant
from .pg_names import schema_name
from .tables import TABLES, SourceTable

__all__ = ["DEFAULT_TENANT", "MIGRATIONS", "SCHEMA_VERSION", "Location", "check_version", "display_url",
           "parse_location", "schema_name"]

DEFAULT_TENANT = "default"


@dataclass(frozen=True)
class Location:
    """A parsed store location: the URL handed to libpq, the tenant, and its schema."""

    url: str
    tenant: str

    @property
    def schema(self) -> str:
        return schema_name(self.tenant)

    def as_url(self) -> str:
        """The location as one URL again, ``?tenant=`` included (the password too: not for messages)."""
        parts = urlsplit(self.url)
        query = parse_qsl(parts.query, keep_blank_values=True) + [("tenant", self.tenant)]
        return _join(parts.scheme, parts.netloc, parts.path, urlencode(query, safe="/:"), parts.fragment)

    def __str__(self) -> str:
        shown = display_url(self.url)
        return shown if self.tenant == DEFAULT_TENANT else f"{shown} (tenant {self.tenant})"


def _join(scheme: str, netloc: str, path: str, query: str, fragment: str) -> str:
    """A URL from its parts, keeping ``//`` when the host is empty (``postgresql:///db?host=/run/...``)."""
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")


def parse_location(location: str, tenant: str | None = None) -> Location:
    """Split a ``postgresql://`` location into the libpq URL and the tenant.

    ``tenant`` given here wins over a ``?tenant=`` in the URL. A malformed
    tenant name raises ``ValueError``.
    """
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    named = [v for k, v in query if k == "tenant"]
    rest = [(k, v) for k, v in query if k != "tenant"]
    chosen = tenant if tenant is not None else (named[-1] if named else DEFAULT_TENANT)
    if not valid_tenant(chosen):
        raise ValueError(not_a_tenant(chosen))
    url = _join(parts.scheme, parts.netloc, parts.path, urlencode(rest, safe="/:"), parts.fragment)
    return Location(url, chosen)


def display_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and stats)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        if ":" in credentials:
            credentials = credentials.split(":", 1)[0] + ":***"
        netloc = f"{credentials}@{host}"
    query = [(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return _join(parts.scheme, netloc, parts.path, urlencode(query, safe="/:*"), parts.fragment)


def quote(identifier: str) -> str:
    """A double-quoted SQL identifier."""
    return '"' + identifier.replace('"', '""') + '"'


# -- the tables, and how they came to be --------------------------------------------------------

SCHEMA_VERSION = 2

_V1 = [
    """CREATE TABLE {s}.meta (
        key text PRIMARY KEY,
        value text
    )""",
    """CREATE TABLE {s}.conversations (
        id text PRIMARY KEY,
        title text NOT NULL,
        date text NOT NULL,
        content_hash text NOT NULL,
        ingested_at text NOT NULL
    )""",
    """CREATE TABLE {s}.messages (
        conversation_id text NOT NULL REFERENCES {s}.conversations(id) ON DELETE CASCADE,
        position integer NOT NULL,
        role text NOT NULL,
        text text NOT NULL,
        PRIMARY KEY (conversation_id, position)
    )""",
    """CREATE TABLE {s}.snippets (
        label bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        item text NOT NULL UNIQUE,
        conversation_id text NOT NULL REFERENCES {s}.conversations(id) ON DELETE CASCADE,
        position integer NOT NULL,
        first_message integer NOT NULL,
        last_message integer NOT NULL,
        text text NOT NULL,
        embedding vector NOT NULL
    )""",
    "CREATE INDEX snippets_conversation ON {s}.snippets (conversation_id)",
    """CREATE TABLE {s}.documents (
        id text PRIMARY KEY,
        title text NOT NULL,
        date text NOT NULL,
        text text NOT NULL,
        content_hash text NOT NULL,
        ingested_at text NOT NULL
    )""",
    """CREATE TABLE {s}.passages (
        label bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        item text NOT NULL UNIQUE,
        document_id text NOT NULL REFERENCES {s}.documents(id) ON DELETE CASCADE,
        position integer NOT NULL,
        start_char integer NOT NULL,
        end_char integer NOT NULL,
        text text NOT NULL,
        embedding vector NOT NULL
    )""",
    "CREATE INDEX passages_document ON {s}.passages (document_id)",
    """CREATE TABLE {s}.traces (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        time text NOT NULL,
        message text NOT NULL,
        kind text NOT NULL,
        rule text,
        pack text,
        pack_version text,
        pack_hash text,
        query text,
        anchor text,
        parts text,
        k integer,
        results text,
        n_results integer,
        classify_s double precision,
        embed_s double precision,
        search_s double precision,
        metadata_s double precision,
        context_s double precision,
        note text
    )""",
    "CREATE INDEX traces_time ON {s}.traces (time)",
]


@dataclass(frozen=True)
class Migration:
    """The step that brings a schema from ``version - 1`` to ``version``.

    ``readable_before``: a schema that lacks this step reads as well without it (the step only adds what
    writes use, such as a column of the traces), so a store opened read-only need not be upgraded first.
    """

    version: int
    what: str
    statements: tuple[str, ...]
    readable_before: bool = False


MIGRATIONS: list[Migration] = [
    Migration(1, "the conversations, documents, their pieces, the traces", tuple(_V1)),
    Migration(2, "the traces record the packs the pack is built on",
              ("ALTER TABLE {s}.traces ADD COLUMN IF NOT EXISTS pack_bases text",), readable_before=True),
]
"""Every step from an empty schema to :data:`SCHEMA_VERSION`, in order (step ``n`` makes version ``n``)."""


def steps(current: int, target: int | None = None) -> list[Migration]:
    """The migrations that bring a schema at version ``current`` (0: none yet) to ``target``."""
    target = latest() if target is None else target
    return [m for m in MIGRATIONS if current < m.version <= target]


def latest() -> int:
    return MIGRATIONS[-1].version if MIGRATIONS else 0


def check_version(value, where, *, read_only: bool) -> int:
    """The stored ``schema_version`` as a number, or the StoreError that refuses it.

    A version newer than this code knows is refused; an older one is
    returned for upgrading, unless the store is opened read-only (an upgrade
    writes) and a step it lacks is needed to read it, in which case it is
    refused with what to do (a read-only store whose missing steps are all
    ``readable_before`` is read as it is).
    """
    if not (isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10):
        raise StoreError(f"memory store {where} is damaged: 'schema_version' is {str(value)[:40]!r}, not a whole "
                         "number, in its meta table; restore the database from a backup, or ingest the data again "
                         "into a new store", code="E303")
    version = int(value)
    newest = latest()
    if version > newest:
        raise StoreError(f"memory store {where} has schema version {version}, written by a newer cleo-rules; "
                         f"this one reads versions up to {newest}: upgrade cleo-rules to use it")
    if version < newest and read_only and not all(m.readable_before for m in steps(version, newest)):
        raise StoreError(f"memory store {where} has schema version {version}; this cleo-rules reads version "
                         f"{newest}; open it once for writing to upgrade it (for example `cleo-rules memory "
                         "rebuild --db URL`), then read it")
    return version


# -- statements --------------------------------------------------------------------------------

def upsert_parent_sql(table: SourceTable) -> str:
    columns = ("id", *table.parent_columns, "content_hash", "ingested_at")
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
    return (f"INSERT INTO {{s}}.{table.parent} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))}) "
            f"ON CONFLICT (id) DO UPDATE SET {updates}")


def insert_piece_sql(table: SourceTable) -> str:
    columns = ("item", table.fk, "position", *table.bounds, "text", "embedding")
    return f"INSERT INTO {{s}}.{table.pieces} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})"


def insert_messages_sql(table: SourceTable) -> str:
    return f"INSERT INTO {{s}}.{table.messages} ({table.fk}, position, role, text) VALUES (%s, %s, %s, %s)"


EXISTING_SQL = "\nUNION ALL\n".join(
    f"SELECT '{t.source.value}', id, content_hash FROM {{s}}.{t.parent} WHERE id = ANY(%({t.source.value})s)"
    for t in TABLES.values()
)
"""The content hash of each item already stored, for the ids bound per source (arrays of text)."""

METADATA_BY_ITEM = "\nUNION ALL\n".join(
    f"SELECT '{t.source.value}', x.label, x.item, p.id, p.title, p.date, x.text\n"
    f"  FROM {{s}}.{t.pieces} AS x JOIN {{s}}.{t.parent} AS p ON p.id = x.{t.fk}\n"
    f" WHERE x.item = ANY(%({t.source.value})s)"
    for t in TABLES.values()
)
"""Pieces with their parent's title and date, by item id: ``(source, label, item, id, title, date, text)``."""

COUNTS_SQL = "SELECT " + ", ".join(
    f"(SELECT count(*) FROM {{s}}.{table})" for table in ("conversations", "messages", "snippets", "documents", "passages")
)


def search_sql(sources: Sequence[Source]) -> str:
    """The one statement that answers a search: nearest pieces of each source, joined to their parents.

    ``%(vectors)s`` is an array of query vectors and ``%(k)s`` the number
    of neighbours per source; rows are ``(query number from 1, source,
    label, item, parent id, title, date, text, cosine distance)``. The
    nearest-neighbour scan of each source is its own ``ORDER BY ... LIMIT``
    subquery, so the HNSW index answers it, and the join to the parent is in
    the same statement, so a piece deleted meanwhile can never surface.
    """
    branches = []
    for source in sources:
        t = TABLES[source]
        branches.append(
            f"SELECT '{source.value}' AS source, x.label, x.item, p.id, p.title, p.date, x.text, x.distance\n"
            f"      FROM (SELECT label, item, {t.fk}, text, embedding <=> q.v AS distance\n"
            f"              FROM {{s}}.{t.pieces} ORDER BY embedding <=> q.v LIMIT %(k)s) AS x\n"
            f"      JOIN {{s}}.{t.parent} AS p ON p.id = x.{t.fk}"
        )
    union = "\n    UNION ALL\n    ".join(branches)
    return (f"SELECT q.n, h.source, h.label, h.item, h.id, h.title, h.date, h.text, h.distance\n"
            f"  FROM unnest(%(vectors)s::vector[]) WITH ORDINALITY AS q(v, n)\n"
            f" CROSS JOIN LATERAL (\n    {union}\n  ) AS h")


def index_name(table: SourceTable) -> str:
    return f"{table.pieces}_embedding"


def create_index_sql(table: SourceTable, m: int, ef_construction: int) -> str:
    return (f"CREATE INDEX {index_name(table)} ON {{s}}.{table.pieces} USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})")
