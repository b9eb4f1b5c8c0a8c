"""The memory in PostgreSQL with pgvector: one database for many servers and many tenants.

:class:`PgStore` implements :class:`~cleo_rules.retrieval.memory.Memory`
as :class:`~cleo_rules.retrieval.store.MemoryStore` does, over a database
every assistant server reaches::

    >>> from cleo_rules.retrieval.postgres import PgStore                 # doctest: +SKIP
    >>> with PgStore.open("postgresql://cleo@db.internal/cleo?tenant=acme") as store:
    ...     store.ingest_jsonl("notes.jsonl")
    ...     hits = store.search("which van insurer did we pick?", k=3).results

Each tenant is one schema (:mod:`~cleo_rules.retrieval.pg_schema`); a
store reads and writes its own schema and names no other. Connections come
from a :class:`Database`, a ``psycopg_pool`` pool that the stores of one
database share (the service opens one for all its tenants). What the
embedded store guarantees holds here too:

* re-ingesting an item with the same content hash changes nothing; a
  malformed line is reported and skipped (the same
  :mod:`~cleo_rules.retrieval.ingest` and :mod:`~cleo_rules.retrieval.records`);
* every write is a transaction (one per item, or per ingest batch), so a
  process killed mid-ingest loses only the batch in flight; a delete is
  committed before it returns, and no later search, from any server, sees
  the deleted item;
* a search is two statements whatever ``k`` and however many query vectors:
  one sets the HNSW search width for the transaction and reads the model,
  the other finds the nearest pieces of each source through its HNSW index
  and joins their titles, dates and texts in the same statement.

A server that goes away is a :class:`~cleo_rules.errors.StoreError` within
the store's ``timeout`` (E306), never a hang; the pool checks each
connection before handing it out and reconnects by itself, so calls succeed
again once the server is back, without reopening the store. All pooled
connections busy for ``timeout`` seconds is E307.
"""

from __future__ import annotations

import functools
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, LiteralString, TypeVar, cast

import numpy as np
import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import IngestError, StoreError
from ..jsonl import without_lone_surrogates
from ..trace import COLUMNS as TRACE_COLUMNS
from .chunk import DEFAULT_CHUNK_MAX_CHARS, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, check_chunking
from .ingest import IngestReport, ingest_lines, open_lines
from .memory import Item, Result, SearchResponse, check_k, check_sources
from .pg_schema import (
    COUNTS_SQL, EXISTING_SQL, METADATA_BY_ITEM, Location, check_version, create_index_sql, display_url,
    index_name, insert_messages_sql, insert_piece_sql, latest, parse_location, quote, search_sql, steps,
    upsert_parent_sql,
)
from .records import PreparedItem, invalid_argument, prepare, validate_record
from .schema import TABLES, Source, now, source_of_item

__all__ = ["Database", "PgStore", "PgTraces"]

Status = str

MAX_EF_SEARCH = 1000
"""pgvector's upper bound for ``hnsw.ef_search``: an HNSW scan never returns more rows than this."""

_F = TypeVar("_F", bound=Callable)


# -- errors ------------------------------------------------------------------------------------


def pg_error(exc: BaseException, where) -> StoreError:
    """The :class:`~cleo_rules.errors.StoreError` that says what a psycopg error means and what to do."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return StoreError(f"memory store {where} is open read-only ({text}); open it without read_only=True "
                          "to change it", code="E305")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreError(f"memory store {where}: PostgreSQL refused: {text}; grant this role the rights on the "
                          "tenant's schema (see docs/scaling.md)")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"cannot reach the database of memory store {where}: {text}; check that the server is "
                          "running and the URL is right (the store reconnects by itself once it is back)",
                          code="E306")
    return StoreError(f"memory store {where}: PostgreSQL error: {text}")


def _guarded(method: _F) -> _F:
    """Any psycopg error inside the method becomes a :class:`StoreError` that says what to do."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except psycopg.Error as exc:
            raise pg_error(exc, self.location) from exc

    return guarded  # type: ignore[return-value]


# -- the database and its pool -----------------------------------------------------------------


