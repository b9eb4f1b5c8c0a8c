"""The memory store: SQLite for everything, hnswlib for speed.

One directory holds the whole store::

    DIR/memory.db             SQLite (WAL): conversations, messages, snippets,
                              documents, passages, meta; every snippet and
                              passage keeps its embedding as a float32 BLOB
    DIR/snippets.hnsw(.json)  hnswlib index of conversation snippets + sidecar
    DIR/passages.hnsw(.json)  hnswlib index of document passages + sidecar
    DIR/index.lock            taken while an index and its sidecar are written

SQLite is the only source of truth. The indexes are caches: the label of each
indexed vector is the SQLite row id of its snippet or passage (``label``,
declared ``AUTOINCREMENT`` so an id is never reused), and on opening, each
index is checked against its sidecar and then against the labels in SQLite.
A missing, damaged or foreign index is rebuilt from the stored vectors; one
that is merely behind (a process died before saving it) is caught up; either
way a :class:`StoreWarning` says so, and the store answers as before.

Writes commit to SQLite first (one transaction per item, or per ingest batch)
and update the in-memory index after, so a process killed at any point loses
at most the transaction in flight. Each write bumps a per-source
``generation`` counter in ``meta``; a search compares it with the generation
its index reflects and catches up with changes made by other processes.

Search asks hnswlib for a few more neighbours than needed and joins them to
SQLite in **one** statement (whatever ``k`` is, and for any number of query
vectors), so a label that is no longer in the database can never surface.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import uuid
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import date as _date
from datetime import datetime
from pathlib import Path

import numpy as np
import sqlite_utils

from ..errors import IngestError, Problem, StoreError, UsageError
from .chunk import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, check_chunking, chunk_text, conversation_snippets
from .index import IndexInvalid, VectorIndex, remove_stale_temp_files

SCHEMA_VERSION = 1
DB_FILE = "memory.db"
LOCK_FILE = "index.lock"
SOURCES = ("conversation", "document")


@dataclass(frozen=True)
class _Source:
    name: str  # "conversation" or "document"
    parent: str  # table of conversations or documents
    table: str  # table of snippets or passages
    fk: str  # column of ``table`` holding the parent id
    index_file: str
    mark: str  # item id is "<parent id>#<mark><position>"

    @property
    def label(self) -> str:
        return self.table[:-1]  # "snippet" / "passage"


_SOURCES = {
    "conversation": _Source("conversation", "conversations", "snippets", "conversation_id", "snippets.hnsw", "s"),
    "document": _Source("document", "documents", "passages", "document_id", "passages.hnsw", "p"),
}

_SCHEMA = """
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

# One statement fetches text, title and date for every hit of a search.
_METADATA_SQL = """
SELECT 'conversation', s.label, s.item, c.id, c.title, c.date, s.text
  FROM snippets AS s JOIN conversations AS c ON c.id = s.conversation_id
 WHERE s.label IN (SELECT value FROM json_each(?1))
UNION ALL
SELECT 'document', p.label, p.item, d.id, d.title, d.date, p.text
  FROM passages AS p JOIN documents AS d ON d.id = p.document_id
 WHERE p.label IN (SELECT value FROM json_each(?2))
"""

_GENERATIONS_SQL = "SELECT key, value FROM meta WHERE key IN ('generation:conversation', 'generation:document')"

# writes that keep the index small are saved right away; bigger ones at most
# this often during a run of writes, and always on close()
_SMALL_INDEX = 5_000
_AUTOSAVE_SECONDS = 30.0


class StoreWarning(UserWarning):
    """The store repaired itself (an index was rebuilt or caught up)."""


@dataclass(frozen=True)
class Result:
    """One search hit.

    ``source`` is ``"conversation"`` or ``"document"``; ``id`` the
    conversation's or document's id as ingested; ``item`` the snippet's or
    passage's own id (``"<id>#s<n>"`` or ``"<id>#p<n>"``); ``title`` and
    ``date`` those of the conversation or document; ``score`` the cosine
    similarity to the query (higher is better).
    """

    source: str
    id: str
    item: str
    title: str
    date: str
    text: str
    score: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SearchResponse:
    """What :meth:`MemoryStore.search` returns: results best first, and timings.

    ``timings`` holds seconds spent on ``embed`` (encoding the query; 0 for
    precomputed vectors), ``search`` (hnswlib), ``metadata`` (SQLite) and
    ``total``; and ``model_load`` when this search had to load the model
    first (not counted in ``total``).
    """

    query: str | None
    k: int
    sources: tuple[str, ...]
    results: tuple[Result, ...]
    timings: dict = field(compare=False)

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self):
        return iter(self.results)

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "k": self.k,
            "sources": list(self.sources),
            "results": [r.to_dict() for r in self.results],
            "timings": dict(self.timings),
        }


@dataclass
class IngestReport:
    """What :meth:`MemoryStore.ingest_jsonl` did.

    ``added``, ``updated`` and ``unchanged`` count stored items (re-ingesting
    an id with the same content leaves it as it is); ``skipped`` counts
    malformed lines, each described in ``problems`` with its line number.
    ``timings`` splits ``seconds`` into ``parse``, ``embed``, ``sql``,
    ``index`` and ``save``, plus ``model_load`` when the model was loaded.
    """

    source: str = "<lines>"
    lines: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    problems: tuple[Problem, ...] = ()
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.summary()

    @property
    def items(self) -> int:
        """Well-formed items read (added + updated + unchanged)."""
        return self.added + self.updated + self.unchanged

    def summary(self) -> str:
        text = (
            f"{self.source}: {self.added} added, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.skipped} skipped"
        )
        if self.skipped:
            lines = sorted({p.line for p in self.problems})
            shown = ", ".join(str(n) for n in lines[:10]) + (", ..." if len(lines) > 10 else "")
            text += f" (line{'s' if len(lines) > 1 else ''} {shown})"
        return text

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "lines": self.lines,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "problems": [p.to_dict() for p in self.problems],
            "seconds": self.seconds,
            "timings": dict(self.timings),
        }


