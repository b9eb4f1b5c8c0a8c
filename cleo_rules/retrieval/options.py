"""How a memory store is opened: one set of options, the same for both backends.

:class:`StoreOptions` is what :meth:`MemoryStore.open
<cleo_rules.retrieval.store.MemoryStore.open>`, :meth:`PgStore.open
<cleo_rules.retrieval.postgres.PgStore.open>` and
:func:`~cleo_rules.retrieval.locate.open_memory` take, as a value or as
keywords (:class:`StoreKeywords`, the same names)::

    options = StoreOptions(score_floor=0.2, read_only=True)
    MemoryStore.open("memory/", options=options)
    open_memory("postgresql://cleo@db/cleo", options=options, tenant="acme")
    MemoryStore.open("memory/", score_floor=0.2, read_only=True)      # the same

Keywords given beside ``options`` replace its fields. Impossible values are
a ``ValueError`` when the options are made, before anything is opened.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from .chunk import DEFAULT_CHUNK_MAX_CHARS, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, check_chunking

__all__ = ["StoreKeywords", "StoreOptions"]


@dataclass(frozen=True)
class StoreOptions:
    """The options of a memory store, whichever its backend.

    ``model_path``: the embedding model to use when no embedder is given
    (default: the bundled all-MiniLM-L6-v2). ``score_floor``: search results
    whose cosine similarity is lower are dropped. ``chunk_size`` and
    ``chunk_overlap`` (words) and ``chunk_max_chars`` (characters) shape new
    snippets and passages. ``M`` and ``ef_construction`` shape the HNSW
    indexes; ``ef_search`` is the search width. ``create``: make the store
    when there is none. ``read_only``: never write (implies not ``create``).
    """

    model_path: str | Path | None = None
    score_floor: float = 0.0
    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
    chunk_max_chars: int = DEFAULT_CHUNK_MAX_CHARS
    ef_search: int = 64
    M: int = 16
    ef_construction: int = 200
    create: bool = True
    read_only: bool = False

    def __post_init__(self):
        check_chunking(self.chunk_size, self.chunk_overlap, self.chunk_max_chars)
        for name, low in (("ef_search", 1), ("M", 2), ("ef_construction", 4)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer of at least {low}, not {value!r}")
        object.__setattr__(self, "score_floor", float(self.score_floor))

    @classmethod
    def of(cls, options: StoreOptions | None = None, **keywords) -> StoreOptions:
        """``options`` (or the defaults) with the fields named in ``keywords`` replaced.

        An unknown keyword is a ``TypeError``, as for any function.
        """
        if options is not None and not isinstance(options, StoreOptions):
            raise TypeError(f"options must be StoreOptions, not {type(options).__name__}")
        unknown = sorted(set(keywords) - _FIELDS)
        if unknown:
            raise TypeError(f"unexpected store option(s) {', '.join(unknown)}; known: {', '.join(sorted(_FIELDS))}")
        if options is None:
            return cls(**keywords)
        return dataclasses.replace(options, **keywords) if keywords else options

    @property
    def writes(self) -> bool:
        """Whether a store opened with these options may create its storage (``create`` and not ``read_only``)."""
        return self.create and not self.read_only


class StoreKeywords(TypedDict, total=False):
    """:class:`StoreOptions`' fields as keywords of ``open()`` (for type checkers; a test keeps the two equal)."""

    model_path: str | Path | None
    score_floor: float
    chunk_size: int
    chunk_overlap: int
    chunk_max_chars: int
    ef_search: int
    M: int
    ef_construction: int
    create: bool
    read_only: bool


_FIELDS = frozenset(f.name for f in dataclasses.fields(StoreOptions))
