"""Opening a memory by its location: a directory is the embedded store, a URL is PostgreSQL.

:func:`open_memory` is what ``Recall.open``, the CLI's ``--db`` and the
service's ``--memory`` go through::

    open_memory("memory/")                                    # MemoryStore: SQLite + hnswlib
    open_memory("postgresql://cleo@db.internal/cleo")         # PgStore, tenant "default"
    open_memory("postgresql://cleo@db.internal/cleo?tenant=acme")

The PostgreSQL backend (:mod:`~cleo_rules.retrieval.postgres`) is imported
only for a URL, so the embedded store never imports psycopg; without the
``[postgres]`` extra a URL raises :class:`~cleo_rules.errors.MissingExtra`.
"""

from __future__ import annotations

from pathlib import Path

from ..extras import is_postgres_url, postgres_imports
from .memory import Memory

__all__ = ["describe_location", "is_postgres_url", "open_memory"]


def open_memory(location, embedder=None, **options) -> Memory:
    """Open the memory at ``location``: a directory (embedded) or a ``postgresql://`` URL.

    ``options`` go to :meth:`MemoryStore.open <cleo_rules.retrieval.store.MemoryStore.open>`
    or :meth:`PgStore.open <cleo_rules.retrieval.postgres.PgStore.open>` as
    given: both take ``options`` (a :class:`~cleo_rules.retrieval.options.StoreOptions`)
    and its fields as keywords (``model_path``, ``score_floor``, the chunk
    settings, ``ef_search``, ``M``, ``ef_construction``, ``create`` and
    ``read_only``); a URL also ``tenant``, overriding its ``?tenant=``,
    ``database``, a shared connection pool, ``timeout`` and ``pool_size``.
    This is the one opener: every command that takes ``--db`` opens its
    store here, and so does :meth:`Recall.open <cleo_rules.turn.Recall.open>`.
    """
    if is_postgres_url(location):
        with postgres_imports():
            from .postgres import PgStore
        return PgStore.open(location, embedder, **options)
    from .store import MemoryStore

    return MemoryStore.open(Path(location), embedder, **options)


def describe_location(location) -> str:
    """The location as it may be shown: a URL without its password."""
    if is_postgres_url(location):
        from .pg_schema import display_url

        return display_url(location)
    return str(location)