# -- validating input --------------------------------------------------------


def _check_date(value) -> str | None:
    """An error message, or None when ``value`` is an ISO 8601 date or date-time."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    text = value.strip()
    if not text:
        return "must not be empty"
    try:
        if len(text) == 10:
            _date.fromisoformat(text)
        else:
            datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return f"must be an ISO 8601 date such as 2024-03-15, not {value!r}"
    return None


def _nonempty_string(value) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value.strip():
        return "must not be empty"
    return None


def validate_record(obj) -> list[tuple[str, str, str]]:
    """Check one ingest record; return ``(code, pointer, message)`` for each problem.

    A record is ``{"type": "conversation", "id", "title", "date", "messages":
    [{"role", "text"}, ...]}`` or ``{"type": "document", "id", "title",
    "date", "text"}``. Strings must not be empty; dates are ISO 8601.
    """
    if not isinstance(obj, dict):
        return [("E312", "", f"a line must hold a JSON object, not {type(obj).__name__}")]
    kind = obj.get("type")
    if kind not in SOURCES:
        if "type" not in obj:
            return [("E313", "/type", 'missing field "type" ("conversation" or "document")')]
        return [("E316", "/type", f'"type" must be "conversation" or "document", not {kind!r}')]
    problems = []
    required = ["id", "title", "date"] + (["messages"] if kind == "conversation" else ["text"])
    for key in required:
        if key not in obj:
            problems.append(("E313", f"/{key}", f"missing field {key!r}"))
    for key in ("id", "title"):
        if key in obj and (msg := _nonempty_string(obj[key])):
            problems.append(("E314" if "string" in msg else "E315", f"/{key}", f"{key!r} {msg}"))
    if "date" in obj and (msg := _check_date(obj["date"])):
        problems.append(("E317", "/date", f"'date' {msg}"))
    if kind == "document" and "text" in obj and (msg := _nonempty_string(obj["text"])):
        problems.append(("E314" if "string" in msg else "E315", "/text", f"'text' {msg}"))
    if kind == "conversation" and "messages" in obj:
        messages = obj["messages"]
        if not isinstance(messages, list):
            problems.append(("E314", "/messages", f"'messages' must be a list, not {type(messages).__name__}"))
        elif not messages:
            problems.append(("E315", "/messages", "'messages' must not be empty"))
        else:
            for n, message in enumerate(messages):
                where = f"/messages/{n}"
                if not isinstance(message, dict):
                    problems.append(("E314", where, f"a message must be an object, not {type(message).__name__}"))
                    continue
                for key in ("role", "text"):
                    if key not in message:
                        problems.append(("E313", f"{where}/{key}", f"missing field {key!r}"))
                    elif msg := _nonempty_string(message[key]):
                        problems.append(("E314" if "string" in msg else "E315", f"{where}/{key}", f"{key!r} {msg}"))
    return problems


def _content_hash(record: dict, size: int, overlap: int) -> str:
    body = {k: record[k] for k in ("type", "title", "date", "messages", "text") if k in record}
    body["chunking"] = [size, overlap]
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _as_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


# -- the store ----------------------------------------------------------------


class MemoryStore:
    """Past conversations and documents, searchable by meaning.

    Open one with :meth:`open`; close it with :meth:`close` (or use it as a
    context manager) so that its indexes are saved.

    >>> store = MemoryStore.open("memory/")                       # doctest: +SKIP
    >>> store.ingest_jsonl("cleo_rules/data/sample_memory.jsonl")  # doctest: +SKIP
    >>> for r in store.search("van insurance", k=3).results:       # doctest: +SKIP
    ...     print(r.score, r.title, r.date)
    """

    def __init__(self, path, db, embedder, model_path, score_floor, chunk_size, chunk_overlap, ef_search, M, ef_construction):
        self.path = path
        self._db = db
        self._embedder = embedder
        self._model_path = model_path
        self.score_floor = float(score_floor)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.ef_search = ef_search
        self.M = M
        self.ef_construction = ef_construction
        self._indexes: dict[str, VectorIndex | None] = {name: None for name in SOURCES}
        self._generations: dict[str, int] = {name: 0 for name in SOURCES}
        self._batch_depth = 0
        self._model_cache: tuple[str | None, int | None] | None = None
        self._last_save = time.monotonic()
        self._closed = False

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
        ef_search: int = 64,
        M: int = 16,
        ef_construction: int = 200,
    ) -> "MemoryStore":
        """Open the store in directory ``path``, creating it when missing.

        ``embedder`` is anything with ``encode(list[str]) -> ndarray`` and a
        ``model_name`` (normally an :class:`~cleo_rules.retrieval.embed.Embedder`);
        when None, one is made from ``model_path`` (default: the bundled
        all-MiniLM-L6-v2) the first time a text has to be encoded.
        ``score_floor`` drops search results whose cosine similarity is
        lower; ``chunk_size`` and ``chunk_overlap`` (in words) shape new
        snippets and passages. ``ef_search``, ``M`` and ``ef_construction``
        are the hnswlib parameters.

        Raises :class:`~cleo_rules.errors.StoreError` when the directory or
        its database cannot be used. A damaged index is not an error: it is
        rebuilt, with a :class:`StoreWarning`.
        """
        try:
            check_chunking(chunk_size, chunk_overlap)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        path = Path(path).expanduser()
        if path.exists() and not path.is_dir():
            raise StoreError(f"memory store must be a directory, but {path} is a file")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create memory store directory {path}: {exc}") from None
        try:
            db = sqlite_utils.Database(path / DB_FILE)
            db.execute("PRAGMA busy_timeout = 10000")
            db.enable_wal()
            db.execute("PRAGMA synchronous = NORMAL")
            db.executescript(_SCHEMA)
        except Exception as exc:  # sqlite3.DatabaseError: file is not a database, ...
            raise StoreError(f"cannot open memory database {path / DB_FILE}: {exc}") from None
        store = cls(path, db, embedder, model_path, score_floor, chunk_size, chunk_overlap, ef_search, M, ef_construction)
        try:
            store._init_meta()
            remove_stale_temp_files(path)
            for name in SOURCES:
                store._open_index(name)
        except BaseException:
            db.close()
            raise
        return store

    def _init_meta(self) -> None:
        with self._db.atomic():
            for key, value in (
                ("schema_version", str(SCHEMA_VERSION)),
                ("created_at", _now()),
                ("generation:conversation", "0"),
                ("generation:document", "0"),
                ("store_id", uuid.uuid4().hex),
            ):
                self._db.conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        version = int(self._meta("schema_version"))
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"memory store {self.path} has schema version {version}; this cleo-rules reads version {SCHEMA_VERSION}"
            )

    def close(self) -> None:
        """Save any index that changed and close the database. Safe to call twice."""
        if self._closed:
            return
        try:
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
    def embedder(self):
        """The embedder, created on first use when none was given."""
        if self._embedder is None:
            from .embed import Embedder

            self._embedder = Embedder(self._model_path)
        return self._embedder

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("memory store is closed")

    # -- meta -------------------------------------------------------------

    def _meta(self, key: str, default=None):
        row = self._db.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def _model_meta(self) -> tuple[str | None, int | None]:
        # cached: read again only after this store changed it or another process wrote
        if self._model_cache is None:
            rows = dict(self._db.conn.execute("SELECT key, value FROM meta WHERE key IN ('model', 'dim')").fetchall())
            self._model_cache = (rows.get("model"), int(rows["dim"]) if "dim" in rows else None)
        return self._model_cache

    @property
    def model_name(self) -> str | None:
        """The model that made the stored vectors (None while the store is empty)."""
        return self._model_meta()[0]

    @property
    def dim(self) -> int | None:
        """Length of the stored vectors (None while the store is empty)."""
        return self._model_meta()[1]

    def _db_generations(self) -> dict[str, int]:
        rows = self._db.conn.execute(_GENERATIONS_SQL).fetchall()
        return {key.split(":", 1)[1]: int(value) for key, value in rows}

    # -- indexes ----------------------------------------------------------

    def _index_path(self, name: str) -> Path:
        return self.path / _SOURCES[name].index_file

    def _db_labels(self, name: str) -> np.ndarray:
        table = _SOURCES[name].table
        rows = self._db.conn.execute(f"SELECT label FROM {table}").fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def _vectors(self, name: str, labels=None):
        """Yield ``(labels, vectors)`` blocks read from SQLite (all rows, or ``labels``)."""
        src = _SOURCES[name]
        dim = self.dim
        if labels is None:
            cursor = self._db.conn.execute(f"SELECT label, embedding FROM {src.table} ORDER BY label")
            blocks = iter(lambda: cursor.fetchmany(10_000), [])
        else:
            labels = [int(x) for x in labels]
            blocks = (
                self._db.conn.execute(
                    f"SELECT label, embedding FROM {src.table} WHERE label IN (SELECT value FROM json_each(?))",
                    (json.dumps(labels[i : i + 10_000]),),
                ).fetchall()
                for i in range(0, len(labels), 10_000)
            )
        for rows in blocks:
            good = [(label, blob) for label, blob in rows if isinstance(blob, bytes) and len(blob) == dim * 4]
            if len(good) != len(rows):
                bad = sorted(label for label, blob in rows if not (isinstance(blob, bytes) and len(blob) == dim * 4))
                warnings.warn(
                    f"{len(bad)} {src.label}(s) have a damaged embedding and are left out of the index "
                    f"(labels {bad[:5]}); re-ingest them or run rebuild(reembed=True)",
                    StoreWarning,
                    stacklevel=4,
                )
            if good:
                ids = np.fromiter((g[0] for g in good), dtype=np.int64, count=len(good))
                vecs = np.frombuffer(b"".join(g[1] for g in good), dtype=np.float32).reshape(len(good), dim)
                yield ids, vecs

    def _build_index(self, name: str) -> VectorIndex | None:
        dim = self.dim
        if dim is None:
            return None
        (count,) = self._db.conn.execute(f"SELECT count(*) FROM {_SOURCES[name].table}").fetchone()
        index = VectorIndex(
            self._index_path(name), dim, M=self.M, ef_construction=self.ef_construction,
            ef_search=self.ef_search, capacity=int(count * 1.25) + 16,
        )
        for labels, vectors in self._vectors(name):
            index.add(vectors, labels)
        index.dirty = True
        return index

    def _sync_index(self, name: str, index: VectorIndex) -> tuple[int, int]:
        """Make ``index`` hold exactly the labels in SQLite; return (added, removed)."""
        live = set(self._db_labels(name).tolist())
        have = index.labels
        removed = index.delete(have - live)
        missing = sorted(live - have)
        for labels, vectors in self._vectors(name, missing):
            index.add(vectors, labels)
        return len(missing), removed

    def _label_seq(self, name: str) -> int:
        """The largest label ever given in a source (AUTOINCREMENT never goes back)."""
        row = self._db.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (_SOURCES[name].table,)).fetchone()
        return int(row[0]) if row else 0

    def _sidecar_extra(self, name: str) -> dict:
        return {"store_id": self._meta("store_id"), "source": name, "label_seq": self._label_seq(name)}

    def _save_index(self, name: str) -> None:
        index = self._indexes[name]
        if index is not None:
            # one writer at a time, so an index file and its sidecar always come from the same save
            with _locked(self.path / LOCK_FILE):
                index.save(model=self.model_name, generation=self._generations[name], extra=self._sidecar_extra(name))

    def _load_index(self, name: str) -> VectorIndex:
        """Load a source's index file if it is sound and belongs to this database."""
        index, side = VectorIndex.load(self._index_path(name), dim=self.dim, model=self.model_name, ef_search=self.ef_search)
        if side.get("store_id") != self._meta("store_id"):
            raise IndexInvalid("index belongs to another store")
        if side.get("source") != name:
            raise IndexInvalid(f"index is for {side.get('source')!r} items, not {name!r}")
        label_seq = side.get("label_seq")
        if not isinstance(label_seq, int) or label_seq > self._label_seq(name):
            raise IndexInvalid("index is newer than the database (was the database restored from a backup?)")
        return index

    def _open_index(self, name: str) -> None:
        src = _SOURCES[name]
        path = self._index_path(name)
        generation = self._db_generations()[name]
        (count,) = self._db.conn.execute(f"SELECT count(*) FROM {src.table}").fetchone()
        try:
            index = self._load_index(name)
        except IndexInvalid as exc:
            if count == 0 and not path.exists():
                index = None  # nothing stored, nothing to rebuild
            else:
                warnings.warn(
                    f"{src.label} index in {self.path}: {exc.reason}; rebuilding it from SQLite ({count} vectors)",
                    StoreWarning,
                    stacklevel=3,
                )
                index = self._build_index(name)
        else:
            added, removed = self._sync_index(name, index)
            if added or removed:
                warnings.warn(
                    f"{src.label} index in {self.path} was behind the database "
                    f"({added} missing, {removed} deleted); caught up from SQLite",
                    StoreWarning,
                    stacklevel=3,
                )
        self._indexes[name] = index
        self._generations[name] = generation
        if index is not None and index.dirty:
            self._try_save(name)

    def _refresh(self) -> None:
        """Catch up with writes made by other processes since the last look (one statement)."""
        current = self._db_generations()
        for name, generation in current.items():
            if generation != self._generations[name]:
                self._model_cache = None
                index = self._indexes[name]
                if index is None:
                    index = self._build_index(name)
                    self._indexes[name] = index
                else:
                    self._sync_index(name, index)
                self._generations[name] = generation

    def save(self) -> None:
        """Write every index that changed since it was last saved (atomically).

        A failed write (disk full, read-only directory) is not an error: the
        vectors are safe in SQLite and the index is rebuilt from them at the
        next open. It is reported as a :class:`StoreWarning`.
        """
        self._check_open()
        self._refresh()  # include what other processes wrote, so the saved index is current
        for name, index in self._indexes.items():
            if index is not None and index.dirty:
                self._try_save(name)
        self._last_save = time.monotonic()

    def _try_save(self, name: str) -> None:
        try:
            self._save_index(name)
        except OSError as exc:
            warnings.warn(
                f"could not save the {_SOURCES[name].label} index in {self.path} ({exc}); "
                "it will be rebuilt from SQLite when the store is next opened",
                StoreWarning,
                stacklevel=3,
            )

    def _after_write(self) -> None:
        if self._batch_depth:
            return
        slots = max((ix.slots for ix in self._indexes.values() if ix is not None), default=0)
        if slots <= _SMALL_INDEX or time.monotonic() - self._last_save >= _AUTOSAVE_SECONDS:
            self.save()

    @contextmanager
    def _batch(self):
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1

    def rebuild(self, *, reembed: bool = False) -> dict:
        """Rebuild both indexes from the vectors in SQLite and save them.

        With ``reembed=True`` every snippet and passage is encoded again with
        the current embedder first (use this after switching models).
        Returns ``{"conversation": n, "document": n, "seconds": s}``.
        """
        self._check_open()
        start = time.perf_counter()
        if reembed:
            self._reembed()
        counts = {}
        for name in SOURCES:
            VectorIndex.remove_files(self._index_path(name))
            self._generations[name] = self._db_generations()[name]
            index = self._build_index(name)
            self._indexes[name] = index
            counts[name] = len(index) if index is not None else 0
            try:
                self._save_index(name)
            except OSError as exc:
                raise StoreError(f"could not save the rebuilt index in {self.path}: {exc}") from None
        counts["seconds"] = time.perf_counter() - start
        return counts

    def _reembed(self) -> None:
        embedder = self.embedder
        for name in SOURCES:
            src = _SOURCES[name]
            rows = self._db.conn.execute(f"SELECT label, text FROM {src.table} ORDER BY label").fetchall()
            for i in range(0, len(rows), 256):
                block = rows[i : i + 256]
                vectors = embedder.encode([r[1] for r in block])
                with self._db.atomic():
                    self._db.conn.executemany(
                        f"UPDATE {src.table} SET embedding = ? WHERE label = ?",
                        [(_as_blob(v), r[0]) for v, r in zip(vectors, block)],
                    )
                    self._set_model(embedder.model_name, vectors.shape[1], force=True)
        with self._db.atomic():
            for name in SOURCES:
                self._bump(name)

    # -- embedding --------------------------------------------------------

    def _set_model(self, model: str, dim: int, *, force: bool = False) -> None:
        """Record (inside the caller's transaction) which model made the vectors."""
        stored_model, stored_dim = self.model_name, self.dim
        if stored_model is None or force:
            self._model_cache = None
            self._db.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('model', ?)", (model,))
            self._db.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('dim', ?)", (str(int(dim)),))
            return
        if stored_model != model or stored_dim != dim:
            raise StoreError(
                f"memory store {self.path} holds vectors from model {stored_model!r} ({stored_dim} dimensions), "
                f"not {model!r} ({dim}); open it with that model or run `cleo-rules memory rebuild --reembed`"
            )

    def _check_model(self, embedder) -> None:
        stored = self.model_name
        name = getattr(embedder, "model_name", None)
        if stored is not None and name is not None and stored != name:
            raise StoreError(
                f"memory store {self.path} holds vectors from model {stored!r}, but the embedder is {name!r}; "
                "open it with the same model or run `cleo-rules memory rebuild --reembed`"
            )

    def _load_model(self) -> float:
        """Load the embedding model if it is not loaded yet; return the seconds spent."""
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

    def _prepare(self, record: dict) -> dict:
        """Normalise a valid record and cut it into pieces (snippets or passages)."""
        kind = record["type"]
        out = {
            "type": kind,
            "id": record["id"].strip(),
            "title": record["title"].strip(),
            "date": record["date"].strip(),
        }
        if kind == "conversation":
            out["messages"] = [{"role": m["role"].strip(), "text": m["text"].strip()} for m in record["messages"]]
            out["pieces"] = conversation_snippets(out["messages"], self.chunk_size, self.chunk_overlap)
        else:
            out["text"] = record["text"]
            out["pieces"] = chunk_text(out["text"], self.chunk_size, self.chunk_overlap)
        out["hash"] = _content_hash(out, self.chunk_size, self.chunk_overlap)
        return out

    def _existing_hashes(self, records: list[dict]) -> dict[tuple[str, str], str]:
        found = {}
        for name in SOURCES:
            ids = [r["id"] for r in records if r["type"] == name]
            if ids:
                rows = self._db.conn.execute(
                    f"SELECT id, content_hash FROM {_SOURCES[name].parent} WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids),),
                ).fetchall()
                found.update({(name, i): h for i, h in rows})
        return found

    def _bump(self, name: str) -> int:
        """Increase a source's generation inside the caller's transaction; return the old value."""
        key = f"generation:{name}"
        (old,) = self._db.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        self._db.conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(int(old) + 1), key))
        return int(old)

    def _write(self, records: list[dict], timings: dict | None = None) -> list[str]:
        """Store prepared records (ids unique within the call); return each one's status.

        Statuses are ``"added"``, ``"updated"`` or ``"unchanged"``. Embeds the
        changed records in one batch, commits them in one transaction, then
        updates the indexes.
        """
        self._check_open()
        timings = timings if timings is not None else {}
        t0 = time.perf_counter()
        existing = self._existing_hashes(records)
        statuses, todo = [], []
        for record in records:
            old = existing.get((record["type"], record["id"]))
            if old is None:
                statuses.append("added")
                todo.append(record)
            elif old == record["hash"]:
                statuses.append("unchanged")
            else:
                statuses.append("updated")
                todo.append(record)
        t1 = time.perf_counter()
        if not todo:
            timings["sql"] = timings.get("sql", 0.0) + t1 - t0
            return statuses
        texts = [piece.text for record in todo for piece in record["pieces"]]
        loading = self._load_model()
        if loading:
            timings["model_load"] = timings.get("model_load", 0.0) + loading
        t_encode = time.perf_counter()
        vectors = self._encode(texts)
        t2 = time.perf_counter()
        stamp = _now()
        dead: dict[str, set[int]] = {name: set() for name in SOURCES}
        new: dict[str, dict[int, np.ndarray]] = {name: {} for name in SOURCES}
        behind = set()
        row = 0
        try:
            with self._db.atomic():
                self._set_model(getattr(self.embedder, "model_name", "unknown"), vectors.shape[1])
                conn = self._db.conn
                for record in todo:
                    name = record["type"]
                    src = _SOURCES[name]
                    old_labels = [r[0] for r in conn.execute(
                        f"SELECT label FROM {src.table} WHERE {src.fk} = ?", (record["id"],)
                    )]
                    for label in old_labels:
                        if new[name].pop(label, None) is None:
                            dead[name].add(label)
                    conn.execute(f"DELETE FROM {src.table} WHERE {src.fk} = ?", (record["id"],))
                    if name == "conversation":
                        conn.execute("DELETE FROM messages WHERE conversation_id = ?", (record["id"],))
                        conn.execute(
                            "INSERT INTO conversations (id, title, date, content_hash, ingested_at) VALUES (?, ?, ?, ?, ?) "
                            "ON CONFLICT(id) DO UPDATE SET title = excluded.title, date = excluded.date, "
                            "content_hash = excluded.content_hash, ingested_at = excluded.ingested_at",
                            (record["id"], record["title"], record["date"], record["hash"], stamp),
                        )
                        conn.executemany(
                            "INSERT INTO messages (conversation_id, position, role, text) VALUES (?, ?, ?, ?)",
                            [(record["id"], n, m["role"], m["text"]) for n, m in enumerate(record["messages"])],
                        )
                        for n, piece in enumerate(record["pieces"]):
                            cur = conn.execute(
                                "INSERT INTO snippets (item, conversation_id, position, first_message, last_message, text, embedding) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (f"{record['id']}#s{n}", record["id"], n, piece.first_message, piece.last_message,
                                 piece.text, _as_blob(vectors[row])),
                            )
                            new[name][cur.lastrowid] = vectors[row]
                            row += 1
                    else:
                        conn.execute(
                            "INSERT INTO documents (id, title, date, text, content_hash, ingested_at) VALUES (?, ?, ?, ?, ?, ?) "
                            "ON CONFLICT(id) DO UPDATE SET title = excluded.title, date = excluded.date, text = excluded.text, "
                            "content_hash = excluded.content_hash, ingested_at = excluded.ingested_at",
                            (record["id"], record["title"], record["date"], record["text"], record["hash"], stamp),
                        )
                        for n, piece in enumerate(record["pieces"]):
                            cur = conn.execute(
                                "INSERT INTO passages (item, document_id, position, start_char, end_char, text, embedding) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (f"{record['id']}#p{n}", record["id"], n, piece.start, piece.end,
                                 piece.text, _as_blob(vectors[row])),
                            )
                            new[name][cur.lastrowid] = vectors[row]
                            row += 1
                for name in {r["type"] for r in todo}:
                    old_generation = self._bump(name)
                    if old_generation != self._generations[name]:
                        behind.add(name)  # another process wrote in between
                    self._generations[name] = old_generation + 1
        except StoreError:
            self._model_cache = None
            raise
        except Exception as exc:
            self._model_cache = None
            raise StoreError(f"could not write to memory store {self.path}: {exc}") from exc
        t3 = time.perf_counter()
        self._apply(dead, new, behind)
        t4 = time.perf_counter()
        timings["sql"] = timings.get("sql", 0.0) + (t1 - t0) + (t3 - t2)
        timings["embed"] = timings.get("embed", 0.0) + (t2 - t_encode)
        timings["index"] = timings.get("index", 0.0) + (t4 - t3)
        return statuses

    def _apply(self, dead: dict, new: dict, behind=()) -> None:
        """Bring the in-memory indexes in line with a committed transaction."""
        for name in SOURCES:
            index = self._indexes[name]
            if index is None and (new[name] or name in behind):
                self._indexes[name] = self._build_index(name)  # from SQLite: holds the new rows already
                continue
            if index is None:
                continue
            try:
                if dead[name]:
                    index.delete(dead[name])
                if new[name]:
                    labels = list(new[name])
                    index.add(np.stack([new[name][x] for x in labels]), labels)
                if name in behind:
                    self._sync_index(name, index)
            except Exception as exc:  # the data is committed; the cache can always be rebuilt
                warnings.warn(
                    f"{_SOURCES[name].label} index update failed ({exc}); rebuilding it from SQLite",
                    StoreWarning,
                    stacklevel=4,
                )
                self._indexes[name] = self._build_index(name)

    def _add(self, record: dict) -> str:
        problems = validate_record(record)
        if problems:
            described = [
                Problem(code, message, "<argument>", pointer=pointer) for code, pointer, message in problems
            ]
            raise IngestError(
                f"invalid {record.get('type', 'item') if isinstance(record, dict) else 'item'}: "
                + "; ".join(f"{p.pointer or '/'}: {p.message}" for p in described),
                described,
            )
        status = self._write([self._prepare(record)])[0]
        self._after_write()
        return status

    def add_conversation(self, id: str, title: str, date: str, messages) -> str:
        """Store a conversation (``messages``: ``[{"role", "text"}, ...]``) and its snippets.

        Re-adding an id replaces the old conversation. Returns ``"added"``,
        ``"updated"`` or ``"unchanged"``; raises
        :class:`~cleo_rules.errors.IngestError` when an argument is malformed.
        """
        messages = list(messages) if isinstance(messages, (list, tuple)) else messages
        return self._add({"type": "conversation", "id": id, "title": title, "date": date, "messages": messages})

    def add_document(self, id: str, title: str, date: str, text: str) -> str:
        """Store a document and its passages; re-adding an id replaces it. See :meth:`add_conversation`."""
        return self._add({"type": "document", "id": id, "title": title, "date": date, "text": text})

    def _delete(self, name: str, id: str) -> bool:
        self._check_open()
        src = _SOURCES[name]
        with self._db.atomic():
            conn = self._db.conn
            labels = [r[0] for r in conn.execute(f"SELECT label FROM {src.table} WHERE {src.fk} = ?", (id,))]
            conn.execute(f"DELETE FROM {src.table} WHERE {src.fk} = ?", (id,))
            if name == "conversation":
                conn.execute("DELETE FROM messages WHERE conversation_id = ?", (id,))
            gone = conn.execute(f"DELETE FROM {src.parent} WHERE id = ?", (id,)).rowcount
            behind = set()
            if gone:
                old = self._bump(name)
                if old != self._generations[name]:
                    behind.add(name)
                self._generations[name] = old + 1
        if gone:
            self._apply({n: set(labels) if n == name else set() for n in SOURCES}, {n: {} for n in SOURCES}, behind)
            self._after_write()
        return bool(gone)

    def delete_conversation(self, id: str) -> bool:
        """Remove a conversation, its messages and snippets; True if it existed.

        Its snippets stop appearing in search results at once.
        """
        return self._delete("conversation", id)

    def delete_document(self, id: str) -> bool:
        """Remove a document and its passages; True if it existed."""
        return self._delete("document", id)

    # -- ingesting JSON Lines ---------------------------------------------

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
        self._check_open()
        start = time.perf_counter()
        report = IngestReport()
        timings = {"parse": 0.0, "embed": 0.0, "sql": 0.0, "index": 0.0, "save": 0.0}
        lines, report.source = self._open_lines(path_or_lines)
        problems: list[Problem] = []

        def parsed():
            """Yield (line number, prepared record) for well-formed lines."""
            for number, raw in lines:
                t = time.perf_counter()
                record, found = self._parse_line(raw, number, report.source)
                timings["parse"] += time.perf_counter() - t
                report.lines = number
                if found:
                    problems.extend(found)
                    report.skipped += 1
                    yield number, None
                elif record is not None:
                    yield number, record
                else:
                    yield number, None  # blank line

        try:
            if strict:
                items = list(parsed())
                if problems:
                    raise IngestError(self._problem_message(report.source, problems), problems)
                stream = iter(items)
            else:
                stream = parsed()
            done = 0
            batch: list[dict] = []
            batch_ids: set = set()
            last_line = 0

            def flush():
                nonlocal done, batch, batch_ids
                if batch:
                    for status in self._write(batch, timings):
                        setattr(report, status, getattr(report, status) + 1)
                    batch, batch_ids = [], set()
                if progress is not None and last_line > done:
                    progress(last_line - done)
                    done = last_line
                if self._indexes_small() or time.monotonic() - self._last_save >= _AUTOSAVE_SECONDS:
                    t = time.perf_counter()
                    self.save()
                    timings["save"] += time.perf_counter() - t

            with self._batch():
                for number, record in stream:
                    last_line = number
                    if record is None:
                        continue
                    key = (record["type"], record["id"])
                    if key in batch_ids:
                        flush()  # the same id twice: write the first one before the second
                    batch.append(record)
                    batch_ids.add(key)
                    if len(batch) >= batch_size:
                        flush()
                flush()
        finally:
            closer = getattr(lines, "close", None)
            if closer is not None:
                closer()
        t = time.perf_counter()
        self.save()
        timings["save"] += time.perf_counter() - t
        report.problems = tuple(problems)
        report.seconds = time.perf_counter() - start
        report.timings = timings
        return report

    def _indexes_small(self) -> bool:
        return all(ix is None or ix.slots <= _SMALL_INDEX for ix in self._indexes.values())

    @staticmethod
    def _problem_message(source: str, problems) -> str:
        lines = sorted({p.line for p in problems})
        head = f"{len(lines)} malformed line{'s' if len(lines) != 1 else ''} in {source}; nothing was ingested"
        return "\n".join([head] + [p.format() for p in problems])

    @staticmethod
    def _open_lines(path_or_lines):
        """``(iterator of (line number, raw line) with a close() hook, display name)``."""
        if isinstance(path_or_lines, (str, os.PathLike)):
            path = Path(path_or_lines)
            try:
                fh = open(path, "rb")
            except OSError as exc:
                raise IngestError(f"cannot read {path}: {exc.strerror or exc}") from None
            return _Closing(enumerate(fh, start=1), fh.close), str(path)
        if isinstance(path_or_lines, (bytes, bytearray)):
            path_or_lines = io.BytesIO(path_or_lines)
        return _Closing(enumerate(path_or_lines, start=1), None), "<lines>"

    def _parse_line(self, raw, number: int, source: str):
        """``(prepared record or None, problems)`` for one input line."""
        if isinstance(raw, (bytes, bytearray)):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return None, [Problem("E311", f"line is not valid UTF-8 ({exc.reason})", source, number, 1)]
        text = raw.strip()
        if not text:
            return None, []
        try:
            obj = json.loads(text)
        except ValueError as exc:
            col = getattr(exc, "colno", 1)
            msg = getattr(exc, "msg", str(exc))
            return None, [Problem("E311", f"not valid JSON: {msg}", source, number, col)]
        found = validate_record(obj)
        if found:
            return None, [Problem(code, message, source, number, 1, pointer=pointer) for code, pointer, message in found]
        return self._prepare(obj), []

    # -- searching --------------------------------------------------------

    @staticmethod
    def _check_sources(sources) -> tuple[str, ...]:
        if isinstance(sources, str):
            sources = (sources,)
        sources = tuple(dict.fromkeys(sources))
        bad = [s for s in sources if s not in SOURCES]
        if bad or not sources:
            raise UsageError(f"sources must be among {', '.join(SOURCES)}; got {list(sources)!r}")
        return sources

    def search(self, query: str, k: int = 5, sources=SOURCES, floor: float | None = None) -> SearchResponse:
        """The ``k`` snippets and passages most similar to ``query``, best first.

        ``sources`` limits the search to ``"conversation"`` snippets and/or
        ``"document"`` passages. Results scoring below ``floor`` (default: the
        store's ``score_floor``) are dropped. Title, date and text of all
        results come from one SQL statement.
        """
        self._check_open()
        if not isinstance(query, str) or not query.strip():
            raise UsageError("search query must be a non-empty string")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise UsageError(f"k must be a positive integer, not {k!r}")
        sources = self._check_sources(sources)
        start = time.perf_counter()
        self._refresh()
        if all(self._indexes[s] is None or len(self._indexes[s]) == 0 for s in sources):
            return SearchResponse(query, k, sources, (), {"embed": 0.0, "search": 0.0, "metadata": 0.0,
                                                           "total": time.perf_counter() - start})
        loading = self._load_model()
        encoding = time.perf_counter()
        vector = self._encode([query])
        embedded = time.perf_counter()
        (response,) = self._search(vector, k, sources, floor, [query], refresh=False)
        timings = dict(response.timings)
        timings["embed"] = embedded - encoding
        timings["total"] = time.perf_counter() - start - loading
        if loading:
            timings["model_load"] = loading
        return SearchResponse(query, k, sources, response.results, timings)

    def search_vectors(self, vectors, k: int = 5, sources=SOURCES, floor: float | None = None):
        """Search with precomputed query vectors.

        ``vectors`` of shape ``(dim,)`` gives one :class:`SearchResponse`;
        shape ``(n, dim)`` gives a list of ``n`` of them, and all their
        metadata still comes from a single SQL statement.
        """
        self._check_open()
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise UsageError(f"k must be a positive integer, not {k!r}")
        sources = self._check_sources(sources)
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim not in (1, 2):
            raise UsageError(f"query vectors must have shape (dim,) or (n, dim), not {array.shape}")
        single = array.ndim == 1
        responses = self._search(array.reshape(1, -1) if single else array, k, sources, floor, None)
        return responses[0] if single else responses

    def _search(self, vectors, k, sources, floor, queries, refresh=True) -> list[SearchResponse]:
        start = time.perf_counter()
        if refresh:
            self._refresh()
        floor = self.score_floor if floor is None else float(floor)
        n = len(vectors)
        dim = self.dim
        if dim is not None and n and vectors.shape[1] != dim:
            raise StoreError(f"query vectors have {vectors.shape[1]} dimensions; the store's have {dim}")
        fetch = k + max(5, k // 4)  # a little extra, in case some labels left SQLite meanwhile
        hits: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in sources:
            index = self._indexes[name]
            if index is not None and len(index) and n:
                hits[name] = index.query(vectors, fetch)
        searched = time.perf_counter()
        wanted = {name: sorted({int(x) for x in hits[name][0].ravel()}) if name in hits else [] for name in SOURCES}
        rows = {}
        if any(wanted.values()):
            for source, label, item, pid, title, date, text in self._db.conn.execute(
                _METADATA_SQL, (json.dumps(wanted["conversation"]), json.dumps(wanted["document"]))
            ):
                rows[(source, label)] = (item, pid, title, date, text)
        fetched = time.perf_counter()
        order = {name: i for i, name in enumerate(SOURCES)}
        responses = []
        for q in range(n):
            found = []
            for name, (labels, scores) in hits.items():
                for label, score in zip(labels[q].tolist(), scores[q].tolist()):
                    meta = rows.get((name, label))
                    if meta is None or score < floor:
                        continue
                    found.append((-score, order[name], label, name, meta, score))
            found.sort(key=lambda t: t[:3])
            results = tuple(
                Result(name, meta[1], meta[0], meta[2], meta[3], meta[4], float(score))
                for *_, name, meta, score in found[:k]
            )
            responses.append(
                SearchResponse(
                    queries[q] if queries else None, k, sources, results,
                    {"embed": 0.0, "search": searched - start, "metadata": fetched - searched,
                     "total": fetched - start},
                )
            )
        return responses

    # -- reporting --------------------------------------------------------

    def stats(self) -> dict:
        """Counts, model, sizes and index state, as a JSON-ready dict."""
        self._check_open()
        counts = self._db.conn.execute(
            "SELECT (SELECT count(*) FROM conversations), (SELECT count(*) FROM messages), "
            "(SELECT count(*) FROM snippets), (SELECT count(*) FROM documents), (SELECT count(*) FROM passages)"
        ).fetchone()
        generations = self._db_generations()
        indexes = {}
        for name in SOURCES:
            index = self._indexes[name]
            path = self._index_path(name)
            indexes[_SOURCES[name].table] = {
                "file": path.name,
                "elements": len(index) if index is not None else 0,
                "capacity": index.capacity if index is not None else 0,
                "deleted_slots": (index.slots - len(index)) if index is not None else 0,
                "bytes": path.stat().st_size if path.exists() else 0,
                "saved": index is None or not index.dirty,
                "generation": generations[name],
            }
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
            "db_bytes": db_bytes,
            "indexes": indexes,
        }


@contextmanager
def _locked(path: Path):
    """An exclusive advisory lock on ``path`` (a no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class _Closing:
    """An iterator with a ``close`` hook."""

    def __init__(self, iterator, close):
        self._iterator = iterator
        self._close = close

    def __iter__(self):
        return self._iterator

    def close(self):
        if self._close is not None:
            self._close()
