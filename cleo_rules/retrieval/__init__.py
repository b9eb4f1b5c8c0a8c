"""Retrieval: the assistant's memory of past conversations and documents.

:class:`MemoryStore` keeps conversations (searched as snippets) and documents
(searched as passages) in one directory: a SQLite database that is the source
of truth, and hnswlib indexes that are rebuildable caches. Texts are embedded
by :class:`~cleo_rules.retrieval.embed.Embedder` (its runtime imported lazily:
importing this package loads neither ONNX Runtime nor torch).

    >>> from cleo_rules.retrieval import MemoryStore
    >>> with MemoryStore.open("memory/") as store:                  # doctest: +SKIP
    ...     store.add_document("d1", "Price list 2024", "2024-01-02", "Call-out fee ...")
    ...     hits = store.search("how much is a call-out?", k=3).results

The modules, each with one job:

``schema``   the SQLite tables, one description per :class:`Source`, the shared SQL
``records``  checking a record and preparing it for writing (:class:`~.records.PreparedItem`)
``chunk``    cutting conversations into snippets and documents into passages
``ingest``   reading JSON Lines in batches (:class:`IngestReport`)
``index``    one hnswlib index file, verified by its sidecar before it is loaded
``indexes``  the store's indexes kept in line with SQLite (:class:`~.indexes.IndexSet`)
``embed``    the embedding model: :class:`~.embed.Embedder`, its backend and thread count
``onnx_backend``   the default backend: the shipped ONNX export on ONNX Runtime
``torch_backend``  the reference backend: sentence-transformers on torch
``provenance``     what made a store's vectors, recorded, and the probe check of a new embedder
``memory``   the :class:`Memory` protocol and the values it returns
``store``    :class:`MemoryStore`, the façade over all of the above
"""

from .ingest import IngestReport
from .memory import Item, Memory, Result, SearchResponse
from .provenance import EmbeddingNotice
from .records import validate_record
from .tables import Source
from .store import MemoryStore, StoreWarning

__all__ = ["MemoryStore", "Memory", "Source", "Result", "Item", "SearchResponse", "IngestReport", "StoreWarning",
           "EmbeddingNotice", "validate_record"]
