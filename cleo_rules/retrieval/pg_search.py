"""Searching a tenant's memory in PostgreSQL: two statements per search, whatever ``k``.

One statement sets the HNSW search width for the transaction and reads the
model; the other finds the nearest pieces of each source through its HNSW
index and joins their titles, dates and texts in the same statement
(:func:`~cleo_rules.retrieval.pg_schema.search_sql`), so a piece deleted
meanwhile can never surface. Many query vectors are answered by the same two
statements.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np

from ..errors import StoreError
from ..jsonl import without_lone_surrogates
from .memory import Item, Result, SearchResponse, check_k, check_sources
from .pg_database import guarded
from .pg_schema import METADATA_BY_ITEM, search_sql
from .pg_tenant import TenantSchema
from .tables import TABLES, Source, source_of_item

__all__ = ["MAX_EF_SEARCH", "PgSearch"]

MAX_EF_SEARCH = 1000
"""pgvector's upper bound for ``hnsw.ef_search``: an HNSW scan never returns more rows than this."""



class PgSearch(TenantSchema):
    """The reading half of :class:`~cleo_rules.retrieval.postgres.PgStore`: get by ids and search."""

    @guarded
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
            if source is not None and "\x00" not in item:  # no stored id holds a NUL (no PostgreSQL text can)
                wanted[source.value].append(item)
        if not any(wanted.values()):
            return {}
        with self._connection() as conn:
            rows = conn.execute(self._sql(METADATA_BY_ITEM), wanted).fetchall()
        found = {item: Item(source, pid, item, title, date, text) for source, _, item, pid, title, date, text in rows}
        return {item: found[item] for item in order if item in found}

    @guarded
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

    @guarded
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


def _names(sources: Iterable[Source]) -> tuple[str, ...]:
    return tuple(s.value for s in sources)
