"""The memory store: SQLite for everything, hnswlib for speed.

One directory holds the whole store::

    DIR/memory.db             SQLite (WAL): conversations, messages, snippets,
                              documents, passages, meta; every snippet and
                              passage keeps its embedding as a float32 BLOB
    DIR/snippets.hnsw.json    sidecar of the conversation snippets' hnswlib index,
                              naming its file: DIR/snippets.hnsw.g<16 hex>
    DIR/passages.hnsw.json    sidecar of the document passages' index, naming
                              DIR/passages.hnsw.g<16 hex>
    DIR/index.lock            taken while an index and its sidecar are written

SQLite is the only source of truth; the tables are described in
:mod:`~cleo_rules.retrieval.sqlite_schema`. The indexes are caches, owned by an
:class:`~cleo_rules.retrieval.index_set.IndexSet`: the label of each indexed
vector is the SQLite row id of its snippet or passage, and a damaged or stale
index is rebuilt or caught up, with a :class:`StoreWarning`.

:class:`MemoryStore` is the façade, and implements the
:class:`~cleo_rules.retrieval.memory.Memory` protocol over
:class:`~cleo_rules.retrieval.base.MemoryBase`, which it shares with the
PostgreSQL store (the embedder and its checks, the write preamble, the
checks of every argument). Records are checked
and cut into pieces by :mod:`~cleo_rules.retrieval.records`; JSON Lines are
read by :mod:`~cleo_rules.retrieval.ingest`. Writes commit to SQLite first
(one transaction per item, or per ingest batch) and update the in-memory
index after, so a process killed at any point loses at most the transaction
in flight. Search asks hnswlib for a few more neighbours than needed and
joins them to SQLite in **one** statement (:mod:`~cleo_rules.retrieval.search`;
whatever ``k`` is, and for any number of query vectors), so a label that is no longer in the database can
never surface.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Unpack

import numpy as np
import sqlite_utils

from ..errors import StoreError
from ..memory_backends import MemoryBackend
from ..tenant_names import valid_tenant
from .base import MemoryBase, guarded
from .index_set import IndexSet, StoreWarning, as_blob
from .ingest import IngestReport, ingest_lines, open_lines
from .memory import Item, Result, SearchResponse
from .options import StoreKeywords, StoreOptions
from .provenance import EmbeddingCheck
from .records import PreparedItem, validate_record
from .search import join, nearest
from .sqlite_schema import (
    COUNTS_SQL, DB_FILE, METADATA_BY_ITEM, content_hashes, insert_messages_sql, insert_piece_sql, no_store_message,
    open_database, sqlite_errors, store_error, upsert_parent_sql, write_transaction,
)
from .tables import TABLES, Source, now
from .trace_sinks import SqliteTraces

__all__ = ["BACKEND", "DirectoryTenants", "MemoryStore", "Result", "SearchResponse", "Item", "IngestReport",
           "StoreWarning", "validate_record"]

Pending = tuple[dict[Source, set[int]], dict[Source, dict[int, np.ndarray]], set[Source]]
"""What a commit leaves for the in-memory indexes: labels deleted and added per source, and the sources behind."""


class MemoryStore(MemoryBase):
    """Past conversations and documents, searchable by meaning.

    Open one with :meth:`open`; close it with :meth:`close` (or use it as a
    context manager) so that its indexes are saved.

    >>> store = MemoryStore.open("memory/")                       # doctest: +SKIP
    >>> store.ingest_jsonl("cleo_rules/data/sample_memory.jsonl")  # doctest: +SKIP
    >>> for r in store.search("van insurance", k=3).results:       # doctest: +SKIP
    ...     print(r.score, r.title, r.date)
    """

    backend_errors = (sqlite3.Error,)

    def __init__(self, path: Path, db: sqlite_utils.Database, embedder, options: StoreOptions):
        self.path = path
        self._db = db
        super().__init__(embedder, options, read_only=options.read_only)
        self.indexes = IndexSet(path, db, M=self.M, ef_construction=self.ef_construction, ef_search=self.ef_search,
                                read_only=self.read_only)
        self._traces: SqliteTraces | None = None

    # -- opening and closing ----------------------------------------------

    @classmethod
    def open(cls, path, embedder=None, *, options: StoreOptions | None = None,
             **keywords: Unpack[StoreKeywords]) -> MemoryStore:
        """Open the store in directory ``path``, creating it when missing (unless ``create=False``).

        ``embedder`` is anything with ``encode(list[str]) -> ndarray`` and a
        ``model_name`` (normally an :class:`~cleo_rules.retrieval.embed.Embedder`);
        when None, one is made from ``model_path`` (default: the bundled
        all-MiniLM-L6-v2) the first time a text has to be encoded. The
        options (:class:`~cleo_rules.retrieval.options.StoreOptions`: the
        model path, ``score_floor``, the chunk settings, the hnswlib
        parameters ``ef_search``, ``M`` and ``ef_construction``, ``create``
        and ``read_only``) come as ``options``, as keywords, or both (the
        keywords win).

        A new store's directory is created mode 0700 and its files 0600.
        With ``create=False`` a directory holding no store raises
        :class:`~cleo_rules.errors.StoreError` ("no memory store in DIR").
        ``read_only=True`` (which implies ``create=False``) opens SQLite
        read-only and never writes a file: a damaged index is rebuilt in
        memory only, and every write method raises StoreError. Opening an
        existing store writes nothing in either mode.

        Raises ``ValueError`` for impossible settings, ``TypeError`` for an unknown one, and
        :class:`~cleo_rules.errors.StoreError` when the directory or its
        database cannot be used. A damaged index is not an error: it is
        rebuilt, with a :class:`StoreWarning`.
        """
        options = StoreOptions.of(options, **keywords)
        path = Path(path).expanduser()
        create = options.writes
        if path.exists() and not path.is_dir():
            raise StoreError(f"memory store must be a directory, but {path} is a file")
        if not path.exists():
            if not create:
                raise StoreError(no_store_message(path), code="E301")
            try:
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create memory store directory {path}: {exc.strerror or exc}") from None
        db = open_database(path, create=create, read_only=options.read_only)
        store = cls(path, db, embedder, options)
        try:
            with sqlite_errors(path):
                store.indexes.open()
                store._refresh_embedding()
            store._embedding.at_open(store.embedder)  # a notice when another backend built it
        except BaseException:
            db.close()
            raise
        return store

    def close(self) -> None:
        """Save any index that changed (unless read-only) and close the database. Safe to call twice."""
        if self._closed:
            return
        try:
            if not self.read_only:
                self.save()
        finally:
            self._closed = True
            self._db.close()

    @property
    def db(self) -> sqlite_utils.Database:
        """The store's SQLite database (other modules may add their own tables)."""
        return self._db

    @property
    def traces(self) -> SqliteTraces:
        """The turn traces, kept in the ``traces`` table of :attr:`db`."""
        if self._traces is None:
            self._traces = SqliteTraces(self._db)
        return self._traces

    def _store_error(self, exc: BaseException) -> StoreError:
        return store_error(exc, self.path)

    def save(self) -> None:
        """Write every index that changed since it was last saved (atomically).

        A failed write (disk full, read-only directory) is not an error: the
        vectors are safe in SQLite and the index is rebuilt from them at the
        next open. It is reported as a :class:`StoreWarning`. A read-only
        store saves nothing.
        """
        self._check_open()
        if not self.read_only:
            with sqlite_errors(self.path):
                self.indexes.save()

    def _after_write(self) -> None:
        if not self.indexes.batching and self.indexes.save_due():
            self.save()

    @guarded
    def rebuild(self, *, reembed: bool = False) -> dict:
        """Rebuild both indexes from the vectors in SQLite and save them.

        With ``reembed=True`` every snippet and passage is encoded again with
        the current embedder first (use this after switching models).
        Returns ``{"conversation": n, "document": n, "seconds": s}``.
        """
        self._check_writable()
        start = time.perf_counter()
        if reembed:
            self.indexes.reembed(self.embedder)
            self._refresh_embedding()
        counts: dict = {source.value: n for source, n in self.indexes.rebuild().items()}
        counts["seconds"] = time.perf_counter() - start
        return counts

    # -- what made the vectors ----------------------------------------------

    def _stored_model(self) -> tuple[str | None, int | None]:
        return self.indexes.model_name, self.indexes.dim

    def _embedding_check(self) -> EmbeddingCheck:
        return EmbeddingCheck(self.path, self.indexes.recorded_embedding())

    def _sample_piece(self) -> tuple[str, np.ndarray] | None:
        return self.indexes.sample_piece()

    # -- writing ----------------------------------------------------------

    def _existing_hashes(self, items: Sequence[PreparedItem]) -> dict[tuple[Source, str], str]:
        return content_hashes(self._db.conn, {s: [item.id for item in items if item.source is s] for s in Source})

    def _commit(self, todo: Sequence[PreparedItem], vectors: np.ndarray) -> Pending:
        """Write ``todo`` in one SQLite transaction; the indexes learn of it after (:meth:`_apply`)."""
        dead: dict[Source, set[int]] = {s: set() for s in Source}
        new: dict[Source, dict[int, np.ndarray]] = {s: {} for s in Source}
        try:
            with write_transaction(self._db):
                self.indexes.set_model(getattr(self.embedder, "model_name", "unknown"), vectors.shape[1],
                                       embedding=self._embedding_rows)
                stamp, row = now(), 0
                for item in todo:
                    row = self._replace(item, stamp, vectors, row, dead[item.source], new[item.source])
                behind = {s for s in {item.source for item in todo} if self.indexes.advance(s)}
        except StoreError:
            self.indexes.forget_model()
            raise
        except sqlite3.Error as exc:
            self.indexes.forget_model()
            raise store_error(exc, self.path) from exc
        except Exception as exc:
            self.indexes.forget_model()
            raise StoreError(f"could not write to memory store {self.path}: {exc}") from exc
        return dead, new, behind

    def _apply(self, pending: Pending) -> None:
        self.indexes.apply(*pending)

    def _replace(self, item: PreparedItem, stamp: str, vectors: np.ndarray, row: int,
                 dead: set[int], new: dict[int, np.ndarray]) -> int:
        """Write one item over its old version (inside the caller's transaction).

        Its pieces take ``vectors[row:]`` in order; returns the next row.
        Labels of the old pieces go to ``dead`` (or leave ``new``, when they
        were added earlier in the same transaction), labels of the new ones
        to ``new``.
        """
        table = TABLES[item.source]
        conn = self._db.conn
        for (label,) in conn.execute(f"SELECT label FROM {table.pieces} WHERE {table.fk} = ?", (item.id,)).fetchall():
            if new.pop(label, None) is None:
                dead.add(label)
        conn.execute(f"DELETE FROM {table.pieces} WHERE {table.fk} = ?", (item.id,))
        conn.execute(upsert_parent_sql(table), (item.id, *table.parent_values(item), item.content_hash, stamp))
        if table.messages:  # a conversation: its messages, replaced whole
            conn.execute(f"DELETE FROM {table.messages} WHERE {table.fk} = ?", (item.id,))
            conn.executemany(insert_messages_sql(table),
                             [(item.id, n, role, text) for n, (role, text) in enumerate(item.messages)])
        for n, piece in enumerate(item.pieces):
            cur = conn.execute(insert_piece_sql(table), (table.item_id(item.id, n), item.id, n, *piece.bounds,
                                                        piece.text, as_blob(vectors[row])))
            assert cur.lastrowid is not None
            new[cur.lastrowid] = vectors[row]
            row += 1
        return row

    @guarded
    def _delete(self, source: Source, id: str) -> bool:
        self._check_writable()
        table = TABLES[source]
        with write_transaction(self._db):
            conn = self._db.conn
            labels = {r[0] for r in conn.execute(f"SELECT label FROM {table.pieces} WHERE {table.fk} = ?", (id,))}
            conn.execute(f"DELETE FROM {table.pieces} WHERE {table.fk} = ?", (id,))
            if table.messages:
                conn.execute(f"DELETE FROM {table.messages} WHERE {table.fk} = ?", (id,))
            gone = conn.execute(f"DELETE FROM {table.parent} WHERE id = ?", (id,)).rowcount
            behind = {source} if gone and self.indexes.advance(source) else set()
        if gone:
            self.indexes.apply({source: labels}, {}, behind)
            self._after_write()
        return bool(gone)

    @guarded
    def ingest_jsonl(self, path_or_lines, strict: bool = False, progress=None, *, batch_size: int = 32) -> IngestReport:
        """Ingest JSON Lines: a file path, or an iterable of lines (str or bytes).

        Each line is one conversation or document (see :func:`validate_record`);
        blank lines are ignored. A malformed line is reported in the result's
        ``problems`` with its line number and skipped; with ``strict=True``
        the whole input is checked first and, if any line is malformed,
        :class:`~cleo_rules.errors.IngestError` is raised and nothing is
        written. Items already stored are never lost: re-ingesting an id
        replaces it only with a well-formed new version.

        Items are embedded and committed ``batch_size`` at a time, so a process
        killed mid-way keeps every batch committed before. ``progress``, if
        given, is called with the number of input lines just handled.
        """
        self._check_writable()
        start = time.perf_counter()
        lines, name, fh = open_lines(path_or_lines)
        try:
            with self.indexes.batch():
                report = ingest_lines(lines, name, prepare=self._prepare, write=self._write,
                                      checkpoint=self._checkpoint, strict=strict, progress=progress,
                                      batch_size=batch_size)
        finally:
            if fh is not None:
                fh.close()
        t = time.perf_counter()
        self.save()
        report.timings["save"] += time.perf_counter() - t
        report.seconds = time.perf_counter() - start
        return report

    def _checkpoint(self, timings: dict) -> None:
        """Between ingest batches: save the indexes when due."""
        if self.indexes.save_due():
            t = time.perf_counter()
            self.save()
            timings["save"] += time.perf_counter() - t

    # -- reading ----------------------------------------------------------

    def _fetch_items(self, wanted: dict[Source, list[str]]):
        return self._db.conn.execute(METADATA_BY_ITEM, tuple(json.dumps(wanted[s]) for s in Source))

    def _search_query(self, query: str, k: int, sources: tuple[Source, ...], floor: float | None):
        self.indexes.refresh()
        if self.indexes.empty(sources):
            return (), {"embed": 0.0, "search": 0.0, "metadata": 0.0}, 0.0
        loading = self._load_model()
        encoding = time.perf_counter()
        vector = self._encode([query])
        embedded = time.perf_counter()
        (response,) = self._nearest(vector, k, sources, floor, [query], refresh=False)
        timings = dict(response.timings)
        timings["embed"] = embedded - encoding
        del timings["total"]  # the search's, from where it began
        return response.results, timings, loading

    def _search_vectors(self, vectors: np.ndarray, k: int, sources: tuple[Source, ...],
                        floor: float | None) -> list[SearchResponse]:
        return self._nearest(vectors, k, sources, floor, None)

    def _nearest(self, vectors: np.ndarray, k: int, sources: tuple[Source, ...], floor: float | None,
                 queries: list[str] | None, refresh: bool = True) -> list[SearchResponse]:
        start = time.perf_counter()
        if refresh:
            self.indexes.refresh()
        floor = self._floor(floor)
        self._check_dim(vectors)
        hits = nearest(self.indexes, vectors, k, sources)
        return join(self._db.conn, hits, len(vectors), k, floor, sources, queries, start, time.perf_counter())

    # -- reporting --------------------------------------------------------

    @guarded
    def stats(self) -> dict:
        """Counts, model, sizes and index state, as a JSON-ready dict."""
        self._check_open()
        counts = self._db.conn.execute(COUNTS_SQL).fetchone()
        generations = self.indexes.db_generations()
        indexes = {table.pieces: self.indexes.describe(source, generations[source]) for source, table in TABLES.items()}
        db_bytes = sum(
            (self.path / f).stat().st_size for f in (DB_FILE, DB_FILE + "-wal") if (self.path / f).exists()
        )
        return self._stats({"path": str(self.path)}, counts, db_bytes, indexes)


