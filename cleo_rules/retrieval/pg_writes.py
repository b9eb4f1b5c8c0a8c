"""Writing a tenant's memory in PostgreSQL: adds, deletes, JSON Lines ingest and rebuilds.

Every write is a transaction (one per item, or per ingest batch), so a
process killed mid-ingest loses only the batch in flight; a delete is
committed before it returns, and no later search, from any server, sees the
deleted item.

An ingest into a source with no pieces yet (a new tenant, say) writes
them first and builds the source's HNSW index once at the end, which
pgvector does many times faster than growing the index row by row; an
ingest into a source that has pieces updates its index with each insert.
Until an index exists a search reads the whole table (the same answers,
more slowly); an index missing because an ingest was killed is built by
the next ingest or by the next store opened for writing. Re-ingesting an item with the same content hash changes
nothing, and a malformed line is reported and skipped: the reading and the
checks are the embedded store's (:mod:`~cleo_rules.retrieval.ingest`,
:mod:`~cleo_rules.retrieval.records`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..errors import StoreError
from .base import guarded
from .ingest import IngestReport, ingest_lines, open_lines
from .pg_owners import lock_key
from .pg_schema import EXISTING_SQL, create_index_sql, index_name, insert_messages_sql, insert_piece_sql, upsert_parent_sql
from .pg_tenant import TenantSchema
from .records import PreparedItem
from .tables import TABLES, Source, now

__all__ = ["PgWrites"]

INDEX_BUILD_MEMORY = "256MB"
"""``maintenance_work_mem`` while an HNSW index is built in one go: pgvector builds fastest when the graph fits."""


class PgWrites(TenantSchema):
    """The writing half of :class:`~cleo_rules.retrieval.postgres.PgStore`."""

    def _existing_hashes(self, items: Sequence[PreparedItem]) -> dict[tuple[Source, str], str]:
        ids = {s.value: [item.id for item in items if item.source is s] for s in Source}
        with self._connection() as conn:
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
        self._index_vectors(conn, dim, build=not self._deferring)
        conn.execute(self._sql("UPDATE {s}.meta SET value = %s WHERE key = 'model'"), [name])
        conn.execute(self._sql("UPDATE {s}.meta SET value = %s WHERE key = 'dim'"), [str(dim)])
        self._record_embedding(conn, self.embedder)
        self._remember_model(name, dim)

    def _index_vectors(self, conn, dim: int, *, build: bool = True) -> None:
        """Give the pieces' vectors their length and (with ``build``) an HNSW index each (on empty or re-embedded
        tables)."""
        for table in TABLES.values():
            conn.execute(self._sql(f"DROP INDEX IF EXISTS {{s}}.{index_name(table)}"))
            conn.execute(self._sql(f"ALTER TABLE {{s}}.{table.pieces} ALTER COLUMN embedding TYPE vector({int(dim)})"))
        if build:
            self._build_indexes(conn, list(TABLES.values()))

    def _build_indexes(self, conn, tables) -> None:
        """Inside a transaction: build the HNSW index of each table given, over the rows it holds."""
        conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", [INDEX_BUILD_MEMORY])
        for table in tables:
            conn.execute(self._sql(create_index_sql(table, self.M, self.ef_construction)))

    def _index_state(self, conn) -> tuple[list, list]:
        """The tables whose HNSW index is missing, and the tables with no pieces yet."""
        tables = list(TABLES.values())
        row = conn.execute(self._sql(
            "SELECT " + ", ".join(f"to_regclass(%s) IS NULL, NOT EXISTS (SELECT 1 FROM {{s}}.{t.pieces})"
                                  for t in tables)), [f"{self.q}.{index_name(t)}" for t in tables]).fetchone()
        assert row is not None
        return ([t for t, gone in zip(tables, row[0::2]) if gone],
                [t for t, none in zip(tables, row[1::2]) if none])

    @guarded
    def _ensure_indexes(self) -> float:
        """Build every HNSW index that is missing while the store has vectors; the seconds it took."""
        if self.read_only or self._dim is None:
            return 0.0
        start = time.perf_counter()
        with self._connection() as conn:
            missing, _ = self._index_state(conn)
            if not missing:
                return 0.0
            with conn.transaction():
                # one builder at a time; a second finds the work done
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", [lock_key(self.schema)])
                meta = self._read_meta(conn)
                self._remember_model(meta.get("model"), meta.get("dim"))
                missing, _ = self._index_state(conn)
                if missing and self._dim is not None:
                    self._build_indexes(conn, missing)
        return time.perf_counter() - start

    def _commit(self, todo: Sequence[PreparedItem], vectors: np.ndarray) -> None:
        """Write ``todo`` in one transaction, each source's items in id order; the HNSW indexes follow the inserts
        (or are built at the end of an ingest), so nothing is left to apply."""
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

    @guarded
    def _delete(self, source: Source, id: str) -> bool:
        self._check_writable()
        table = TABLES[source]
        if isinstance(id, str) and "\x00" in id:  # no stored id holds a NUL (no PostgreSQL text can): nothing to delete
            return False
        with self._connection() as conn, conn.transaction():
            # pieces and messages go with their parent (ON DELETE CASCADE), in the same transaction
            gone = conn.execute(self._sql(f"DELETE FROM {{s}}.{table.parent} WHERE id = %s"), [id]).rowcount
        return bool(gone)

    @guarded
    def ingest_jsonl(self, path_or_lines, strict: bool = False, progress=None, *, batch_size: int = 32) -> IngestReport:
        """Ingest JSON Lines, a batch per transaction; see :meth:`MemoryStore.ingest_jsonl
        <cleo_rules.retrieval.store.MemoryStore.ingest_jsonl>` (the same reading, checks and report)."""
        self._check_writable()
        start = time.perf_counter()
        with self._connection() as conn:
            missing, empty = self._index_state(conn)
            for table in empty:  # load the pieces first, index them once at the end
                if table not in missing:
                    conn.execute(self._sql(f"DROP INDEX IF EXISTS {{s}}.{index_name(table)}"))
        lines, name, fh = open_lines(path_or_lines)
        self._deferring = bool(missing or empty)
        try:
            report = ingest_lines(lines, name, prepare=self._prepare, write=self._write,
                                  checkpoint=lambda timings: None, strict=strict, progress=progress,
                                  batch_size=batch_size)
        except BaseException:
            self._deferring = False
            try:
                self._ensure_indexes()  # over what was committed
            except StoreError:
                pass  # the server went away: the next ingest, or the next store opened for writing, builds it
            raise
        finally:
            self._deferring = False
            if fh is not None:
                fh.close()
        indexing = self._ensure_indexes()
        report.timings["index"] = report.timings.get("index", 0.0) + indexing
        report.seconds = time.perf_counter() - start
        return report

    def save(self) -> None:
        """Nothing to save: every write is committed before it returns (here for the embedded store's callers)."""
        self._check_open()

    @guarded
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
                if dim:
                    self._record_embedding(conn, embedder)
            self._remember_model(name if dim else None, dim)
            self._refresh_embedding()
        else:
            with self._connection() as conn:
                for source, table in TABLES.items():
                    (n,) = conn.execute(self._sql(f"SELECT count(*) FROM {{s}}.{table.pieces}")).fetchone() or (0,)
                    counts[source.value] = n
                    if self._dim is not None:
                        conn.execute(self._sql(f"REINDEX INDEX {{s}}.{index_name(table)}"))
        counts["seconds"] = time.perf_counter() - start
        return counts
