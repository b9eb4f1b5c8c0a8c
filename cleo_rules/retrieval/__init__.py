"""Retrieval: the assistant's memory of past conversations and documents.

:class:`MemoryStore` keeps conversations (searched as snippets) and documents
(searched as passages) in one directory: a SQLite database that is the source
of truth, and hnswlib indexes that are rebuildable caches. Texts are embedded
by :class:`~cleo_rules.retrieval.embed.Embedder` (imported lazily: importing
this package does not load torch).

    >>> from cleo_rules.retrieval import MemoryStore
    >>> with MemoryStore.open("memory/") as store:                  # doctest: +SKIP
    ...     store.add_document("d1", "Price list 2024", "2024-01-02", "Call-out fee ...")
    ...     hits = store.search("how much is a call-out?", k=3).results
"""

from .store import IngestReport, MemoryStore, Result, SearchResponse, StoreWarning, validate_record

__all__ = ["MemoryStore", "Result", "SearchResponse", "IngestReport", "StoreWarning", "validate_record"]
