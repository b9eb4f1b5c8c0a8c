"""The memory in PostgreSQL with pgvector: one database for many servers and many tenants.

:class:`PgStore` implements :class:`~cleo_rules.retrieval.memory.Memory`
as :class:`~cleo_rules.retrieval.store.MemoryStore` does, over a database
every assistant server reaches::

    >>> from cleo_rules.retrieval.postgres import PgStore                 # doctest: +SKIP
    >>> with PgStore.open("postgresql://cleo@db.internal/cleo?tenant=acme") as store:
    ...     store.ingest_jsonl("notes.jsonl")
    ...     hits = store.search("which van insurer did we pick?", k=3).results

Each tenant is one schema (:mod:`~cleo_rules.retrieval.pg_schema`: its
tables, migrations and statements); a store reads and writes its own schema
and names no other. Connections come from a
:class:`~cleo_rules.retrieval.pg_database.Database`, a ``psycopg_pool``
pool that the stores of one database share (the service opens one for all
its tenants). A :class:`PgStore` is made of parts, one job each:

* :mod:`~cleo_rules.retrieval.pg_tenant` opens the tenant's schema, creates
  or upgrades it, and holds the model its vectors were made with;
* :mod:`~cleo_rules.retrieval.pg_writes` adds, deletes, ingests and
  rebuilds, a transaction per item or per ingest batch;
* :mod:`~cleo_rules.retrieval.pg_search` gets by ids and searches, two
  statements per search whatever ``k``;
* this module opens and closes stores and reports their stats; the
  traces are kept by :class:`~cleo_rules.retrieval.trace_sinks.PgTraces`.

What the embedded store guarantees holds here too: re-ingesting an item
with the same content hash changes nothing; a malformed line is reported
and skipped; a process killed mid-ingest loses only the batch in flight; a
delete is committed before it returns, and no later search, from any
server, sees the deleted item.

A server that goes away is a :class:`~cleo_rules.errors.StoreError` within
the store's ``timeout`` (E306), never a hang; the pool checks each
connection before handing it out and reconnects by itself, so calls succeed
again once the server is back, without reopening the store. All pooled
connections busy for ``timeout`` seconds is E307.
"""

from __future__ import annotations

import threading
from typing import Unpack

from ..memory_backends import MemoryBackend
from ..tenant_names import valid_tenant
from .base import guarded
from .options import StoreKeywords, StoreOptions
from .pg_database import Database
from .pg_schema import COUNTS_SQL, PgLocation, display_url, index_name, parse_location, schema_name
from .pg_search import PgSearch
from .pg_writes import PgWrites
from .provenance import Recorded
from .tables import TABLES, Source
from .trace_sinks import PgTraces

__all__ = ["BACKEND", "Database", "PgStore", "PgTenants", "PgTraces"]


# -- the store ---------------------------------------------------------------------------------


