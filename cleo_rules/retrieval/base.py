"""What both memory backends share: the embedder and its checks, the write preamble, the search around the backend.

:class:`MemoryBase` is the base of :class:`~cleo_rules.retrieval.store.MemoryStore`
(SQLite and hnswlib) and :class:`~cleo_rules.retrieval.postgres.PgStore`
(PostgreSQL). It holds a store's :class:`~cleo_rules.retrieval.options.StoreOptions`
and its embedder (made on first use), checks the embedder against the model
and the embedding backend the stored vectors came from
(:mod:`~cleo_rules.retrieval.provenance`), checks every argument, plans each
write (what changed, by content hash), embeds it and times it, and turns a
backend's hits into responses. It gives every member of the
:class:`~cleo_rules.retrieval.memory.Memory` protocol but five, and
``model_name``, ``dim`` and the context manager.

A backend provides (each documented at its stub below):

* ``path`` and ``traces``: where the store is (for messages), and its
  :class:`~cleo_rules.trace.TraceSink`;
* ``backend_errors`` and ``_store_error``: its driver's errors, and each as
  the :class:`~cleo_rules.errors.StoreError` that says what to do;
* ``_stored_model``, ``_embedding_check`` and ``_sample_piece``: the model
  and vector length of the stored vectors, what the store records of the
  embedder that made them, and one stored piece (for a store that recorded
  no probe vector);
* ``_existing_hashes``, ``_commit`` (and, if a commit leaves work,
  ``_apply``; ``_after_write`` if anything follows a write) and
  ``_delete``: the writes;
* ``_search_query``, ``_search_vectors`` and ``_fetch_items``: the nearest
  pieces, and pieces by item id, with their titles, dates and texts;
* ``ingest_jsonl``, ``rebuild``, ``stats`` (over :meth:`MemoryBase._stats`)
  and ``close``: the rest of the protocol, which differ too much to share.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from ..errors import IngestError, StoreError
from .encoding import check_model, describe_embedder, encode, load_model
from .memory import Item, Result, SearchResponse, check_k, check_query, check_sources
from .options import StoreOptions
from .provenance import EmbeddingCheck, Recorded, embedder_provenance, meta_rows, probe_vector
from .records import PreparedItem, invalid_argument, plan_writes, prepare, validate_record
from .tables import Source, source_of_item

__all__ = ["MemoryBase", "Status", "guarded", "source_names", "ranked"]

Status = str  # "added", "updated" or "unchanged"

_F = TypeVar("_F", bound=Callable)


def guarded(method: _F) -> _F:
    """A method of a :class:`MemoryBase` whose driver errors become :class:`StoreError` (``_store_error``)."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except self.backend_errors as exc:
            raise self._store_error(exc) from exc

    return cast(_F, guarded)


def source_names(sources: Iterable[Source]) -> tuple[str, ...]:
    """The sources as the strings a response carries."""
    return tuple(s.value for s in sources)


ORDER = {source.value: n for n, source in enumerate(Source)}
"""Each source's place: how ties in score are broken (and the SQLite metadata statement's parameter order)."""


def ranked(found: list[tuple[float, int, int, Any]], k: int) -> list[Any]:
    """The ``k`` best of ``found``, each ``(-score, source's ORDER, label, what to keep)``: best score first,
    ties broken by source then label, so the same store always gives the same order."""
    found.sort(key=lambda t: t[:3])
    return [t[3] for t in found[:k]]


