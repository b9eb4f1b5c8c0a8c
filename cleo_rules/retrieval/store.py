"""The memory store: SQLite for everything, hnswlib for speed.

One directory holds the whole store::

    DIR/memory.db             SQLite (WAL): conversations, messages, snippets,
                              documents, passages, meta; every snippet and
                              passage keeps its embedding as a float32 BLOB
    DIR/snippets.hnsw(.json)  hnswlib index of conversation snippets + sidecar
    DIR/passages.hnsw(.json)  hnswlib index of document passages + sidecar
    DIR/index.lock            taken while an index and its sidecar are written

SQLite is the only source of truth; the tables are described in
:mod:`~cleo_rules.retrieval.sqlite_schema`. The indexes are caches, owned by an
:class:`~cleo_rules.retrieval.index_set.IndexSet`: the label of each indexed
vector is the SQLite row id of its snippet or passage, and a damaged or stale
index is rebuilt or caught up, with a :class:`StoreWarning`.

:class:`MemoryStore` is the façade, and implements the
:class:`~cleo_rules.retrieval.memory.Memory` protocol. Records are checked
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
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import sqlite_utils

from ..errors import IngestError, StoreError
from ..jsonl import without_lone_surrogates
from .chunk import DEFAULT_CHUNK_MAX_CHARS, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, check_chunking
from .index_set import IndexSet, StoreWarning, as_blob
from .ingest import IngestReport, ingest_lines, open_lines
from .memory import Item, Result, SearchResponse, check_k, check_sources
from .encoding import check_model, describe_embedder, encode, load_model
from .provenance import EmbeddingCheck, Recorded, embedder_provenance, meta_rows, probe_vector
from .records import PreparedItem, invalid_argument, plan_writes, prepare, validate_record
from .sqlite_schema import (
    COUNTS_SQL, DB_FILE, METADATA_BY_ITEM, content_hashes, insert_messages_sql, insert_piece_sql, no_store_message,
    open_database, sqlite_errors, sqlite_guarded, store_error, upsert_parent_sql, write_transaction,
)
from .tables import TABLES, Source, now, source_of_item
from .traces import SqliteTraces
from .search import join, names, nearest

__all__ = ["MemoryStore", "Result", "SearchResponse", "Item", "IngestReport", "StoreWarning", "validate_record"]

Status = str  # "added", "updated" or "unchanged"

class MemoryStore:
    """Past conversations and documents, searchable by meaning.

    Open one with :meth:`open`; close it with :meth:`close` (or use it as a
    context manager) so that its indexes are saved.

    >>> store = MemoryStore.open("memory/")                       # doctest: +SKIP
    >>> store.ingest_jsonl("cleo_rules/data/sample_memory.jsonl")  # doctest: +SKIP
    >>> for r in store.search("van insurance", k=3).results:       # doctest: +SKIP
    ...     print(r.score, r.title, r.date)
    """

    def __init__(self, path: Path, db: sqlite_utils.Database, embedder, model_path, score_floor: float,
                 chunk_size: int, chunk_overlap: int, ef_search: int, M: int, ef_construction: int,
                 read_only: bool = False, chunk_max_chars: int = DEFAULT_CHUNK_MAX_CHARS):
        self.path = path
        self.read_only = read_only
        self.chunk_max_chars = chunk_max_chars
        self._db = db
        self._embedder = embedder
        self._model_path = model_path
        self.score_floor = float(score_floor)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.ef_search = ef_search
        self.M = M
        self.ef_construction = ef_construction
        self.indexes = IndexSet(path, db, M=M, ef_construction=ef_construction, ef_search=ef_search,
                                read_only=read_only)
        self._closed = False
        self._traces: SqliteTraces | None = None
        self._embedding = EmbeddingCheck(path, Recorded.from_meta({}))  # read at open

    # -- opening and closing ----------------------------------------------

    @classmethod
    def open(
        cls,
        path,
        embedder=None,
        *,
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
    ) -> "MemoryStore":
        """Open the store in directory ``path``, creating it when missing (unless ``create=False``).

        ``embedder`` is anything with ``encode(list[str]) -> ndarray`` and a
        ``model_name`` (normally an :class:`~cleo_rules.retrieval.embed.Embedder`);
        when None, one is made from ``model_path`` (default: the bundled
        all-MiniLM-L6-v2) the first time a text has to be encoded.
        ``score_floor`` drops search results whose cosine similarity is
        lower; ``chunk_size`` and ``chunk_overlap`` (in words) and
        ``chunk_max_chars`` (characters) shape new snippets and passages.
        ``ef_search``, ``M`` and ``ef_construction`` are the hnswlib parameters.

        A new store's directory is created mode 0700 and its files 0600.
        With ``create=False`` a directory holding no store raises
        :class:`~cleo_rules.errors.StoreError` ("no memory store in DIR").
        ``read_only=True`` (which implies ``create=False``) opens SQLite
        read-only and never writes a file: a damaged index is rebuilt in
        memory only, and every write method raises StoreError. Opening an
        existing store writes nothing in either mode.

        Raises ``ValueError`` for impossible chunk settings, and
        :class:`~cleo_rules.errors.StoreError` when the directory or its
        database cannot be used. A damaged index is not an error: it is
        rebuilt, with a :class:`StoreWarning`.
        """
        check_chunking(chunk_size, chunk_overlap, chunk_max_chars)
        path = Path(path).expanduser()
        create = create and not read_only
        if path.exists() and not path.is_dir():
            raise StoreError(f"memory store must be a directory, but {path} is a file")
        if not path.exists():
            if not create:
                raise StoreError(no_store_message(path), code="E301")
            try:
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create memory store directory {path}: {exc.strerror or exc}") from None
        db = open_database(path, create=create, read_only=read_only)
        store = cls(path, db, embedder, model_path, score_floor, chunk_size, chunk_overlap, ef_search, M,
                    ef_construction, read_only=read_only, chunk_max_chars=chunk_max_chars)
        try:
            with sqlite_errors(path):
                store.indexes.open()
                store._embedding = EmbeddingCheck(path, store.indexes.recorded_embedding())
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

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.path)!r})"

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

    @property
    def embedder(self):
        """The embedder, created on first use when none was given."""
        if self._embedder is None:
            from .embed import Embedder

            self._embedder = Embedder(self._model_path)
        return self._embedder

    @property
    def model_name(self) -> str | None:
        """The model that made the stored vectors (None while the store is empty)."""
        return self.indexes.model_name

    @property
    def dim(self) -> int | None:
        """Length of the stored vectors (None while the store is empty)."""
        return self.indexes.dim

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("memory store is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise StoreError(f"memory store {self.path} is open read-only; open it without read_only=True "
                             "to change it", code="E305")

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

    @sqlite_guarded
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
            self._embedding = EmbeddingCheck(self.path, self.indexes.recorded_embedding())
        counts: dict = {source.value: n for source, n in self.indexes.rebuild().items()}
        counts["seconds"] = time.perf_counter() - start
        return counts

    # -- embedding --------------------------------------------------------

    def _check_model(self, embedder) -> None:
        check_model(embedder, self.model_name, self.path)

    def _load_model(self) -> float:
        """Load the embedding model if it is not loaded yet; return the seconds spent."""
        return load_model(self.embedder)

    def _encode(self, texts: list[str]) -> np.ndarray:
        self._check_model(self.embedder)
        if self._embedding.recorded.model is None and self.model_name is not None:  # another process wrote
            self._embedding = EmbeddingCheck(self.path, self.indexes.recorded_embedding())
        self._embedding.before_encode(self.embedder, self.indexes.sample_piece)
        return encode(self.embedder, texts)

    def _embedding_rows(self) -> list:
        """The meta rows that record this store's embedder, with its probe vector (encodes the probe)."""
        return meta_rows(embedder_provenance(self.embedder), probe_vector(self.embedder))

    # -- writing ----------------------------------------------------------

    def _prepare(self, record: dict) -> PreparedItem:
        return prepare(record, self.chunk_size, self.chunk_overlap, self.chunk_max_chars)

    def _write(self, items: Sequence[PreparedItem], timings: dict | None = None) -> list[Status]:
        """Store prepared items (ids unique within the call); return each one's status.

        Statuses are ``"added"``, ``"updated"`` or ``"unchanged"``. Embeds the
        changed items in one batch, commits them in one transaction, then
        updates the indexes.
        """
        self._check_writable()
        timings = timings if timings is not None else {}
        t0 = time.perf_counter()
        existing = content_hashes(self._db.conn, {s: [item.id for item in items if item.source is s] for s in Source})
        statuses, todo = plan_writes(items, existing)
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
        dead: dict[Source, set[int]] = {s: set() for s in Source}
        new: dict[Source, dict[int, np.ndarray]] = {s: {} for s in Source}
        behind, recorded = set(), False
        try:
            with write_transaction(self._db):
                recorded = self.indexes.set_model(getattr(self.embedder, "model_name", "unknown"), vectors.shape[1],
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
        if recorded:
            self._embedding = EmbeddingCheck(self.path, self.indexes.recorded_embedding())
        t3 = time.perf_counter()
        self.indexes.apply(dead, new, behind)
        t4 = time.perf_counter()
        timings["sql"] = timings.get("sql", 0.0) + (t1 - t0) + (t3 - t2)
        timings["embed"] = timings.get("embed", 0.0) + (t2 - t_encode)
        timings["index"] = timings.get("index", 0.0) + (t4 - t3)
        return statuses

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

    @sqlite_guarded
    def _add(self, record: dict) -> Status:
        self._check_writable()
        problems = validate_record(record)
        if problems:
            message, described = invalid_argument(record, problems)
            raise IngestError(message, described)
        status = self._write([self._prepare(record)])[0]
        self._after_write()
        return status

    def add_conversation(self, id: str, title: str, date: str, messages) -> Status:
        """Store a conversation (``messages``: ``[{"role", "text"}, ...]``) and its snippets.

        Re-adding an id replaces the old conversation. Returns ``"added"``,
        ``"updated"`` or ``"unchanged"``; raises
        :class:`~cleo_rules.errors.IngestError` when an argument is malformed.
        """
        messages = list(messages) if isinstance(messages, (list, tuple)) else messages
        return self._add({"type": "conversation", "id": id, "title": title, "date": date, "messages": messages})

    def add_document(self, id: str, title: str, date: str, text: str) -> Status:
        """Store a document and its passages; re-adding an id replaces it. See :meth:`add_conversation`."""
        return self._add({"type": "document", "id": id, "title": title, "date": date, "text": text})

    @sqlite_guarded
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

    def delete_conversation(self, id: str) -> bool:
        """Remove a conversation, its messages and snippets; True if it existed.

        Its snippets stop appearing in search results at once.
        """
        return self._delete(Source.CONVERSATION, id)

    def delete_document(self, id: str) -> bool:
        """Remove a document and its passages; True if it existed."""
        return self._delete(Source.DOCUMENT, id)

    @sqlite_guarded
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

    @sqlite_guarded
    def get(self, items: Iterable[str]) -> dict[str, Item]:
        """The snippets and passages with these item ids (:attr:`Result.item`), in the order asked.

        Each comes with its conversation's or document's title and date, all
        from one SQL statement. Ids that are not in the store (deleted since,
        or never stored) are left out.
        """
        self._check_open()
        if isinstance(items, (str, bytes)):
            raise TypeError("get() takes an iterable of item ids, not a single string")
        wanted: dict[Source, list[str]] = {s: [] for s in Source}
        order = list(dict.fromkeys(items))
        for item in order:
            if not isinstance(item, str):
                raise TypeError(f"item ids are strings, not {type(item).__name__}")
            source = source_of_item(item)
            if source is not None:
                wanted[source].append(item)
        if not any(wanted.values()):
            return {}
        rows = self._db.conn.execute(METADATA_BY_ITEM, tuple(json.dumps(wanted[s]) for s in Source))
        found = {item: Item(source, pid, item, title, date, text) for source, _, item, pid, title, date, text in rows}
        return {item: found[item] for item in order if item in found}

    @sqlite_guarded
    def search(self, query: str, k: int = 5, sources: str | Iterable[str] = tuple(Source),
               floor: float | None = None) -> SearchResponse:
        """The ``k`` snippets and passages most similar to ``query``, best first.

        ``sources`` limits the search to ``"conversation"`` snippets and/or
        ``"document"`` passages. Results scoring below ``floor`` (default: the
        store's ``score_floor``) are dropped. Title, date and text of all
        results come from one SQL statement. A query that is not a string, or
        ``k`` that is not an integer, is a ``TypeError``; an empty query,
        ``k < 1`` or an unknown source a ``ValueError``. A lone surrogate in
        the query (not Unicode) is searched as U+FFFD.
        """
        self._check_open()
        if not isinstance(query, str):
            raise TypeError(f"search query must be a non-empty string, not {type(query).__name__}")
        if not query.strip():
            raise ValueError("search query must be a non-empty string")
        query = without_lone_surrogates(query)  # not Unicode: a tokenizer refuses it, a JSON writer too
        k = check_k(k)
        chosen = check_sources(sources)
        start = time.perf_counter()
        self.indexes.refresh()
        if self.indexes.empty(chosen):
            return SearchResponse(query, k, names(chosen), (), {"embed": 0.0, "search": 0.0, "metadata": 0.0,
                                                                 "total": time.perf_counter() - start})
        loading = self._load_model()
        encoding = time.perf_counter()
        vector = self._encode([query])
        embedded = time.perf_counter()
        (response,) = self._search(vector, k, chosen, floor, [query], refresh=False)
        timings = dict(response.timings)
        timings["embed"] = embedded - encoding
        timings["total"] = time.perf_counter() - start - loading
        if loading:
            timings["model_load"] = loading
        return SearchResponse(query, k, names(chosen), response.results, timings)

    @sqlite_guarded
    def search_vectors(self, vectors, k: int = 5, sources: str | Iterable[str] = tuple(Source),
                       floor: float | None = None):
        """Search with precomputed query vectors.

        ``vectors`` of shape ``(dim,)`` gives one :class:`SearchResponse`;
        shape ``(n, dim)`` gives a list of ``n`` of them, and all their
        metadata still comes from a single SQL statement. Any other shape is
        a ``ValueError``.
        """
        self._check_open()
        k = check_k(k)
        chosen = check_sources(sources)
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim not in (1, 2):
            raise ValueError(f"query vectors must have shape (dim,) or (n, dim), not {array.shape}")
        single = array.ndim == 1
        responses = self._search(array.reshape(1, -1) if single else array, k, chosen, floor, None)
        return responses[0] if single else responses

    def _search(self, vectors: np.ndarray, k: int, sources: tuple[Source, ...], floor: float | None,
                queries: list[str] | None, refresh: bool = True) -> list[SearchResponse]:
        start = time.perf_counter()
        if refresh:
            self.indexes.refresh()
        floor = self.score_floor if floor is None else float(floor)
        n = len(vectors)
        dim = self.dim
        if dim is not None and n and vectors.shape[1] != dim:
            raise StoreError(f"query vectors have {vectors.shape[1]} dimensions; the store's have {dim}")
        hits = nearest(self.indexes, vectors, k, sources)
        return join(self._db.conn, hits, n, k, floor, sources, queries, start, time.perf_counter())

    # -- reporting --------------------------------------------------------

    @sqlite_guarded
    def stats(self) -> dict:
        """Counts, model, sizes and index state, as a JSON-ready dict."""
        self._check_open()
        counts = self._db.conn.execute(COUNTS_SQL).fetchone()
        generations = self.indexes.db_generations()
        indexes = {table.pieces: self.indexes.describe(source, generations[source]) for source, table in TABLES.items()}
        db_bytes = sum(
            (self.path / f).stat().st_size for f in (DB_FILE, DB_FILE + "-wal") if (self.path / f).exists()
        )
        return {
            "path": str(self.path),
            "conversations": counts[0],
            "messages": counts[1],
            "snippets": counts[2],
            "documents": counts[3],
            "passages": counts[4],
            "model": self.model_name,
            "dim": self.dim,
            "score_floor": self.score_floor,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "chunk_max_chars": self.chunk_max_chars,
            "read_only": self.read_only,
            "db_bytes": db_bytes,
            "indexes": indexes,
            "embedding": {"stored": self._embedding.recorded.describe(), "embedder": describe_embedder(self.embedder)},
        }
