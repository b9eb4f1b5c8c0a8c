"""What the rest of cleo-rules needs from a memory, and the values a memory returns.

:class:`Memory` is the protocol a memory implements: add and delete
conversations and documents, ingest JSON Lines, search (title, date and text
of every hit come in one batched lookup), get pieces by item id, report
statistics, rebuild, close, and keep the turn traces (a
:class:`~cleo_rules.trace.TraceSink`). Two backends implement it:
:class:`~cleo_rules.retrieval.store.MemoryStore` (SQLite and hnswlib in one
directory, the embedded default) and
:class:`~cleo_rules.retrieval.postgres.PgStore` (PostgreSQL with pgvector,
for many servers and many tenants); :func:`~cleo_rules.retrieval.locate.open_memory`
picks one by location. Both derive most of it from one base,
:class:`~cleo_rules.retrieval.base.MemoryBase`, whose notes list what a
backend provides. :class:`~cleo_rules.turn.Recall`,
:mod:`cleo_rules.relevance`, the CLI and the service use nothing beyond this
protocol.

Misuse (a wrong type, an empty query, ``k < 1``, an unknown source) raises
``TypeError`` or ``ValueError``; bad data and a broken environment raise
:class:`~cleo_rules.errors.StoreError` and its subclasses.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..jsonl import without_lone_surrogates
from ..trace import TraceSink
from .tables import Source


@dataclass(frozen=True)
class Item:
    """One stored snippet or passage, with its conversation's or document's title and date.

    ``source`` is a :class:`~cleo_rules.kinds.Source` value
    (``"conversation"`` or ``"document"``); ``id`` the conversation's or
    document's id as ingested; ``item`` the piece's own id (``"<id>#s<n>"``
    or ``"<id>#p<n>"``).
    """

    source: str
    id: str
    item: str
    title: str
    date: str
    text: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Result(Item):
    """One search hit: an :class:`Item` (its fields, in the same order) and ``score``, the cosine similarity to
    the query (higher is better)."""

    score: float


@dataclass(frozen=True)
class SearchResponse:
    """What a search returns: results best first, and timings.

    ``timings`` holds seconds spent on ``embed`` (encoding the query; 0 for
    precomputed vectors), ``search`` (the vector index), ``metadata`` (the
    batched lookup of title, date and text) and ``total``; and
    ``model_load`` when this search had to load the model first (not
    counted in ``total``).
    """

    query: str | None
    k: int
    sources: tuple[str, ...]
    results: tuple[Result, ...]
    timings: dict = field(compare=False)

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[Result]:
        return iter(self.results)

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "k": self.k,
            "sources": list(self.sources),
            "results": [r.to_dict() for r in self.results],
            "timings": dict(self.timings),
        }


_BY_VALUE = {s.value: s for s in Source}


def check_sources(sources: str | Iterable[str]) -> tuple[Source, ...]:
    """``sources`` (one name or several) as a tuple of :class:`Source`, duplicates dropped.

    Raises ``ValueError`` for an unknown name or none at all.
    """
    if isinstance(sources, str):
        sources = (sources,)
    names = tuple(dict.fromkeys(sources))
    if not names or not all(s in _BY_VALUE for s in names):
        raise ValueError(f"sources must be among {', '.join(Source)}; got {list(names)!r}")
    return tuple(_BY_VALUE[s] for s in names)


def check_query(query) -> str:
    """``query`` if it is a string with more than white space (a lone surrogate as U+FFFD); ``TypeError`` or
    ``ValueError`` otherwise."""
    if not isinstance(query, str):
        raise TypeError(f"search query must be a non-empty string, not {type(query).__name__}")
    if not query.strip():
        raise ValueError("search query must be a non-empty string")
    return without_lone_surrogates(query)  # not Unicode: a tokenizer refuses it, a JSON writer too


def check_k(k) -> int:
    """``k`` if it is a positive integer; ``TypeError`` or ``ValueError`` otherwise."""
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"k must be a positive integer, not {k!r}")
    if k < 1:
        raise ValueError(f"k must be a positive integer, not {k!r}")
    return k


@runtime_checkable
class Memory(Protocol):
    """The memory a turn searches: past conversations and documents.

    These twelve members are the contract; the docstrings of
    :class:`~cleo_rules.retrieval.base.MemoryBase` (which gives both
    backends all but ``traces``, ``ingest_jsonl``, ``rebuild``, ``stats``
    and ``close``) and :class:`~cleo_rules.retrieval.store.MemoryStore`
    give the details, and one test-suite (``tests/retrieval/test_memory_backends.py``)
    holds both backends to them. What can be had from these is not part of
    it: a backend's ``model_name`` and ``dim`` are in :meth:`stats`, and
    ``with`` comes with :meth:`close` (both backends have all three).
    """

    @property
    def traces(self) -> TraceSink:
        """Where turn traces are kept (:class:`~cleo_rules.trace.Tracer` writes there)."""
        ...

    def add_conversation(self, id: str, title: str, date: str, messages: Sequence[dict]) -> str: ...

    def add_document(self, id: str, title: str, date: str, text: str) -> str: ...

    def delete_conversation(self, id: str) -> bool: ...

    def delete_document(self, id: str) -> bool: ...

    def search(self, query: str, k: int = 5, sources: str | Iterable[str] = tuple(Source),
               floor: float | None = None) -> SearchResponse: ...

    def search_vectors(self, vectors, k: int = 5, sources: str | Iterable[str] = tuple(Source),
                       floor: float | None = None) -> Any: ...

    def get(self, items: Iterable[str]) -> dict[str, Item]: ...

    def ingest_jsonl(self, path_or_lines, strict: bool = False, progress=None, *,
                     batch_size: int = 32) -> Any: ...

    def stats(self) -> dict: ...

    def rebuild(self, *, reembed: bool = False) -> dict: ...

    def close(self) -> None: ...
