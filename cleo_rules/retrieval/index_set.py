"""The store's hnswlib indexes, one per source, kept in line with SQLite.

SQLite is the only source of truth; an index is a cache. :class:`IndexSet`
owns the indexes of one store and everything about their lifecycle:

* **open**: each index file is checked against its sidecar and then against
  the labels in SQLite (:meth:`IndexSet.open`). A missing, damaged or
  foreign index is rebuilt from the stored vectors; one that is merely behind
  (a process died before saving it) is caught up; a file whose sidecar is
  sound but describes other bytes is checked in full and reconciled with
  SQLite (:mod:`~cleo_rules.retrieval.hnsw_reconcile`) instead of rebuilt; each time a
  :class:`StoreWarning` says so;
* **generations**: every write bumps a per-source ``generation`` counter in
  ``meta`` inside its transaction (:meth:`IndexSet.advance`);
  :meth:`IndexSet.refresh` compares them with the generations the indexes
  reflect (one statement) and catches up with other processes' writes;
* **apply**: after a transaction commits, its deleted and added vectors are
  applied to the in-memory indexes (:meth:`IndexSet.apply`);
* **save**: changed indexes are written under ``index.lock`` as a new
  generation, switched to by one rename of the sidecar that names the file,
  so an index file and its sidecar always come from the same save; small indexes
  right after each write, big ones at most every 30 seconds of writing, and
  always on close. A failed save is a warning: the next open rebuilds.

It also keeps the ``meta`` rows about the vectors themselves: the model that
made them, their dimension, and the embedding backend that made them
(:mod:`~cleo_rules.retrieval.provenance`).
"""

from __future__ import annotations

import json
import os
import stat
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import sqlite_utils

from ..errors import StoreError
from .hnsw_file import IndexInvalid, VectorIndex, index_file, remove_stale_temp_files, sidecar_path
from .hnsw_reconcile import Comparison
from .provenance import META_KEYS, Recorded, embedder_provenance, meta_rows, probe_vector
from .sqlite_schema import GENERATIONS_SQL, LOCK_FILE, check_regular, describe_mode, write_transaction
from .tables import TABLES, Source

SMALL_INDEX = 5_000
"""Indexes up to this many slots are saved after every write."""

AUTOSAVE_SECONDS = 30.0
"""Bigger ones are saved at most this often during a run of writes (and always on close)."""

_BLOCK = 10_000  # vectors read from SQLite at a time


class StoreWarning(UserWarning):
    """The store repaired itself (an index was rebuilt or caught up)."""


