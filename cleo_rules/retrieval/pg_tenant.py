"""One tenant's schema in a PostgreSQL database: opening it, its version and migrations, its model.

:class:`TenantSchema` is what every part of :class:`~cleo_rules.retrieval.postgres.PgStore`
stands on: the tenant's connections (from a shared
:class:`~cleo_rules.retrieval.pg_database.Database`), its statements (the
templates of :mod:`~cleo_rules.retrieval.pg_schema` for its schema), the
migrations that create or upgrade its schema, and the model and vector
length its vectors were made with; the embedder and its checks are
:class:`~cleo_rules.retrieval.base.MemoryBase`'s, shared with the embedded
store. Writing is :mod:`~cleo_rules.retrieval.pg_writes`, searching
:mod:`~cleo_rules.retrieval.pg_search`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import LiteralString, cast

import numpy as np
import psycopg

from ..errors import StoreError
from .base import MemoryBase
from .options import StoreOptions
from .pg_database import Database, pg_error
from .pg_owners import OWNER_KEY, legacy_claim, lock_key, refusal
from .pg_schema import PgLocation, check_version, display_url, latest, quote, steps
from .provenance import META_KEYS, EmbeddingCheck, Recorded
from .tables import Source, now

__all__ = ["TenantSchema"]


class TenantSchema(MemoryBase):
    """A tenant's schema and settings; the base of :class:`~cleo_rules.retrieval.postgres.PgStore`."""

    backend_errors = (psycopg.Error,)

    def __init__(self, database: Database, location: PgLocation, embedder, options: StoreOptions, *, read_only: bool,
                 owns_database: bool):
        self.database = database
        self.location = location
        self.schema = location.schema
        self.q = quote(self.schema)
        self.path = str(location)  # the store's location as it may be shown (no password)
        super().__init__(embedder, options, read_only=read_only)
        self._owns_database = owns_database
        self._model: str | None = None
        self._dim: int | None = None
        self._search_sql: dict[tuple[Source, ...], LiteralString] = {}
        self.schema_version = 0
        self._deferring = False  # an ingest builds the HNSW indexes at its end

    def _store_error(self, exc: BaseException) -> StoreError:
        return pg_error(exc, self.location)

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        self._check_open()
        with self.database.connection(self.location) as conn:
            yield conn

    def _sql(self, template: str) -> LiteralString:
        """A statement of :mod:`~cleo_rules.retrieval.pg_schema` for this tenant's schema.

        The templates are this package's constants and the schema name is a
        quoted identifier made from a checked tenant name, so the text is as
        safe as a literal (which is what psycopg's types ask for).
        """
        return cast(LiteralString, template.format(s=self.q))

    # -- the schema, and its version ---------------------------------------

    def _prepare_schema(self, *, create: bool) -> None:
        """Open the tenant's schema (creating or upgrading it), once it is sure to be this tenant's.

        The owner the schema records is checked before anything else is read
        (:mod:`~cleo_rules.retrieval.pg_owners`): another tenant's, or one
        whose owner cannot be told, is refused (E308); one made before owners
        were recorded whose name is this tenant's only gets its record here,
        when the store may write.
        """
        with self._connection() as conn:
            exists = conn.execute("SELECT to_regclass(%s)", [f"{self.q}.meta"]).fetchone()
            if exists is None or exists[0] is None:
                refused = legacy_claim(conn, self.location, self.location.tenant)
                if refused is not None:
                    raise refused
                if not create:
                    raise StoreError(self._no_store_message(), code="E301")
                self._migrate(conn)
            else:
                self._check_owner(conn)
                meta = self._read_meta(conn)
                version = check_version(meta.get("schema_version"), self.location, read_only=not create)
                if version < latest() and not self.read_only:  # read-only: it reads as it is (check_version)
                    self._migrate(conn)
            meta = self._read_meta(conn)
            self._check_owner(conn, meta)  # as created or migrated, perhaps by another process meanwhile
        self.schema_version = int(meta["schema_version"])
        self._remember_model(meta.get("model"), meta.get("dim"))

    def _check_owner(self, conn, meta: dict | None = None) -> None:
        """Refuse the schema unless it is this tenant's; record the tenant where none is and the store may write."""
        recorded = (meta if meta is not None else self._owner_row(conn)).get(OWNER_KEY)
        refused = refusal(self.location, self.schema, self.location.tenant, recorded)
        if refused is not None:
            raise refused
        if recorded is None and meta is None and not self.read_only:
            with conn.transaction():  # the name says whose it is: record it, once
                conn.execute(self._sql("INSERT INTO {s}.meta (key, value) VALUES (%s, %s) ON CONFLICT (key) "
                                       "DO NOTHING"), [OWNER_KEY, self.location.tenant])
                self._check_owner(conn, self._owner_row(conn))

    def _owner_row(self, conn) -> dict:
        row = conn.execute(self._sql("SELECT value FROM {s}.meta WHERE key = %s"), [OWNER_KEY]).fetchone()
        return {OWNER_KEY: row[0]} if row is not None else {}

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
        key = [lock_key(self.schema)]
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
                        ("model", None), ("dim", None), (OWNER_KEY, self.location.tenant)]
                with conn.cursor() as cur:
                    cur.executemany(self._sql("INSERT INTO {s}.meta (key, value) VALUES (%s, %s)"), rows)
            else:
                conn.execute(self._sql("UPDATE {s}.meta SET value = %s WHERE key = 'schema_version'"),
                             [str(latest())])

    def _remember_model(self, model, dim) -> None:
        self._model = model or None
        self._dim = int(dim) if dim else None

    # -- what made the vectors (provenance.py) ------------------------------

    def _stored_model(self) -> tuple[str | None, int | None]:
        return self._model, self._dim

    def _embedding_check(self) -> EmbeddingCheck:
        """What the store records of the embedder that made its vectors, read now."""
        keys = ("model", *META_KEYS)
        with self._connection() as conn:
            meta = dict(conn.execute(self._sql("SELECT key, value FROM {s}.meta WHERE key = ANY(%s)"),
                                     [list(keys)]).fetchall())
        return EmbeddingCheck(self.location, Recorded.from_meta(meta), db=display_url(self.location.as_url()))

    def _record_embedding(self, conn, embedder) -> None:
        """Inside the caller's transaction: record ``embedder``'s backend, model hash, runtime and probe vector."""
        rows = self._embedding_rows(embedder)
        with conn.cursor() as cur:
            cur.executemany(self._sql("INSERT INTO {s}.meta (key, value) VALUES (%s, %s) "
                                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value"), rows)

    def _sample_piece(self) -> tuple[str, np.ndarray] | None:
        """The text and stored vector of the first snippet (or passage), None while there is none."""
        with self._connection() as conn:
            for table in ("snippets", "passages"):
                row = conn.execute(self._sql(f"SELECT text, embedding FROM {{s}}.{table} ORDER BY label LIMIT 1")
                                   ).fetchone()
                if row is not None:
                    return row[0], np.asarray(row[1], dtype=np.float32)
        return None
