"""``ListMemory``: a third backend, kept in Python lists, made of what :mod:`cleo_rules.retrieval.base` lists as a
backend's part and nothing more (see tests/retrieval/test_retrieval_base.py).

A :class:`Shelf` holds its lists, so that a store opened again on the same
shelf finds what an earlier one wrote, as a store opened again on the same
directory does: that is what lets it be a registered backend, opened by URL
from the command line and the service (tests/retrieval/test_memory_registry.py).
"""

from __future__ import annotations

import time

import numpy as np

from cleo_rules.errors import StoreError
from cleo_rules.retrieval import MemoryBase, Result, StoreOptions
from cleo_rules.retrieval.base import source_names, ranked
from cleo_rules.retrieval.ingest import ingest_lines, open_lines
from cleo_rules.retrieval.provenance import EmbeddingCheck, Recorded
from cleo_rules.retrieval.tables import TABLES, Source


class Shelf:
    """Where one memory's lists are kept between opens."""

    def __init__(self):
        self.parents: dict[tuple[Source, str], tuple[str, str, str]] = {}  # title, date, content hash
        self.pieces: dict[int, tuple[Source, str, str, str, np.ndarray]] = {}  # label: source, item, parent, text
        self.meta: dict = {}
        self.sink = ListTraces()


class ListTraces:
    def __init__(self):
        self.rows: list[dict] = []

    def write(self, row: dict) -> int:
        self.rows.append(dict(row, id=len(self.rows) + 1))
        return len(self.rows)

    def read(self, *, since=None, searched_only=False):
        return iter([r for r in self.rows if (not since or r["time"] >= since)
                     and (r["query"] is not None or not searched_only)])


class ListMemory(MemoryBase):
    """A backend in lists: the part MemoryBase's notes say a backend provides, and nothing more."""

    backend_errors = (KeyError,)

    def __init__(self, embedder, shelf: Shelf | None = None, **keywords):
        self.path = "the lists"
        super().__init__(embedder, StoreOptions.of(**keywords), read_only=False)
        shelf = shelf if shelf is not None else Shelf()
        self.parents, self.pieces, self.meta, self.sink = shelf.parents, shelf.pieces, shelf.meta, shelf.sink

    @property
    def traces(self):
        return self.sink

    def _store_error(self, exc):
        return StoreError(f"the lists lost {exc}")

    def _stored_model(self):
        return self.meta.get("model"), self.meta.get("dim")

    def _embedding_check(self):
        return EmbeddingCheck(self.path, Recorded.from_meta(self.meta))

    def _sample_piece(self):
        return next(((text, vector) for _, _, _, text, vector in self.pieces.values()), None)

    def _existing_hashes(self, items):
        return {item.key: self.parents[item.key][2] for item in items if item.key in self.parents}

    def _commit(self, todo, vectors):
        if not self.meta:
            self.meta.update({"model": self.embedder.model_name, "dim": vectors.shape[1],
                              **dict(self._embedding_rows())})
        row = 0
        for item in todo:
            self._delete(item.source, item.id)
            self.parents[item.key] = (item.title, item.date, item.content_hash)
            for n, piece in enumerate(item.pieces):
                self.pieces[len(self.pieces) + row + 1] = (item.source, TABLES[item.source].item_id(item.id, n),
                                                           item.id, piece.text, vectors[row])
                row += 1

    def _delete(self, source, id):
        self._check_writable()
        for label in [label for label, p in self.pieces.items() if p[0] is source and p[2] == id]:
            del self.pieces[label]
        return self.parents.pop((source, id), None) is not None

    def _search_query(self, query, k, sources, floor):
        loading = self._load_model()
        start = time.perf_counter()
        vector = self._encode([query])
        embedded = time.perf_counter()
        (response,) = self._search_vectors(vector, k, sources, floor)
        return response.results, {"embed": embedded - start, "search": time.perf_counter() - embedded,
                                  "metadata": 0.0}, loading

    def _search_vectors(self, vectors, k, sources, floor):
        from cleo_rules.retrieval.base import ORDER
        from cleo_rules.retrieval.memory import SearchResponse

        self._check_dim(vectors)
        responses = []
        for vector in vectors:
            found = []
            for label, (source, item, pid, text, stored) in self.pieces.items():
                score = float(vector @ stored / (np.linalg.norm(vector) * np.linalg.norm(stored) or 1.0))
                title, date, _ = self.parents[(source, pid)]
                if source in sources and score >= self._floor(floor):
                    found.append((-score, ORDER[source], label, Result(source, pid, item, title, date, text, score)))
            responses.append(SearchResponse(None, k, source_names(sources), tuple(ranked(found, k)), {"total": 0.0}))
        return responses

    def _fetch_items(self, wanted):
        for label, (source, item, pid, text, _) in self.pieces.items():
            if item in wanted[source]:
                title, date, _ = self.parents[(source, pid)]
                yield source.value, label, item, pid, title, date, text

    def ingest_jsonl(self, path_or_lines, strict=False, progress=None, *, batch_size=32):
        lines, name, _ = open_lines(path_or_lines)
        return ingest_lines(lines, name, prepare=self._prepare, write=self._write, checkpoint=lambda timings: None,
                            strict=strict, progress=progress, batch_size=batch_size)

    def rebuild(self, *, reembed=False):
        return {"conversation": 0, "document": 0, "seconds": 0.0}

    def stats(self):
        return self._stats({"path": self.path}, [0] * 5, 0, {})

    def close(self):
        self._closed = True