@contextmanager
def _locked(path: Path):
    """An exclusive advisory lock on ``path`` (a no-op where fcntl is missing).

    The lock file is opened without following it into a FIFO or a device
    (``O_NONBLOCK``, then checked to be a regular file), so a lock file that
    is not one raises :class:`~cleo_rules.errors.StoreError` instead of
    hanging.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if check_regular(path, "; remove it while no process uses the store"):
            raise StoreError(f"cannot open the store's lock file {path}: {exc.strerror or exc}") from None
        raise StoreError(f"cannot create the store's lock file {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise StoreError(f"{path} is {describe_mode(mode)}, not a regular file; remove it while no process uses "
                             "the store", code="E304")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def as_blob(vector: np.ndarray) -> bytes:
    """A vector as the float32 BLOB stored in SQLite."""
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


class IndexSet:
    """The hnswlib indexes of one store directory, and their generations.

    ``index_set[source]`` is the source's :class:`VectorIndex`, ``None``
    while nothing has been stored. ``M``, ``ef_construction`` and
    ``ef_search`` are the hnswlib parameters. A ``read_only`` set never
    writes a file: what it rebuilds or catches up stays in memory.
    """

    def __init__(self, path: Path, db: sqlite_utils.Database, *, M: int = 16, ef_construction: int = 200,
                 ef_search: int = 64, read_only: bool = False):
        self.path = path
        self.read_only = read_only
        self.db = db
        self.M = M
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self._indexes: dict[str, VectorIndex | None] = {s: None for s in Source}
        self.generations: dict[Source, int] = {s: 0 for s in Source}
        self._model: tuple[str | None, int | None] | None = None
        self._batch_depth = 0
        self._last_save = time.monotonic()

    def __getitem__(self, source: str) -> VectorIndex | None:
        return self._indexes[source]  # a Source, or its value: both hash alike

    # -- meta ---------------------------------------------------------------

    def _meta(self, key: str):
        row = self.db.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _model_meta(self) -> tuple[str | None, int | None]:
        # cached: read again only after this store changed it or another process wrote
        if self._model is None:
            rows = dict(self.db.conn.execute("SELECT key, value FROM meta WHERE key IN ('model', 'dim')").fetchall())
            self._model = (rows.get("model"), int(rows["dim"]) if "dim" in rows else None)
        return self._model

    @property
    def model_name(self) -> str | None:
        """The model that made the stored vectors (None while the store is empty)."""
        return self._model_meta()[0]

    @property
    def dim(self) -> int | None:
        """Length of the stored vectors (None while the store is empty)."""
        return self._model_meta()[1]

    def recorded_embedding(self) -> Recorded:
        """What the store records of the embedder that made its vectors (read now, not cached)."""
        keys = ", ".join(f"'{k}'" for k in ("model", *META_KEYS))
        return Recorded.from_meta(dict(self.db.conn.execute(f"SELECT key, value FROM meta WHERE key IN ({keys})")))

    def sample_piece(self) -> tuple[str, np.ndarray] | None:
        """The text and stored vector of the first snippet (or passage), None while there is none."""
        for table in TABLES.values():
            row = self.db.conn.execute(f"SELECT text, embedding FROM {table.pieces} ORDER BY label LIMIT 1").fetchone()
            if row is not None:
                return row[0], np.frombuffer(row[1], dtype=np.float32)
        return None

    def forget_model(self) -> None:
        """Read the model and dimension again next time (a transaction that set them failed)."""
        self._model = None

    def set_model(self, model: str, dim: int, *, force: bool = False, embedding=None) -> bool:
        """Record (inside the caller's transaction) which model made the vectors; True when it recorded them.

        The first vectors decide; later ones must come from the same model
        unless ``force`` (re-embedding everything) says otherwise.
        ``embedding`` is the embedding's ``meta`` rows (backend, model hash,
        runtime, probe: :func:`~cleo_rules.retrieval.provenance.meta_rows`),
        a callable giving them, written when the model is.
        """
        stored_model, stored_dim = self.model_name, self.dim
        if stored_model is None or force:
            self._model = None
            rows = [("model", model), ("dim", str(int(dim))), *(embedding() if embedding is not None else ())]
            self.db.conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                     [(k, v) for k, v in rows if v is not None])
            self.db.conn.execute(f"DELETE FROM meta WHERE key IN ({', '.join('?' * len(META_KEYS))}) AND key NOT IN "
                                 f"(SELECT value FROM json_each(?))", (*META_KEYS, json.dumps([k for k, _ in rows])))
            return True
        if stored_model != model or stored_dim != dim:
            raise StoreError(
                f"memory store {self.path} holds vectors from model {stored_model!r} ({stored_dim} dimensions), "
                f"not {model!r} ({dim}); open it with that model or run `cleo-rules memory rebuild --reembed`"
            )
        return False

    # -- generations --------------------------------------------------------

    def db_generations(self) -> dict[Source, int]:
        """Each source's generation as committed in SQLite (one statement)."""
        rows = self.db.conn.execute(GENERATIONS_SQL).fetchall()
        return {Source(key.split(":", 1)[1]): int(value) for key, value in rows}

    def advance(self, source: Source) -> bool:
        """Bump a source's generation inside the caller's transaction.

        Returns True when the index was behind: another process wrote since
        this one last looked, so the index must be synced after the commit.
        """
        key = f"generation:{source.value}"
        (old,) = self.db.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        self.db.conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(int(old) + 1), key))
        behind = int(old) != self.generations[source]
        self.generations[source] = int(old) + 1
        return behind

    # -- reading vectors from SQLite ------------------------------------------

    def index_path(self, source: Source) -> Path:
        return self.path / TABLES[source].index_file

    def _db_labels(self, source: Source) -> set[int]:
        return {r[0] for r in self.db.conn.execute(f"SELECT label FROM {TABLES[source].pieces}")}

    def _vectors(self, source: Source, labels: Iterable[int] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(labels, vectors)`` blocks read from SQLite (all rows, or ``labels``)."""
        table = TABLES[source]
        dim = self.dim or 0
        conn = self.db.conn
        blocks: Iterable[list]
        if labels is None:
            cursor = conn.execute(f"SELECT label, embedding FROM {table.pieces} ORDER BY label")
            blocks = iter(lambda: cursor.fetchmany(_BLOCK), [])
        else:
            wanted = [int(x) for x in labels]
            blocks = (
                conn.execute(
                    f"SELECT label, embedding FROM {table.pieces} WHERE label IN (SELECT value FROM json_each(?))",
                    (json.dumps(wanted[i : i + _BLOCK]),),
                ).fetchall()
                for i in range(0, len(wanted), _BLOCK)
            )
        for rows in blocks:
            good = [(label, blob) for label, blob in rows if isinstance(blob, bytes) and len(blob) == dim * 4]
            if len(good) != len(rows):
                bad = sorted(label for label, blob in rows if not (isinstance(blob, bytes) and len(blob) == dim * 4))
                warnings.warn(
                    f"{len(bad)} {table.label}(s) have a damaged embedding and are left out of the index "
                    f"(labels {bad[:5]}); re-ingest them or run rebuild(reembed=True)",
                    StoreWarning,
                    stacklevel=5,
                )
            if good:
                ids = np.fromiter((g[0] for g in good), dtype=np.int64, count=len(good))
                vecs = np.frombuffer(b"".join(g[1] for g in good), dtype=np.float32).reshape(len(good), dim)
                yield ids, vecs

    def _label_seq(self, source: Source) -> int:
        """The largest label ever given in a source (AUTOINCREMENT never goes back)."""
        row = self.db.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (TABLES[source].pieces,)).fetchone()
        return int(row[0]) if row else 0

    # -- build, sync, load --------------------------------------------------------

    def build(self, source: Source) -> VectorIndex | None:
        """A fresh index of every vector in SQLite (None while no model has written any)."""
        dim = self.dim
        if dim is None:
            return None
        (count,) = self.db.conn.execute(f"SELECT count(*) FROM {TABLES[source].pieces}").fetchone()
        index = VectorIndex(
            self.index_path(source), dim, M=self.M, ef_construction=self.ef_construction,
            ef_search=self.ef_search, capacity=int(count * 1.25) + 16,
        )
        for labels, vectors in self._vectors(source):
            index.add(vectors, labels)
        index.dirty = True
        return index

    def sync(self, source: Source, index: VectorIndex) -> tuple[int, int]:
        """Make ``index`` hold exactly the labels in SQLite; return (added, removed)."""
        live = self._db_labels(source)
        have = index.labels
        removed = index.delete(have - live)
        missing = sorted(live - have)
        for labels, vectors in self._vectors(source, missing):
            index.add(vectors, labels)
        return len(missing), removed

    def _load(self, source: Source) -> VectorIndex:
        """Load a source's index file if it is sound and belongs to this database."""
        def expect(side: dict) -> None:
            if side.get("store_id") != self._meta("store_id"):
                raise IndexInvalid("index belongs to another store")
            if side.get("source") != source.value:
                raise IndexInvalid(f"index is for {side.get('source')!r} items, not {source.value!r}")
            label_seq = side.get("label_seq")
            if not isinstance(label_seq, int) or label_seq > self._label_seq(source):
                raise IndexInvalid("index is newer than the database (was the database restored from a backup?)")

        index, _ = VectorIndex.load(self.index_path(source), dim=self.dim, model=self.model_name,
                                    ef_search=self.ef_search, expect=expect)
        return index

    def open(self) -> None:
        """Load, check and if need be rebuild or catch up every source's index."""
        if not self.read_only:
            remove_stale_temp_files(self.path)
        for source in Source:
            self._open(source)

    def _open(self, source: Source) -> None:
        table = TABLES[source]
        path = self.index_path(source)
        generation = self.db_generations()[source]
        (count,) = self.db.conn.execute(f"SELECT count(*) FROM {table.pieces}").fetchone()
        kept = " in memory (the store is open read-only)" if self.read_only else ""
        index: VectorIndex | None
        try:
            index = self._load(source)
        except IndexInvalid as exc:
            index = self._salvage(source, exc, kept) if exc.mismatch is not None else None
            if index is None and count == 0 and not path.exists() and not sidecar_path(path).exists():
                pass  # nothing stored, nothing to rebuild
            elif index is None:
                warnings.warn(
                    f"{table.label} index in {self.path}: {exc.reason}; rebuilding it from SQLite ({count} vectors)"
                    f"{kept}",
                    StoreWarning,
                    stacklevel=4,
                )
                index = self.build(source)
        else:
            added, removed = self.sync(source, index)
            if added or removed:
                warnings.warn(
                    f"{table.label} index in {self.path} was behind the database "
                    f"({added} missing, {removed} deleted); caught up from SQLite",
                    StoreWarning,
                    stacklevel=4,
                )
        self._indexes[source] = index
        self.generations[source] = generation
        if index is not None and index.dirty and not self.read_only:
            self._try_save(source)

    def _salvage(self, source: Source, exc: IndexInvalid, kept: str) -> VectorIndex | None:
        """The index file of a pair that disagrees, checked in full and reconciled with SQLite; None if unsound.

        SQLite's vectors are read once and compared with the file's while the
        file is checked (:mod:`~cleo_rules.retrieval.hnsw_reconcile`); no
        vector is added to the graph unless SQLite holds it and the file does
        not (or holds another), so this costs far less than a rebuild
        (``bench/bench_index_open.py`` compares it with a sound open). This
        is the one place that warns about it, once per open.
        """
        meta = exc.mismatch
        assert meta is not None
        comparison = Comparison.read(self.db.conn, TABLES[source].pieces, meta["dim"])
        try:
            index, layout = VectorIndex.salvage(self.index_path(source), meta, ef_search=self.ef_search,
                                                visit=comparison.visit)
        except IndexInvalid as worse:
            exc.reason = f"{exc.reason}, and the {worse.reason}"
            return None
        added, removed, replaced = comparison.apply(index, layout)
        damaged = (f"; {len(comparison.damaged)} with a damaged embedding in SQLite are left out "
                   f"(labels {comparison.damaged[:5].tolist()})") if len(comparison.damaged) else ""
        warnings.warn(
            f"{TABLES[source].label} index in {self.path}: {exc.reason} (its pair disagrees); the file itself is "
            f"whole, so it was loaded and reconciled with SQLite ({added} added, {removed} removed, {replaced} "
            f"replaced{damaged}){kept}",
            StoreWarning,
            stacklevel=5,
        )
        index.dirty = True
        return index

    def empty(self, sources: Iterable[Source]) -> bool:
        """True when none of ``sources`` has a vector indexed."""
        return all(index is None or len(index) == 0 for index in (self._indexes[s] for s in sources))

    def refresh(self) -> None:
        """Catch up with writes made by other processes since the last look (one statement)."""
        for source, generation in self.db_generations().items():
            if generation != self.generations[source]:
                self._model = None
                index = self._indexes[source]
                if index is None:
                    self._indexes[source] = self.build(source)
                else:
                    self.sync(source, index)
                self.generations[source] = generation

    def apply(self, dead: Mapping[Source, set[int]], new: Mapping[Source, dict[int, np.ndarray]],
              behind: Iterable[Source] = ()) -> None:
        """Bring the in-memory indexes in line with a committed transaction.

        ``dead`` are labels that left SQLite, ``new`` vectors that entered it
        by label, ``behind`` the sources another process wrote to meanwhile.
        """
        behind = set(behind)
        for source in Source:
            gone, added = dead.get(source, set()), new.get(source, {})
            index = self._indexes[source]
            if index is None:
                if added or source in behind:
                    self._indexes[source] = self.build(source)  # from SQLite: holds the new rows already
                continue
            try:
                if gone:
                    index.delete(gone)
                if added:
                    labels = list(added)
                    index.add(np.stack([added[x] for x in labels]), labels)
                if source in behind:
                    self.sync(source, index)
            except Exception as exc:  # the data is committed; the cache can always be rebuilt
                warnings.warn(
                    f"{TABLES[source].label} index update failed ({exc}); rebuilding it from SQLite",
                    StoreWarning,
                    stacklevel=4,
                )
                self._indexes[source] = self.build(source)

    def rebuild(self) -> dict[Source, int]:
        """Build each index afresh from SQLite and save it over the old files.

        Returns the number of vectors per source; a failed save is a
        :class:`~cleo_rules.errors.StoreError` here, since it was asked for.
        """
        counts = {}
        for source in Source:
            self.generations[source] = self.db_generations()[source]
            index = self.build(source)
            self._indexes[source] = index
            counts[source] = len(index) if index is not None else 0
            try:
                self._save(source)
            except OSError as exc:
                raise StoreError(f"could not save the rebuilt index in {self.path}: {exc}; the previous index "
                                 "files, if any, are left as they were") from None
            except StoreError as exc:
                raise StoreError(f"could not save the rebuilt index in {self.path}: {exc}", code=exc.code) from None
        return counts

    def reembed(self, embedder) -> None:
        """Encode every stored piece again with ``embedder`` and record its model and embedding.

        Blocks of 256 pieces are committed one at a time; the generations
        advance at the end, so other processes catch up with the new vectors.
        """
        recorded = meta_rows(embedder_provenance(embedder), probe_vector(embedder))
        for table in TABLES.values():
            rows = self.db.conn.execute(f"SELECT label, text FROM {table.pieces} ORDER BY label").fetchall()
            for i in range(0, len(rows), 256):
                block = rows[i : i + 256]
                vectors = embedder.encode([r[1] for r in block])
                with write_transaction(self.db):
                    self.db.conn.executemany(
                        f"UPDATE {table.pieces} SET embedding = ? WHERE label = ?",
                        [(as_blob(v), r[0]) for v, r in zip(vectors, block)],
                    )
                    self.set_model(embedder.model_name, vectors.shape[1], force=True, embedding=lambda: recorded)
        with write_transaction(self.db):
            for source in Source:
                self.advance(source)

    # -- saving ---------------------------------------------------------------

    def _save(self, source: Source) -> None:
        index = self._indexes[source]
        if index is not None:
            side = sidecar_path(self.index_path(source))
            if side.is_dir():  # a rename cannot replace a directory; FIFOs and devices it replaces
                raise StoreError(f"{side} is a directory, not a regular file; remove it so the index can be saved",
                                 code="E304")
            extra = {"store_id": self._meta("store_id"), "source": source.value, "label_seq": self._label_seq(source)}
            # one writer at a time, so an index file and its sidecar always come from the same save
            with _locked(self.path / LOCK_FILE):
                index.save(model=self.model_name or "", generation=self.generations[source], extra=extra)

    def _try_save(self, source: Source) -> None:
        try:
            self._save(source)
        except (OSError, StoreError) as exc:
            warnings.warn(
                f"could not save the {TABLES[source].label} index in {self.path} ({exc}); "
                "it will be rebuilt from SQLite when the store is next opened",
                StoreWarning,
                stacklevel=4,
            )

    def save(self) -> None:
        """Write every index that changed since it was last saved (see :meth:`MemoryStore.save`)."""
        if self.read_only:
            return
        self.refresh()  # include what other processes wrote, so the saved index is current
        for source in Source:
            index = self._indexes[source]
            if index is not None and index.dirty:
                self._try_save(source)
        self._last_save = time.monotonic()

    def save_due(self) -> bool:
        """True when the indexes are small, or the last save is long enough ago."""
        slots = max((ix.slots for ix in self._indexes.values() if ix is not None), default=0)
        return slots <= SMALL_INDEX or time.monotonic() - self._last_save >= AUTOSAVE_SECONDS

    @property
    def batching(self) -> bool:
        """True inside :meth:`batch`, where single writes leave saving to the batch."""
        return self._batch_depth > 0

    @contextmanager
    def batch(self):
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1

    # -- reporting --------------------------------------------------------------

    def describe(self, source: Source, generation: int) -> dict:
        """One index's part of :meth:`MemoryStore.stats`."""
        index = self._indexes[source]
        path = self.index_path(source)
        try:
            current = index_file(path)
        except IndexInvalid:
            current = path
        return {
            "file": path.name,
            "elements": len(index) if index is not None else 0,
            "capacity": index.capacity if index is not None else 0,
            "deleted_slots": (index.slots - len(index)) if index is not None else 0,
            "bytes": current.stat().st_size if current.is_file() else 0,
            "saved": index is None or not index.dirty,
            "generation": generation,
        }