class MemoryBase:
    """The part of a memory store that does not depend on where it keeps its data (see the module's notes)."""

    path: Any
    backend_errors: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init__(self, embedder, options: StoreOptions, *, read_only: bool):
        self.options = options
        self.read_only = read_only
        self.score_floor = options.score_floor
        self.chunk_size = options.chunk_size
        self.chunk_overlap = options.chunk_overlap
        self.chunk_max_chars = options.chunk_max_chars
        self.ef_search = options.ef_search
        self.M = options.M
        self.ef_construction = options.ef_construction
        self._embedder = embedder
        self._model_path = options.model_path
        self._closed = False
        self._embedding = EmbeddingCheck(self.path, Recorded.from_meta({}))  # read when the store opens

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- what a backend provides ---------------------------------------------------------------

    @property
    def traces(self):
        """Where turn traces are kept (a :class:`~cleo_rules.trace.TraceSink`)."""
        raise NotImplementedError

    def _store_error(self, exc: BaseException) -> StoreError:
        """``exc``, one of ``backend_errors``, as the :class:`StoreError` that says what to do."""
        raise NotImplementedError

    def _stored_model(self) -> tuple[str | None, int | None]:
        """The model and the vector length of the stored vectors (``(None, None)`` while there are none)."""
        raise NotImplementedError

    def _embedding_check(self) -> EmbeddingCheck:
        """The check of an embedder against what the store records, read now."""
        raise NotImplementedError

    def _sample_piece(self) -> tuple[str, np.ndarray] | None:
        """The text and stored vector of the first snippet (or passage), None while there is none."""
        raise NotImplementedError

    def _existing_hashes(self, items: Sequence[PreparedItem]) -> dict[tuple[Source, str], str]:
        """The stored content hash of each of ``items`` that the store holds, by :attr:`PreparedItem.key`."""
        raise NotImplementedError

    def _commit(self, todo: Sequence[PreparedItem], vectors: np.ndarray) -> Any:
        """Write ``todo`` over their old versions, their pieces taking ``vectors`` in order, in one transaction,
        recording the model with the first vectors; return what is left to apply once committed (None: nothing)."""
        raise NotImplementedError

    def _apply(self, pending) -> None:
        """Apply what a commit left (``_commit``'s result, when not None): the embedded store's in-memory indexes."""

    def _after_write(self) -> None:
        """After an item was added or deleted: the embedded store saves its indexes when due."""

    def _delete(self, source: Source, id: str) -> bool:
        """Remove one conversation or document with its pieces (and messages); True if it existed."""
        raise NotImplementedError

    def _search_query(self, query: str, k: int, sources: tuple[Source, ...],
                      floor: float | None) -> tuple[Sequence[Result], dict, float]:
        """The ``k`` best results for ``query``, the timings (``embed``, ``search``, ``metadata``) and the seconds
        spent loading the model (0 when it was loaded)."""
        raise NotImplementedError

    def _search_vectors(self, vectors: np.ndarray, k: int, sources: tuple[Source, ...],
                        floor: float | None) -> list[SearchResponse]:
        """One response per row of ``vectors`` (shape ``(n, dim)``)."""
        raise NotImplementedError

    def _fetch_items(self, wanted: dict[Source, list[str]]) -> Iterable[tuple]:
        """Rows ``(source, label, item, parent id, title, date, text)`` of the pieces with these item ids."""
        raise NotImplementedError

    def ingest_jsonl(self, path_or_lines, strict: bool = False, progress=None, *, batch_size: int = 32):
        raise NotImplementedError

    def rebuild(self, *, reembed: bool = False) -> dict:
        raise NotImplementedError

    def stats(self) -> dict:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- open, writable ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("memory store is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise StoreError(f"memory store {self.path} is open read-only; open it without read_only=True "
                             "to change it", code="E305")

    # -- the embedder, and what made the stored vectors ------------------------------------------

    @property
    def embedder(self):
        """The embedder, created on first use when none was given."""
        if self._embedder is None:
            from .embed import Embedder

            self._embedder = Embedder(self._model_path)
        return self._embedder

    @property
    def model_name(self) -> str | None:
        """The model that made the stored vectors (None while the store has none)."""
        return self._stored_model()[0]

    @property
    def dim(self) -> int | None:
        """Length of the stored vectors (None while the store has none)."""
        return self._stored_model()[1]

    def _check_model(self, embedder, stored: str | None = None) -> None:
        """Refuse ``embedder`` when the stored vectors (of model ``stored``, default the store's) are another's."""
        check_model(embedder, stored if stored is not None else self.model_name, self.path)

    def _load_model(self) -> float:
        """Load the embedding model if it is not loaded yet; return the seconds spent."""
        return load_model(self.embedder)

    def _refresh_embedding(self) -> None:
        """Read again what made the stored vectors (a write or a re-embed recorded it)."""
        self._embedding = self._embedding_check()

    def _encode(self, texts: list[str]) -> np.ndarray:
        """``texts`` embedded, once the embedder is known to make vectors like the stored ones."""
        embedder = self.embedder
        self._check_model(embedder)
        if self._embedding.recorded.model is None and self.model_name is not None:  # another process wrote
            self._refresh_embedding()
        self._embedding.before_encode(embedder, self._sample_piece)
        return encode(embedder, texts)

    def _embedding_rows(self, embedder=None) -> list[tuple[str, str | None]]:
        """The meta rows that record the embedder (this store's by default), with its probe vector (encodes it)."""
        embedder = self.embedder if embedder is None else embedder
        return meta_rows(embedder_provenance(embedder), probe_vector(embedder))

    def _embedding_stats(self, recorded: Recorded | None = None) -> dict:
        """``stats()["embedding"]``: what the store records, and the embedder this process has."""
        recorded = self._embedding.recorded if recorded is None else recorded
        return {"stored": recorded.describe(), "embedder": describe_embedder(self.embedder)}

    # -- writing -------------------------------------------------------------------------------

    def _prepare(self, record: dict) -> PreparedItem:
        return prepare(record, self.chunk_size, self.chunk_overlap, self.chunk_max_chars)

    @guarded
    def _write(self, items: Sequence[PreparedItem], timings: dict | None = None) -> list[Status]:
        """Store prepared items (ids unique within the call); return each one's status.

        Statuses are ``"added"``, ``"updated"`` or ``"unchanged"``. Embeds the
        changed items in one batch and commits them in one transaction
        (``_commit``). ``timings`` gains the seconds of ``sql``, ``embed``,
        ``index`` and ``model_load``.
        """
        self._check_writable()
        timings = timings if timings is not None else {}
        t0 = time.perf_counter()
        statuses, todo = plan_writes(items, self._existing_hashes(items))
        t1 = time.perf_counter()
        if not todo:
            timings["sql"] = timings.get("sql", 0.0) + t1 - t0
            return statuses
        loading = self._load_model()
        if loading:
            timings["model_load"] = timings.get("model_load", 0.0) + loading
        t_encode = time.perf_counter()
        vectors = self._encode([piece.text for item in todo for piece in item.pieces])
        t2 = time.perf_counter()
        had_model = self.model_name is not None
        pending = self._commit(todo, vectors)
        if not had_model:  # this write recorded the model (or found another process's): read what made the vectors
            self._refresh_embedding()
        t3 = time.perf_counter()
        timings["sql"] = timings.get("sql", 0.0) + (t1 - t0) + (t3 - t2)
        timings["embed"] = timings.get("embed", 0.0) + (t2 - t_encode)
        if pending is None:
            timings.setdefault("index", 0.0)
        else:
            self._apply(pending)
            timings["index"] = timings.get("index", 0.0) + (time.perf_counter() - t3)
        return statuses

    @guarded
    def _add(self, record: dict) -> Status:
        self._check_writable()
        problems = validate_record(record)
        if problems:
            message, described = invalid_argument(record, problems)
            raise IngestError(message, described)
        status = self._write([self._prepare(record)])[0]
        self._after_write()
        return status

    def add_conversation(self, id: str, title: str, date: str, messages) -> Status:
        """Store a conversation (``messages``: ``[{"role", "text"}, ...]``) and its snippets.

        Re-adding an id replaces the old conversation. Returns ``"added"``,
        ``"updated"`` or ``"unchanged"``; raises
        :class:`~cleo_rules.errors.IngestError` when an argument is malformed.
        """
        messages = list(messages) if isinstance(messages, (list, tuple)) else messages
        return self._add({"type": "conversation", "id": id, "title": title, "date": date, "messages": messages})

    def add_document(self, id: str, title: str, date: str, text: str) -> Status:
        """Store a document and its passages; re-adding an id replaces it. See :meth:`add_conversation`."""
        return self._add({"type": "document", "id": id, "title": title, "date": date, "text": text})

    def delete_conversation(self, id: str) -> bool:
        """Remove a conversation, its messages and snippets; True if it existed.

        Its snippets stop appearing in search results at once, from every process.
        """
        return self._delete(Source.CONVERSATION, id)

    def delete_document(self, id: str) -> bool:
        """Remove a document and its passages; True if it existed."""
        return self._delete(Source.DOCUMENT, id)

    # -- reading -------------------------------------------------------------------------------

    @guarded
    def get(self, items: Iterable[str]) -> dict[str, Item]:
        """The snippets and passages with these item ids (:attr:`Result.item`), in the order asked.

        Each comes with its conversation's or document's title and date, all
        from one statement. Ids that are not in the store (deleted since,
        or never stored) are left out.
        """
        self._check_open()
        if isinstance(items, (str, bytes)):
            raise TypeError("get() takes an iterable of item ids, not a single string")
        wanted: dict[Source, list[str]] = {s: [] for s in Source}
        order = list(dict.fromkeys(items))
        for item in order:
            if not isinstance(item, str):
                raise TypeError(f"item ids are strings, not {type(item).__name__}")
            source = source_of_item(item)
            if source is not None and "\x00" not in item:  # no stored id holds a NUL: ingest refuses one
                wanted[source].append(item)
        if not any(wanted.values()):
            return {}
        found = {item: Item(source, pid, item, title, date, text)
                 for source, _, item, pid, title, date, text in self._fetch_items(wanted)}
        return {item: found[item] for item in order if item in found}

    @guarded
    def search(self, query: str, k: int = 5, sources: str | Iterable[str] = tuple(Source),
               floor: float | None = None) -> SearchResponse:
        """The ``k`` snippets and passages most similar to ``query``, best first.

        ``sources`` limits the search to ``"conversation"`` snippets and/or
        ``"document"`` passages. Results scoring below ``floor`` (default: the
        store's ``score_floor``) are dropped. Title, date and text of all
        results come from one statement. A query that is not a string, or
        ``k`` that is not an integer, is a ``TypeError``; an empty query,
        ``k < 1`` or an unknown source a ``ValueError``. A lone surrogate in
        the query (not Unicode) is searched as U+FFFD. ``timings`` holds the
        seconds of ``embed``, ``search``, ``metadata`` and ``total``, and
        ``model_load`` when this search loaded the model (not in ``total``).
        """
        self._check_open()
        query = check_query(query)
        k = check_k(k)
        chosen = check_sources(sources)
        start = time.perf_counter()
        results, timings, loading = self._search_query(query, k, chosen, floor)
        timings["total"] = time.perf_counter() - start - loading
        if loading:
            timings["model_load"] = loading
        return SearchResponse(query, k, source_names(chosen), tuple(results), timings)

    @guarded
    def search_vectors(self, vectors, k: int = 5, sources: str | Iterable[str] = tuple(Source),
                       floor: float | None = None):
        """Search with precomputed query vectors.

        ``vectors`` of shape ``(dim,)`` gives one :class:`SearchResponse`;
        shape ``(n, dim)`` gives a list of ``n`` of them, all answered by the
        same statements. Any other shape is a ``ValueError``.
        """
        self._check_open()
        k = check_k(k)
        chosen = check_sources(sources)
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim not in (1, 2):
            raise ValueError(f"query vectors must have shape (dim,) or (n, dim), not {array.shape}")
        single = array.ndim == 1
        responses = self._search_vectors(array.reshape(1, -1) if single else array, k, chosen, floor)
        return responses[0] if single else responses

    def _check_dim(self, vectors: np.ndarray) -> None:
        """Refuse query vectors of another length than the stored ones."""
        dim = self.dim
        if dim is not None and len(vectors) and vectors.shape[1] != dim:
            raise StoreError(f"query vectors have {vectors.shape[1]} dimensions; the store's have {dim}")

    def _floor(self, floor: float | None) -> float:
        return self.score_floor if floor is None else float(floor)

    # -- reporting -----------------------------------------------------------------------------

    def _stats(self, head: dict, counts: Sequence[int], db_bytes: int, indexes: dict,
               recorded: Recorded | None = None) -> dict:
        """``stats()``: ``head`` (where the store is), then what every backend reports, in one order."""
        return {
            **head,
            "conversations": counts[0],
            "messages": counts[1],
            "snippets": counts[2],
            "documents": counts[3],
            "passages": counts[4],
            "model": self.model_name,
            "dim": self.dim,
            "score_floor": self.score_floor,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "chunk_max_chars": self.chunk_max_chars,
            "read_only": self.read_only,
            "db_bytes": int(db_bytes),
            "indexes": indexes,
            "embedding": self._embedding_stats(recorded),
        }
