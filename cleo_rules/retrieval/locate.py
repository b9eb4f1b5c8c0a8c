"""Opening a memory by its location: a directory is the embedded store, a URL the backend its scheme names.

:func:`open_memory` is what ``Recall.open``, the CLI's ``--db`` and the
service's ``--memory`` go through::

    open_memory("memory/")                                    # MemoryStore: SQLite + hnswlib
    open_memory("postgresql://cleo@db.internal/cleo")         # PgStore, tenant "default"
    open_memory("postgresql://cleo@db.internal/cleo?tenant=acme")

The backend of each scheme is registered in :mod:`cleo_rules.memory_backends`
and imported only for a location of its own, so the embedded store never
imports psycopg; without the ``[postgres]`` extra a URL raises
:class:`~cleo_rules.errors.MissingExtra`.
"""

from __future__ import annotations

from ..memory_backends import backend_for
from .memory import Memory

__all__ = ["describe_location", "open_memory"]


def open_memory(location, embedder=None, **options) -> Memory:
    """Open the memory at ``location``: a directory (embedded), a ``postgresql://`` URL, or a registered scheme's.

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
    return backend_for(location).load().open(location, embedder, **options)


def describe_location(location) -> str:
    """The location as it may be shown: a URL without its password."""
    return backend_for(location).load().describe(location)
