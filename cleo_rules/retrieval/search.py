"""Nearest pieces to query vectors: hnswlib neighbours joined to SQLite in one statement.

:func:`nearest` asks each chosen index for a few more neighbours than
needed; :func:`join` fetches the title, date and text of every label of
every query with **one** SQL statement (:data:`~cleo_rules.retrieval.sqlite_schema.METADATA_BY_LABEL`),
drops labels that are no longer in the database and scores under the
floor, and ranks what is left: best score first, ties broken by source
(:data:`ORDER`) then label, so the same store gives the same order.
"""

from __future__ import annotations

import json
import time

import numpy as np

from .base import ORDER, source_names, ranked
from .index_set import IndexSet
from .memory import Result, SearchResponse
from .sqlite_schema import METADATA_BY_LABEL
from .tables import Source

__all__ = ["ORDER", "join", "source_names", "nearest"]

Hits = dict[str, tuple[np.ndarray, np.ndarray]]  # source -> (labels, scores), one row per query


def nearest(indexes: IndexSet, vectors: np.ndarray, k: int, sources: tuple[Source, ...]) -> Hits:
    """Each chosen source's neighbours of every query vector: ``k`` and a few more, in case some labels
    left SQLite meanwhile. A source without an index, or with an empty one, is left out."""
    fetch = k + max(5, k // 4)
    hits: Hits = {}
    for source in sources:
        index = indexes[source]
        if index is not None and len(index) and len(vectors):
            hits[source.value] = index.query(vectors, fetch)
    return hits


def join(conn, hits: Hits, n: int, k: int, floor: float, sources: tuple[Source, ...], queries: list[str] | None,
         start: float, searched: float) -> list[SearchResponse]:
    """One :class:`SearchResponse` per query vector (``n`` of them): its best ``k`` hits at or above
    ``floor`` that are still in the database, with their metadata from one SQL statement.

    ``start`` and ``searched`` are the ``perf_counter`` times the search began
    and the indexes answered; the responses' timings are measured from them.
    """
    wanted = [sorted({int(x) for x in hits[name][0].ravel()}) if name in hits else [] for name in ORDER]
    rows = {}
    if any(wanted):
        for name, label, item, pid, title, date, text in conn.execute(
            METADATA_BY_LABEL, [json.dumps(labels) for labels in wanted]
        ):
            rows[(name, label)] = (item, pid, title, date, text)
    fetched = time.perf_counter()
    shown = source_names(sources)
    responses = []
    for q in range(n):
        found = []
        for name, (labels, scores) in hits.items():
            for label, score in zip(labels[q].tolist(), scores[q].tolist()):
                meta = rows.get((name, label))
                if meta is None or score < floor:
                    continue
                found.append((-score, ORDER[name], label, (name, meta, score)))
        results = tuple(
            Result(name, meta[1], meta[0], meta[2], meta[3], meta[4], float(score))
            for name, meta, score in ranked(found, k)
        )
        responses.append(
            SearchResponse(
                queries[q] if queries else None, k, shown, results,
                {"embed": 0.0, "search": searched - start, "metadata": fetched - searched,
                 "total": fetched - start},
            )
        )
    return responses
