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

import numpy as np

from .base import ORDER, source_names, ranked
from .memory import Result, SearchResponse
from .pg_schema import METADATA_BY_ITEM, search_sql
from .pg_tenant import TenantSchema
from .tables import TABLES, Source

__all__ = ["MAX_EF_SEARCH", "PgSearch"]

MAX_EF_SEARCH = 1000
"""pgvector's upper bound for ``hnsw.ef_search``: an HNSW scan never returns more rows than this."""



class PgSearch(TenantSchema):
    """The reading half of :class:`~cleo_rules.retrieval.postgres.PgStore`: get by ids and search."""

    def _fetch_items(self, wanted: dict[Source, list[str]]) -> list[tuple]:
        with self._connection() as conn:
            return conn.execute(self._sql(METADATA_BY_ITEM), {s.value: ids for s, ids in wanted.items()}).fetchall()

    def _search_query(self, query: str, k: int, sources: tuple[Source, ...], floor: float | None):
        """``timings["search"]`` covers the nearest-neighbour scan and the join for title, date and text, which is
        the same statement, so ``timings["metadata"]`` is 0."""
        responses, timings = self._search(None, [query], k, sources, floor)
        loading = timings.pop("model_load", 0.0)
        return responses[0].results, timings, loading

    def _search_vectors(self, vectors: np.ndarray, k: int, sources: tuple[Source, ...],
                        floor: float | None) -> list[SearchResponse]:
        return self._search(vectors, None, k, sources, floor)[0]

    def _search(self, vectors: np.ndarray | None, queries: list[str] | None, k: int, sources: tuple[Source, ...],
                floor: float | None) -> tuple[list[SearchResponse], dict]:
        """Answer queries (texts, encoded here, or vectors) with two statements in one transaction."""
        floor = self._floor(floor)
        n = len(queries) if queries is not None else len(vectors) if vectors is not None else 0
        shown = source_names(sources)
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
                self._check_dim(vectors)
                sql = self._search_sql.get(searched)
                if sql is None:
                    sql = self._search_sql[searched] = self._sql(search_sql(searched))
                t = time.perf_counter()
                rows = conn.execute(sql, {"vectors": list(vectors), "k": k}).fetchall()
                timings["search"] = time.perf_counter() - t
        found: list[list] = [[] for _ in range(n)]
        for q, source, label, item, pid, title, date, text, distance in rows:
            score = 1.0 - float(distance)
            if score >= floor:
                found[q - 1].append((-score, ORDER[source], label, Result(source, pid, item, title, date, text, score)))
        responses = []
        total = time.perf_counter() - start
        for q in range(n):
            responses.append(SearchResponse(queries[q] if queries else None, k, shown, tuple(ranked(found[q], k)),
                                            {**timings, "total": total}))
        return responses, timings