# -- the backend of a directory ---------------------------------------------------------------


class DirectoryTenants:
    """The service's tenants under ``--memory DIR``: ``DIR/<tenant>/`` is one :class:`MemoryStore` each.

    A tenant has a store once its database file is there (only an ingest
    creates one); a name that is not a tenant's is a ``ValueError`` before
    any path is made of it.
    """

    def __init__(self, root, options: dict | None = None):
        self.root = Path(root)

    def path(self, name: str) -> Path:
        if not valid_tenant(name):  # the router and the handlers check first; this is the last line
            raise ValueError(f"not a tenant name: {name!r}")
        return self.root / name

    def known(self, name: str) -> bool:
        return False  # a file's presence is cheap to look up: never remembered

    def exists(self, name: str) -> bool:
        return (self.path(name) / DB_FILE).is_file()

    def open(self, name: str, embedder, **options) -> MemoryStore:
        return MemoryStore.open(self.path(name), embedder=embedder, **options)

    def close(self) -> None:
        pass


def _open_directory(location, embedder=None, **options) -> MemoryStore:
    return MemoryStore.open(Path(location), embedder, **options)


#: the embedded store, the backend of a location that is a directory (see :mod:`cleo_rules.memory_backends`)
BACKEND = MemoryBackend("embedded", open=_open_directory, tenants=DirectoryTenants)