def _configure(conn: psycopg.Connection) -> None:
    """Each new connection learns pgvector's ``vector`` type (one catalogue lookup)."""
    register_vector_info(conn, TypeInfo.fetch(conn, "vector"))


class Database:
    """One PostgreSQL database and a pool of connections to it, shared by the stores (tenants) in it.

    ``url`` is a libpq URL (without ``tenant``). At most ``pool_size``
    connections are open at once; a call waits at most ``timeout`` seconds
    for one, then fails with a :class:`StoreError` (E306 when the server
    cannot be reached, E307 when every connection stayed busy).
    ``read_only`` makes every transaction read-only.

    Opening checks the server at once (a clear error now, not a time-out
    later) and creates the ``vector`` extension when it is missing and the
    role may.
    """

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 10.0, read_only: bool = False):
        if not isinstance(pool_size, int) or isinstance(pool_size, bool) or pool_size < 1:
            raise ValueError(f"pool_size must be a positive integer, not {pool_size!r}")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        self.url = url
        self.where = display_url(url)
        self.pool_size = pool_size
        self.timeout = float(timeout)
        self.read_only = read_only
        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": max(2, math.ceil(self.timeout)),
                                  "application_name": "cleo-rules"}
        if read_only:
            kwargs["options"] = "-c default_transaction_read_only=on"
        self._kwargs = kwargs
        self._check_server()
        self.pool = ConnectionPool(
            url, kwargs=kwargs, min_size=1, max_size=pool_size, timeout=self.timeout, open=False,
            configure=_configure, check=ConnectionPool.check_connection,
            # a connection attempt gives up after the call's timeout, so the next call starts a fresh one at
            # once instead of waiting out a long back-off: calls succeed again soon after the server is back
            reconnect_timeout=max(1.0, self.timeout), name=f"cleo-rules {self.where}",
        )
        self.pool.open(wait=False)
        self._closed = False
        self._lock = threading.Lock()

    def _check_server(self) -> None:
        try:
            with psycopg.connect(self.url, **self._kwargs) as conn:
                if TypeInfo.fetch(conn, "vector") is not None:
                    return
                if self.read_only:
                    raise StoreError(f"the database of memory store {self.where} lacks the vector extension; "
                                     "create it (CREATE EXTENSION vector) or open the store for writing once")
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.Error as exc:
                    raise StoreError(f"the database of memory store {self.where} lacks the vector extension and "
                                     f"this role cannot create it ({' '.join(str(exc).split())}); as the database "
                                     "owner or a superuser run CREATE EXTENSION vector") from None
        except psycopg.Error as exc:
            raise pg_error(exc, self.where) from None

    @contextmanager
    def connection(self, where=None) -> Iterator[psycopg.Connection]:
        """A pooled connection (autocommit: wrap writes in ``conn.transaction()``); psycopg errors become StoreError."""
        where = where if where is not None else self.where
        if self._closed:
            raise StoreError(f"memory store {where} is closed")
        errors_before = self.pool.get_stats().get("connections_errors", 0)
        try:
            with self.pool.connection() as conn:
                yield conn
        except PoolTimeout:
            raise self._timeout_error(where, errors_before) from None
        except psycopg.Error as exc:
            raise pg_error(exc, where) from exc

    def _timeout_error(self, where, errors_before: int) -> StoreError:
        stats = self.pool.get_stats()
        if stats.get("connections_errors", 0) > errors_before or not stats.get("pool_size", 0):
            return StoreError(f"cannot reach the database of memory store {where}: no connection within "
                              f"{self.timeout:g} s; check that the server is running and the URL is right "
                              "(the store reconnects by itself once it is back)", code="E306")
        return StoreError(f"memory store {where} is busy: all {self.pool_size} pooled connections stayed in use "
                          f"for {self.timeout:g} s", code="E307")

    def tenant_exists(self, schema: str) -> bool:
        """Whether ``schema`` holds a store (its ``meta`` table)."""
        with self.connection() as conn:
            row = conn.execute("SELECT to_regclass(%s)", [f"{quote(schema)}.meta"]).fetchone()
        return row is not None and row[0] is not None

    def close(self) -> None:
        """Close every pooled connection. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.pool.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- traces ------------------------------------------------------------------------------------

_TRACE_NAMES = [c for c in TRACE_COLUMNS if c != "id"]


class PgTraces:
    """A tenant's turn traces, in its schema's ``traces`` table (a :class:`~cleo_rules.trace.TraceSink`)."""

    def __init__(self, store: "PgStore"):
        self.store = store

    @property
    def where(self) -> str:
        return str(self.store.location)

    def write(self, row: dict) -> int:
        unknown = set(row) - set(_TRACE_NAMES)
        if unknown:
            raise ValueError(f"unknown trace column(s) {', '.join(sorted(unknown))}")
        names = list(row)  # checked against the known columns above
        sql = self.store._sql(f"INSERT INTO {{s}}.traces ({', '.join(names)}) "
                              f"VALUES ({', '.join(['%s'] * len(names))}) RETURNING id")
        with self.store._connection() as conn:
            (tid,) = conn.execute(sql, [row[n] for n in names]).fetchone() or (None,)
        assert tid is not None
        return int(tid)

    def read(self, *, since: str | None = None, searched_only: bool = False) -> Iterator[dict]:
        where, params = [], []
        if since:
            where.append("time >= %s")
            params.append(since)
        if searched_only:
            where.append("query IS NOT NULL")
        sql = self.store._sql("SELECT * FROM {s}.traces" + (" WHERE " + " AND ".join(where) if where else "")
                              + " ORDER BY id")
        with self.store._connection() as conn:
            cursor = conn.execute(sql, params)
            names = [c.name for c in cursor.description or ()]
            rows = cursor.fetchall()
        for values in rows:
            row = dict(zip(names, values))
            row["results"] = json.loads(row["results"]) if row.get("results") else []
            yield row


# -- the store ---------------------------------------------------------------------------------


class PgStore:
    """One tenant's past conversations and documents in PostgreSQL, searchable by meaning.

    Open one with :meth:`open`; close it with :meth:`close` (or use it as a
    context manager). A store is safe to use from several threads: each
    call takes its own pooled connection.
    """

    def __init__(self, database: Database, location: Location, embedder, model_path, *, score_floor: float,
                 chunk_size: int, chunk_overlap: int, chunk_max_chars: int, ef_search: int, M: int,
                 ef_construction: int, read_only: bool, owns_database: bool):
        self.database = database
        self.location = location
        self.schema = location.schema
        self.q = quote(self.schema)
        self.read_only = read_only
        self.score_floor = float(score_floor)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.chunk_max_chars = chunk_max_chars
        self.ef_search = ef_search
        self.M = M
        self.ef_construction = ef_construction
        self._embedder = embedder
        self._model_path = model_path
        self._owns_database = owns_database
        self._model: str | None = None
        self._dim: int | None = None
        self._closed = False
        self._search_sql: dict[tuple[Source, ...], LiteralString] = {}
        self.traces = PgTraces(self)
        self.schema_version = 0

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

    def __repr__(self) -> str:
        return f"PgStore({str(self.location)!r})"

    @property
    def path(self) -> str:
        """The store's location as it may be shown (no password)."""
        return str(self.location)

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        self._check_open()
        with self.database.connection(self.location) as conn:
            yield conn

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("memory store is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise StoreError(f"memory store {self.location} is open read-only; open it without read_only=True "
                             "to change it", code="E305")

    def _sql(self, template: str) -> LiteralString:
        """A statement of :mod:`~cleo_rules.retrieval.pg_schema` for this tenant's schema.

        The templates are this package's constants and the schema name is a
        quoted identifier made from a checked tenant name, so the text is as
        safe as a literal (which is what psycopg's types ask for).
        """
        return cast(LiteralString, template.format(s=self.q))

    # -- the schema, and its version ---------------------------------------

    def _prepare_schema(self, *, create: bool) -> None:
        with self._connection() as conn:
            exists = conn.execute("SELECT to_regclass(%s)", [f"{self.q}.meta"]).fetchone()
            if exists is None or exists[0] is None:
                if not create:
                    raise StoreError(self._no_store_message(), code="E301")
                self._migrate(conn)
            else:
                meta = self._read_meta(conn)
                version = check_version(meta.get("schema_version"), self.location, read_only=not create)
                if version < latest():
                    self._migrate(conn)
            meta = self._read_meta(conn)
        self.schema_version = int(meta["schema_version"])
        self._remember_model(meta.get("model"), meta.get("dim"))

    def _no_store_message(self) -> str:
        return (f"no memory store in {self.location} (create one with `cleo-rules memory ingest --db URL FILE`, "
                "or give the location of an existing store)")

    def _read_meta(self, conn) -> dict:
        meta = dict(conn.execute(self._sql("SELECT key, value FROM {s}.meta")).fetchall())
        if "schema_version" not in meta:
            raise StoreError(f"memory store {self.location} is damaged: the row 'schema_version' is missing in its "
                             "meta table; restore the database from a backup, or ingest the data again into a "
                             "new store", code="E303")
        return meta

    def _migrate(self, conn) -> None:
        """Create the tenant's schema, or bring it to the latest version, under an advisory lock.

        The lock is the session's, taken before the transaction: a
        transaction that starts after another process's migration committed
        sees its tables (one that started before might not, in the catalogue
        caches), so the second process finds the work done.
        """
        key = [f"cleo-rules:{self.schema}"]
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", key)
        try:
            self._migrate_locked(conn)
        finally:
            try:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", key)
            except psycopg.Error:  # a broken connection took its session lock with it
                pass

    def _migrate_locked(self, conn) -> None:
        with conn.transaction():
            found = conn.execute("SELECT to_regclass(%s)", [f"{self.q}.meta"]).fetchone()
            current = 0
            if found is not None and found[0] is not None:  # someone may have migrated it while we waited
                current = check_version(self._read_meta(conn).get("schema_version"), self.location,
                                        read_only=False)
            else:
                conn.execute(self._sql("CREATE SCHEMA IF NOT EXISTS {s}"))
            for step in steps(current):
                for statement in step.statements:
                    conn.execute(self._sql(statement))
            if current == 0:
                rows = [("schema_version", str(latest())), ("created_at", now()), ("store_id", uuid.uuid4().hex),
                        ("model", None), ("dim", None)]
                with conn.cursor() as cur:
                    cur.executemany(self._sql("INSERT INTO {s}.meta (key, value) VALUES (%s, %s)"), rows)
            else:
                conn.execute(self._sql("UPDATE {s}.meta SET value = %s WHERE key = 'schema_version'"),
                             [str(latest())])

    def _remember_model(self, model, dim) -> None:
        self._model = model or None
        self._dim = int(dim) if dim else None

    # -- embedding --------------------------------------------------------

    @property
    def embedder(self):
        """The embedder, created on first use when none was given."""
        if self._embedder is None:
            from .embed import Embedder

            self._embedder = Embedder(self._model_path)
        return self._embedder

    @property
    def model_name(self) -> str | None:
        """The model that made the stored vectors (None while the store has none)."""
        return self._model

    @property
    def dim(self) -> int | None:
        """Length of the stored vectors (None while the store has none)."""
        return self._dim

    def _check_model(self, embedder, stored: str | None = None) -> None:
        stored = stored if stored is not None else self._model
        name = getattr(embedder, "model_name", None)
        if stored is not None and name is not None and stored != name:
            raise StoreError(
                f"memory store {self.location} holds vectors from model {stored!r}, but the embedder is {name!r}; "
                "open it with the same model or run `cleo-rules memory rebuild --reembed`"
            )

    def _load_model(self) -> float:
        embedder = self.embedder
        if getattr(embedder, "loaded", True):
            return 0.0
        start = time.perf_counter()
        embedder.dim  # loads the weights
        return time.perf_counter() - start

    def _encode(self, texts: list[str]) -> np.ndarray:
        embedder = self.embedder
        self._check_model(embedder)
        vectors = np.ascontiguousarray(embedder.encode(texts), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise StoreError(f"embedder returned an array of shape {vectors.shape} for {len(texts)} texts")
        return vectors

    # -- writing ----------------------------------------------------------

    def _prepare(self, record: dict) -> PreparedItem:
        return prepare(record, self.chunk_size, self.chunk_overlap, self.chunk_max_chars)

    def _existing_hashes(self, conn, items: Sequence[PreparedItem]) -> dict[tuple[Source, str], str]:
        ids = {s.value: [item.id for item in items if item.source is s] for s in Source}
        rows = conn.execute(self._sql(EXISTING_SQL), ids).fetchall()
        return {(Source(source), i): h for source, i, h in rows}

    def _set_model(self, conn, name: str, dim: int) -> None:
        """Inside a write transaction: check (or, on the first vectors, record) the model, and index the pieces."""
        meta = dict(conn.execute(self._sql("SELECT key, value FROM {s}.meta WHERE key IN ('model', 'dim') "
                                           "ORDER BY key FOR UPDATE")).fetchall())
        stored, stored_dim = meta.get("model"), meta.get("dim")
        if stored:
            self._check_model(self.embedder, stored)
            if stored_dim and int(stored_dim) != dim:
                raise StoreError(f"embedder returned vectors of {dim} dimensions; memory store {self.location} "
                                 f"holds vectors of {stored_dim}")
            self._remember_model(stored, stored_dim)
            return
        self._index_vectors(conn, dim)
        conn.execute(self._sql("UPDATE {s}.meta SET value = %s WHERE key = 'model'"), [name])
        conn.execute(self._sql("UPDATE {s}.meta SET value = %s WHERE key = 'dim'"), [str(dim)])
        self._remember_model(name, dim)

    def _index_vectors(self, conn, dim: int) -> None:
        """Give the pieces' vectors their length and an HNSW index each (on empty or re-embedded tables)."""
        for table in TABLES.values():
            conn.execute(self._sql(f"DROP INDEX IF EXISTS {{s}}.{index_name(table)}"))
            conn.execute(self._sql(f"ALTER TABLE {{s}}.{table.pieces} ALTER COLUMN embedding TYPE vector({int(dim)})"))
            conn.execute(self._sql(create_index_sql(table, self.M, self.ef_construction)))

    @_guarded
    def _write(self, items: Sequence[PreparedItem], timings: dict | None = None) -> list[Status]:
        """Store prepared items (ids unique within the call) in one transaction; return each one's status."""
        self._check_writable()
        timings = timings if timings is not None else {}
        t0 = time.perf_counter()
        with self._connection() as conn:
            existing = self._existing_hashes(conn, items)
        statuses: list[Status] = []
        todo: list[PreparedItem] = []
        for item in items:
            old = existing.get(item.key)
            statuses.append("added" if old is None else "unchanged" if old == item.content_hash else "updated")
            if old != item.content_hash:
                todo.append(item)
        t1 = time.perf_counter()
        if not todo:
            timings["sql"] = timings.get("sql", 0.0) + t1 - t0
            return statuses
        loading = self._load_model()
        if loading:
            timings["model_load"] = timings.get("model_load", 0.0) + loading
        t_encode = time.perf_counter()
        vectors = self._encode([piece.text for item in todo for piece in item.pieces])
        t2 = time.perf_counter()
        stamp = now()
        with self._connection() as conn, conn.transaction():
            self._set_model(conn, getattr(self.embedder, "model_name", "unknown"), vectors.shape[1])
            row = 0
            rows: dict[Source, list] = {s: [] for s in Source}
            for item in todo:
                rows[item.source].append((item, row))
                row += len(item.pieces)
            with conn.cursor() as cur:
                for source, group in rows.items():
                    if group:
                        self._replace(cur, TABLES[source], sorted(group, key=lambda g: g[0].id), stamp, vectors)
        t3 = time.perf_counter()
        timings["sql"] = timings.get("sql", 0.0) + (t1 - t0) + (t3 - t2)
        timings["embed"] = timings.get("embed", 0.0) + (t2 - t_encode)
        timings.setdefault("index", 0.0)  # the HNSW index is updated by the inserts themselves
        return statuses

    def _replace(self, cur, table, group: list[tuple[PreparedItem, int]], stamp: str, vectors: np.ndarray) -> None:
        """Write items of one source over their old versions (inside the caller's transaction).

        The parents are upserted first, in id order, which locks their rows:
        a concurrent writer of the same id waits, then replaces these pieces
        in turn. Pieces and messages go in whole, by ``executemany``.
        """
        ids = [item.id for item, _ in group]
        cur.executemany(self._sql(upsert_parent_sql(table)),
                        [(item.id, *table.parent_values(item), item.content_hash, stamp) for item, _ in group])
        cur.execute(self._sql(f"DELETE FROM {{s}}.{table.pieces} WHERE {table.fk} = ANY(%s)"), [ids])
        if table.messages:
            cur.execute(self._sql(f"DELETE FROM {{s}}.{table.messages} WHERE {table.fk} = ANY(%s)"), [ids])
            messages = [(item.id, n, role, text) for item, _ in group for n, (role, text) in enumerate(item.messages)]
            if messages:
                cur.executemany(self._sql(insert_messages_sql(table)), messages)
        pieces = [(table.item_id(item.id, n), item.id, n, *piece.bounds, piece.text, vectors[start + n])
                  for item, start in group for n, piece in enumerate(item.pieces)]
        if pieces:
            cur.executemany(self._sql(insert_piece_sql(table)), pieces)

    @_guarded
    def _add(self, record: dict) -> Status:
        self._check_writable()
        problems = validate_record(record)
        if problems:
            message, described = invalid_argument(record, problems)
            raise IngestError(message, described)
        return self._write([self._prepare(record)])[0]

    def add_conversation(self, id: str, title: str, date: str, messages) -> Status:
        """Store a conversation and its snippets; see :meth:`MemoryStore.add_conversation
        <cleo_rules.retrieval.store.MemoryStore.add_conversation>`."""
        messages = list(messages) if isinstance(messages, (list, tuple)) else messages
        return self._add({"type": "conversation", "id": id, "title": title, "date": date, "messages": messages})

    def add_document(self, id: str, title: str, date: str, text: str) -> Status:
        """Store a document and its passages; re-adding an id replaces it."""
        return self._add({"type": "document", "id": id, "title": title, "date": date, "text": text})

    @_guarded
    def _delete(self, source: Source, id: str) -> bool:
        self._check_writable()
        table = TABLES[source]
        with self._connection() as conn, conn.transaction():
            # pieces and messages go with their parent (ON DELETE CASCADE), in the same transaction
            gone = conn.execute(self._sql(f"DELETE FROM {{s}}.{table.parent} WHERE id = %s"), [id]).rowcount
        return bool(gone)

    def delete_conversation(self, id: str) -> bool:
        """Remove a conversation, its messages and snippets; True if it existed. Searches stop finding it at once."""
        return self._delete(Source.CONVERSATION, id)

    def delete_document(self, id: str) -> bool:
        """Remove a document and its passages; True if it existed."""
        return self._delete(Source.DOCUMENT, id)

    @_guarded
    def ingest_jsonl(self, path_or_lines, strict: bool = False, progress=None, *, batch_size: int = 32) -> IngestReport:
        """Ingest JSON Lines, a batch per transaction; see :meth:`MemoryStore.ingest_jsonl
        <cleo_rules.retrieval.store.MemoryStore.ingest_jsonl>` (the same reading, checks and report)."""
        self._check_writable()
        start = time.perf_counter()
        lines, name, fh = open_lines(path_or_lines)
        try:
            report = ingest_lines(lines, name, prepare=self._prepare, write=self._write,
                                  checkpoint=lambda timings: None, strict=strict, progress=progress,
                                  batch_size=batch_size)
        finally:
            if fh is not None:
                fh.close()
        report.seconds = time.perf_counter() - start
        return report

    def save(self) -> None:
        """Nothing to save: every write is committed before it returns (here for the embedded store's callers)."""
        self._check_open()

    @_guarded
    def rebuild(self, *, reembed: bool = False) -> dict:
        """Rebuild both HNSW indexes (``REINDEX``); with ``reembed=True`` encode every piece again first.

        Re-embedding runs in one transaction: the indexes are dropped, every
        snippet and passage gets the current embedder's vector, the model is
        recorded and the indexes are built again. Returns
        ``{"conversation": n, "document": n, "seconds": s}``.
        """
        self._check_writable()
        start = time.perf_counter()
        counts: dict = {}
        if reembed:
            embedder = self.embedder
            with self._connection() as conn, conn.transaction():
                conn.execute(self._sql("SELECT value FROM {s}.meta WHERE key = 'model' FOR UPDATE"))
                dim = None
                for source, table in TABLES.items():
                    conn.execute(self._sql(f"DROP INDEX IF EXISTS {{s}}.{index_name(table)}"))
                    conn.execute(self._sql(f"ALTER TABLE {{s}}.{table.pieces} ALTER COLUMN embedding TYPE vector"))
                    rows = conn.execute(self._sql(f"SELECT label, text FROM {{s}}.{table.pieces} ORDER BY label")
                                        ).fetchall()
                    counts[source.value] = len(rows)
                    with conn.cursor() as cur:
                        for at in range(0, len(rows), 256):
                            chunk = rows[at:at + 256]
                            vectors = np.ascontiguousarray(embedder.encode([t for _, t in chunk]), dtype=np.float32)
                            dim = vectors.shape[1]
                            cur.executemany(self._sql(f"UPDATE {{s}}.{table.pieces} SET embedding = %s WHERE label = %s"),
                                            [(vectors[i], label) for i, (label, _) in enumerate(chunk)])
                name = getattr(embedder, "model_name", "unknown")
                dim = dim if dim is not None else int(getattr(embedder, "dim", 0) or 0) or None
                if dim is not None:
                    self._index_vectors(conn, dim)
                conn.execute(self._sql("UPDATE {s}.meta SET value = %s WHERE key = 'model'"), [name if dim else None])
                conn.execute(self._sql("UPDATE {s}.meta SET value = %s WHERE key = 'dim'"),
                             [str(dim) if dim else None])
            self._remember_model(name if dim else None, dim)
        else:
            with self._connection() as conn:
                for source, table in TABLES.items():
                    (n,) = conn.execute(self._sql(f"SELECT count(*) FROM {{s}}.{table.pieces}")).fetchone() or (0,)
                    counts[source.value] = n
                    if self._dim is not None:
                        conn.execute(self._sql(f"REINDEX INDEX {{s}}.{index_name(table)}"))
        counts["seconds"] = time.perf_counter() - start
        return counts

    # -- reading ----------------------------------------------------------

    @_guarded
    def get(self, items: Iterable[str]) -> dict[str, Item]:
        """The snippets and passages with these item ids, in the order asked, from one statement.

        Ids that are not in the store (deleted since, or never stored) are left out.
        """
        self._check_open()
        if isinstance(items, (str, bytes)):
            raise TypeError("get() takes an iterable of item ids, not a single string")
        wanted: dict[str, list[str]] = {s.value: [] for s in Source}
        order = list(dict.fromkeys(items))
        for item in order:
            if not isinstance(item, str):
                raise TypeError(f"item ids are strings, not {type(item).__name__}")
            source = source_of_item(item)
            if source is not None:
                wanted[source.value].append(item)
        if not any(wanted.values()):
            return {}
        with self._connection() as conn:
            rows = conn.execute(self._sql(METADATA_BY_ITEM), wanted).fetchall()
        found = {item: Item(source, pid, item, title, date, text) for source, _, item, pid, title, date, text in rows}
        return {item: found[item] for item in order if item in found}

    @_guarded
    def search(self, query: str, k: int = 5, sources: str | Iterable[str] = tuple(Source),
               floor: float | None = None) -> SearchResponse:
        """The ``k`` snippets and passages most similar to ``query``, best first.

        The same arguments, checks and results as :meth:`MemoryStore.search
        <cleo_rules.retrieval.store.MemoryStore.search>`. ``timings["search"]``
        covers the nearest-neighbour scan and the join for title, date and
        text, which is the same statement, so ``timings["metadata"]`` is 0.
        """
        self._check_open()
        if not isinstance(query, str):
            raise TypeError(f"search query must be a non-empty string, not {type(query).__name__}")
        if not query.strip():
            raise ValueError("search query must be a non-empty string")
        query = without_lone_surrogates(query)
        k = check_k(k)
        chosen = check_sources(sources)
        start = time.perf_counter()
        responses, timings = self._search(None, [query], k, chosen, floor)
        timings["total"] = time.perf_counter() - start - timings.get("model_load", 0.0)
        return SearchResponse(query, k, _names(chosen), responses[0].results, timings)

    @_guarded
    def search_vectors(self, vectors, k: int = 5, sources: str | Iterable[str] = tuple(Source),
                       floor: float | None = None):
        """Search with precomputed query vectors: shape ``(dim,)`` gives one response, ``(n, dim)`` a list of n.

        All of them are answered by the same two statements.
        """
        self._check_open()
        k = check_k(k)
        chosen = check_sources(sources)
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim not in (1, 2):
            raise ValueError(f"query vectors must have shape (dim,) or (n, dim), not {array.shape}")
        single = array.ndim == 1
        responses, _ = self._search(array.reshape(1, -1) if single else array, None, k, chosen, floor)
        return responses[0] if single else responses

    def _search(self, vectors: np.ndarray | None, queries: list[str] | None, k: int, sources: tuple[Source, ...],
                floor: float | None) -> tuple[list[SearchResponse], dict]:
        """Answer queries (texts, encoded here, or vectors) with two statements in one transaction."""
        floor = self.score_floor if floor is None else float(floor)
        n = len(queries) if queries is not None else len(vectors) if vectors is not None else 0
        names = _names(sources)
        timings = {"embed": 0.0, "search": 0.0, "metadata": 0.0}
        width = min(MAX_EF_SEARCH, max(self.ef_search, k))
        exact = k > MAX_EF_SEARCH  # an HNSW scan cannot return more than ef_search rows: scan the table instead
        rows = []
        start = time.perf_counter()
        with self._connection() as conn, conn.transaction():
            prelude = conn.execute(self._sql(
                "SELECT set_config('hnsw.ef_search', %s, true), set_config('enable_indexscan', %s, true), "
                "(SELECT value FROM {s}.meta WHERE key = 'model'), (SELECT value FROM {s}.meta WHERE key = 'dim'), "
                "EXISTS (SELECT 1 FROM {s}.snippets), EXISTS (SELECT 1 FROM {s}.passages)"),
                [str(width), "off" if exact else "on"]).fetchone()
            assert prelude is not None
            _, _, model, dim, *present = prelude
            self._remember_model(model, dim)
            has = dict(zip(TABLES, present))
            searched = tuple(s for s in sources if has[s])
            if searched and n:
                if vectors is None:
                    loading = self._load_model()
                    if loading:
                        timings["model_load"] = loading
                    t = time.perf_counter()
                    vectors = self._encode(list(queries or ()))
                    timings["embed"] = time.perf_counter() - t
                if self._dim is not None and vectors.shape[1] != self._dim:
                    raise StoreError(f"query vectors have {vectors.shape[1]} dimensions; the store's have {self._dim}")
                sql = self._search_sql.get(searched)
                if sql is None:
                    sql = self._search_sql[searched] = self._sql(search_sql(searched))
                t = time.perf_counter()
                rows = conn.execute(sql, {"vectors": list(vectors), "k": k}).fetchall()
                timings["search"] = time.perf_counter() - t
        order = {s.value: i for i, s in enumerate(TABLES)}
        found: list[list] = [[] for _ in range(n)]
        for q, source, label, item, pid, title, date, text, distance in rows:
            score = 1.0 - float(distance)
            if score >= floor:
                found[q - 1].append((-score, order[source], label, Result(source, pid, item, title, date, text, score)))
        responses = []
        total = time.perf_counter() - start
        for q in range(n):
            hits = sorted(found[q], key=lambda t: t[:3])[:k]
            responses.append(SearchResponse(queries[q] if queries else None, k, names, tuple(h[3] for h in hits),
                                            {**timings, "total": total}))
        return responses, timings

    # -- reporting --------------------------------------------------------

    @_guarded
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
        }


def _names(sources: Iterable[Source]) -> tuple[str, ...]:
    return tuple(s.value for s in sources)
