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

``memory``         the :class:`Memory` protocol and the values it returns
``options``        :class:`StoreOptions`, how a store is opened, the same for both backends
``base``           :class:`~.base.MemoryBase`: what both backends share (the embedder and its checks, writes
                   planned and embedded, every argument checked, hits made responses)
``tables``         the two sources (:class:`Source`) and their tables, described once for both backends
``records``        checking a record and preparing it for writing (:class:`~.records.PreparedItem`)
``chunk``          cutting conversations into snippets and documents into passages
``ingest``         reading JSON Lines in batches (:class:`IngestReport`)
``traces``         where each backend keeps its turn traces (one query in either SQL dialect)
``embed``          the embedding model: :class:`~.embed.Embedder`, its backend and thread count
``onnx_backend``   the default backend: the shipped ONNX export on ONNX Runtime
``torch_backend``  the reference backend: sentence-transformers on torch
``encoding``       the model check, the lazy model load and a checked encode
``provenance``     what made a store's vectors, recorded, and the probe check of a new embedder
``locate``         :func:`~.locate.open_memory`: a directory is the embedded store, a URL its scheme's backend

The embedded store (SQLite and hnswlib in one directory):

``store``          :class:`MemoryStore`, the façade over the modules below
``sqlite_schema``  the SQLite tables and statements, opening the database, its errors in the store's words
``hnsw_file``      one hnswlib index file, verified by its sidecar before it is loaded
``index_set``      the store's indexes kept in line with SQLite (:class:`~.index_set.IndexSet`)
``search``         index hits joined to SQLite in one statement

The PostgreSQL store (``postgres``, :class:`~.postgres.PgStore`) is in the
``pg_*`` modules (see :mod:`~cleo_rules.retrieval.postgres`).
"""

from .base import MemoryBase
from .ingest import IngestReport
from .memory import Item, Memory, Result, SearchResponse
from .options import StoreOptions
from .provenance import EmbeddingNotice
from .records import validate_record
from .tables import Source
from .store import MemoryStore, StoreWarning

__all__ = ["MemoryStore", "Memory", "MemoryBase", "StoreOptions", "Source", "Result", "Item", "SearchResponse",
           "IngestReport", "StoreWarning", "EmbeddingNotice", "validate_record"]