class PgStore(PgWrites, PgSearch):
    """One tenant's past conversations and documents in PostgreSQL, searchable by meaning.

    Open one with :meth:`open`; close it with :meth:`close` (or use it as a
    context manager). A store is safe to use from several threads: each
    call takes its own pooled connection.
    """

    def __init__(self, database: Database, location: PgLocation, embedder, options: StoreOptions, *, read_only: bool,
                 owns_database: bool):
        super().__init__(database, location, embedder, options, read_only=read_only, owns_database=owns_database)
        self._traces = PgTraces(self)

    @property
    def traces(self) -> PgTraces:
        """The tenant's turn traces, in its schema's ``traces`` table."""
        return self._traces

    # -- opening and closing ----------------------------------------------

    @classmethod
    def open(cls, url: str, embedder=None, *, tenant: str | None = None, database: Database | None = None,
             timeout: float = 10.0, pool_size: int = 4, options: StoreOptions | None = None,
             **keywords: Unpack[StoreKeywords]) -> PgStore:
        """Open the store of ``tenant`` in the database at ``url``, creating it when missing (unless ``create=False``).

        ``url`` is a ``postgresql://`` URL; its ``?tenant=NAME`` names the
        tenant when ``tenant`` is not given (default ``"default"``).
        ``database`` is a :class:`Database` to share (its pool, ``timeout``
        and ``read_only`` apply); without one the store opens its own with
        ``pool_size`` connections and ``timeout`` seconds, and closes it on
        :meth:`close`. ``embedder`` and the options
        (:class:`~cleo_rules.retrieval.options.StoreOptions`, as ``options``,
        keywords or both) are those of :meth:`MemoryStore.open
        <cleo_rules.retrieval.store.MemoryStore.open>`; ``M`` and
        ``ef_construction`` shape the HNSW indexes when they are created
        (with the first vector), ``ef_search`` is the search width (raised to
        ``k`` when ``k`` is larger).

        A new tenant's schema is created with every migration; an older one
        is upgraded (never when read-only: that is refused with what to do);
        a newer one is refused. With ``create=False`` a missing tenant raises
        :class:`~cleo_rules.errors.StoreError` (E301). Raises ``ValueError``
        for impossible settings or a malformed tenant name, ``TypeError`` for
        an unknown setting.
        """
        options = StoreOptions.of(options, **keywords)
        location = parse_location(url, tenant)
        own = database is None
        if database is None:
            database = Database(location.url, pool_size=pool_size, timeout=timeout, read_only=options.read_only)
        read_only = options.read_only or database.read_only
        store = cls(database, location, embedder, options, read_only=read_only, owns_database=own)
        try:
            store._prepare_schema(create=options.create and not read_only)
            store._ensure_indexes()  # one a killed ingest left unbuilt
            store._refresh_embedding()
            store._embedding.at_open(store.embedder)  # a notice when another backend built it
        except BaseException:
            if own:
                database.close()
            raise
        return store

    def close(self) -> None:
        """Close the store (and its own pool, when it opened one). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._owns_database:
            self.database.close()

    # -- reporting --------------------------------------------------------

    @guarded
    def stats(self) -> dict:
        """Counts, model, sizes and index settings, as a JSON-ready dict (the keys of the embedded store's, and more)."""
        self._check_open()
        with self._connection() as conn:
            counts = conn.execute(self._sql(COUNTS_SQL)).fetchone() or (0, 0, 0, 0, 0)
            meta = self._read_meta(conn)
            (db_bytes,) = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                [self.schema]).fetchone() or (0,)
            indexes = {}
            for source, table in TABLES.items():
                row = conn.execute("SELECT pg_relation_size(to_regclass(%s)), "
                                   "(SELECT reloptions FROM pg_class WHERE oid = to_regclass(%s))",
                                   [f"{self.q}.{index_name(table)}"] * 2).fetchone()
                size, options = row if row is not None else (None, None)
                settings = dict(o.split("=", 1) for o in options or ())
                indexes[table.pieces] = {
                    "kind": "hnsw", "elements": counts[2 if source is Source.CONVERSATION else 4],
                    "bytes": int(size or 0), "m": int(settings["m"]) if "m" in settings else None,
                    "ef_construction": int(settings["ef_construction"]) if "ef_construction" in settings else None,
                    "ef_search": self.ef_search,
                }
        self._remember_model(meta.get("model"), meta.get("dim"))
        head = {"path": str(self.location), "backend": "postgres", "tenant": self.location.tenant,
                "schema": self.schema, "schema_version": int(meta["schema_version"])}
        return self._stats(head, counts, db_bytes, indexes, Recorded.from_meta(meta))


# -- the backend of a postgresql:// location ----------------------------------------------------


class PgTenants:
    """The service's tenants under ``--memory postgresql://...``: one schema each, all on one shared pool.

    The pool (``pool_size`` connections, taken out of ``options``) is opened
    on first use, which may come from two threads at once. A tenant whose
    schema was found, or whose store was opened, is remembered: a schema is
    never dropped under the service.
    """

    def __init__(self, url: str, options: dict):
        self.url = str(url)
        self.pool_size = int(options.pop("pool_size", 8))
        self._database: Database | None = None
        self._lock = threading.Lock()
        self._known: set[str] = set()

    def database(self) -> Database:
        """The shared :class:`Database` of every tenant's store."""
        with self._lock:
            if self._database is None:
                self._database = Database(parse_location(self.url).url, pool_size=self.pool_size)
            return self._database

    def known(self, name: str) -> bool:
        return name in self._known

    def exists(self, name: str) -> bool:
        if not valid_tenant(name):
            raise ValueError(f"not a tenant name: {name!r}")
        found = self.database().tenant_exists(schema_name(name))
        if found:
            self._known.add(name)
        return found

    def open(self, name: str, embedder, **options) -> PgStore:
        store = PgStore.open(self.url, embedder=embedder, tenant=name, database=self.database(), **options)
        self._known.add(name)
        return store

    def close(self) -> None:
        if self._database is not None:
            self._database.close()


def _open_url(location, embedder=None, **options) -> PgStore:
    return PgStore.open(location, embedder, **options)


#: the PostgreSQL store, the backend of ``postgresql://`` and ``postgres://`` locations
BACKEND = MemoryBackend("postgresql", open=_open_url, tenants=PgTenants, describe=display_url)
