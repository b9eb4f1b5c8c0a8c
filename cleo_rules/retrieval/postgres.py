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
  traces are kept by :class:`~cleo_rules.retrieval.traces.PgTraces`.

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

from .chunk import DEFAULT_CHUNK_MAX_CHARS, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, check_chunking
from .pg_database import Database, guarded
from .pg_schema import COUNTS_SQL, Location, index_name, parse_location
from .pg_search import PgSearch
from .provenance import Recorded
from .encoding import describe_embedder
from .pg_writes import PgWrites
from .traces import PgTraces
from .tables import TABLES, Source

__all__ = ["Database", "PgStore", "PgTraces"]


# -- the store ---------------------------------------------------------------------------------


class PgStore(PgWrites, PgSearch):
    """One tenant's past conversations and documents in PostgreSQL, searchable by meaning.

    Open one with :meth:`open`; close it with :meth:`close` (or use it as a
    context manager). A store is safe to use from several threads: each
    call takes its own pooled connection.
    """

    def __init__(self, database: Database, location: Location, embedder, model_path, **settings):
        super().__init__(database, location, embedder, model_path, **settings)
        self.traces = PgTraces(self)

    # -- opening and closing ----------------------------------------------

    @classmethod
    def open(
        cls,
        url: str,
        embedder=None,
        *,
        tenant: str | None = None,
        database: Database | None = None,
        model_path=None,
        score_floor: float = 0.0,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
        chunk_max_chars: int = DEFAULT_CHUNK_MAX_CHARS,
        ef_search: int = 64,
        M: int = 16,
        ef_construction: int = 200,
        create: bool = True,
        read_only: bool = False,
        timeout: float = 10.0,
        pool_size: int = 4,
    ) -> "PgStore":
        """Open the store of ``tenant`` in the database at ``url``, creating it when missing (unless ``create=False``).

        ``url`` is a ``postgresql://`` URL; its ``?tenant=NAME`` names the
        tenant when ``tenant`` is not given (default ``"default"``).
        ``database`` is a :class:`Database` to share (its pool, ``timeout``
        and ``read_only`` apply); without one the store opens its own with
        ``pool_size`` connections and ``timeout`` seconds, and closes it on
        :meth:`close`. ``embedder``, ``model_path``, ``score_floor`` and the
        chunk settings are those of :meth:`MemoryStore.open
        <cleo_rules.retrieval.store.MemoryStore.open>`; ``M`` and
        ``ef_construction`` shape the HNSW indexes when they are created
        (with the first vector), ``ef_search`` is the search width (raised to
        ``k`` when ``k`` is larger).

        A new tenant's schema is created with every migration; an older one
        is upgraded (never when read-only: that is refused with what to do);
        a newer one is refused. With ``create=False`` a missing tenant raises
        :class:`~cleo_rules.errors.StoreError` (E301). Raises ``ValueError``
        for impossible settings or a malformed tenant name.
        """
        check_chunking(chunk_size, chunk_overlap, chunk_max_chars)
        for name, value, low in (("ef_search", ef_search, 1), ("M", M, 2), ("ef_construction", ef_construction, 4)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer of at least {low}, not {value!r}")
        location = parse_location(url, tenant)
        own = database is None
        if database is None:
            database = Database(location.url, pool_size=pool_size, timeout=timeout, read_only=read_only)
        read_only = read_only or database.read_only
        store = cls(database, location, embedder, model_path, score_floor=score_floor, chunk_size=chunk_size,
                    chunk_overlap=chunk_overlap, chunk_max_chars=chunk_max_chars, ef_search=ef_search, M=M,
                    ef_construction=ef_construction, read_only=read_only, owns_database=own)
        try:
            store._prepare_schema(create=create and not read_only)
            store._ensure_indexes()  # one a killed ingest left unbuilt
            store._read_embedding(notice=True)  # a notice when another backend built it
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

    def __enter__(self) -> "PgStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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
        return {
            "path": str(self.location),
            "backend": "postgres",
            "tenant": self.location.tenant,
            "schema": self.schema,
            "schema_version": int(meta["schema_version"]),
            "conversations": counts[0],
            "messages": counts[1],
            "snippets": counts[2],
            "documents": counts[3],
            "passages": counts[4],
            "model": self._model,
            "dim": self._dim,
            "score_floor": self.score_floor,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "chunk_max_chars": self.chunk_max_chars,
            "read_only": self.read_only,
            "db_bytes": int(db_bytes),
            "indexes": indexes,
            "embedding": {"stored": Recorded.from_meta(meta).describe(), "embedder": describe_embedder(self.embedder)},
        }

