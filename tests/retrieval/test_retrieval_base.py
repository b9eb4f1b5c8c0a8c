"""MemoryBase, StoreOptions and the Memory protocol: what a backend provides is enough to be a memory.

``ListMemory`` is a third backend, kept in Python lists, that provides only
what :mod:`cleo_rules.retrieval.base` lists as a backend's part; everything
else (adding, deleting, get, search, the embedder and its checks, the
argument checks, the context manager) comes from the base, and a turn runs
against it.
"""

from __future__ import annotations

import dataclasses
import time
import typing

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cleo_rules.errors import IngestError, StoreError
from cleo_rules.retrieval import Memory, MemoryBase, MemoryStore, Result, StoreOptions
from cleo_rules.retrieval.base import names, ranked
from cleo_rules.retrieval.ingest import ingest_lines, open_lines
from cleo_rules.retrieval.options import StoreKeywords
from cleo_rules.retrieval.provenance import EmbeddingCheck, Recorded
from cleo_rules.retrieval.tables import TABLES, Source
from cleo_rules.turn import Recall

from helpers.embedders import ToyEmbedder


class ListTraces:
    def __init__(self):
        self.rows: list[dict] = []

    def write(self, row: dict) -> int:
        self.rows.append(dict(row, id=len(self.rows) + 1))
        return len(self.rows)

    def read(self, *, since=None, searched_only=False):
        return iter([r for r in self.rows if (not since or r["time"] >= since)
                     and (r["query"] is not None or not searched_only)])


class ListMemory(MemoryBase):
    """A backend in lists: the part MemoryBase's notes say a backend provides, and nothing more."""

    backend_errors = (KeyError,)

    def __init__(self, embedder, **keywords):
        self.path = "the lists"
        super().__init__(embedder, StoreOptions.of(**keywords), read_only=False)
        self.parents: dict[tuple[Source, str], tuple[str, str, str]] = {}  # title, date, content hash
        self.pieces: dict[int, tuple[Source, str, str, str, np.ndarray]] = {}  # label: source, item, parent, text
        self.meta: dict = {}
        self.sink = ListTraces()

    @property
    def traces(self):
        return self.sink

    def _store_error(self, exc):
        return StoreError(f"the lists lost {exc}")

    def _stored_model(self):
        return self.meta.get("model"), self.meta.get("dim")

    def _embedding_check(self):
        return EmbeddingCheck(self.path, Recorded.from_meta(self.meta))

    def _sample_piece(self):
        return next(((text, vector) for _, _, _, text, vector in self.pieces.values()), None)

    def _existing_hashes(self, items):
        return {item.key: self.parents[item.key][2] for item in items if item.key in self.parents}

    def _commit(self, todo, vectors):
        if not self.meta:
            self.meta = {"model": self.embedder.model_name, "dim": vectors.shape[1], **dict(self._embedding_rows())}
        row = 0
        for item in todo:
            self._delete(item.source, item.id)
            self.parents[item.key] = (item.title, item.date, item.content_hash)
            for n, piece in enumerate(item.pieces):
                self.pieces[len(self.pieces) + row + 1] = (item.source, TABLES[item.source].item_id(item.id, n),
                                                           item.id, piece.text, vectors[row])
                row += 1

    def _delete(self, source, id):
        self._check_writable()
        for label in [label for label, p in self.pieces.items() if p[0] is source and p[2] == id]:
            del self.pieces[label]
        return self.parents.pop((source, id), None) is not None

    def _search_query(self, query, k, sources, floor):
        loading = self._load_model()
        start = time.perf_counter()
        vector = self._encode([query])
        embedded = time.perf_counter()
        (response,) = self._search_vectors(vector, k, sources, floor)
        return response.results, {"embed": embedded - start, "search": time.perf_counter() - embedded,
                                  "metadata": 0.0}, loading

    def _search_vectors(self, vectors, k, sources, floor):
        from cleo_rules.retrieval.base import ORDER
        from cleo_rules.retrieval.memory import SearchResponse

        self._check_dim(vectors)
        responses = []
        for vector in vectors:
            found = []
            for label, (source, item, pid, text, stored) in self.pieces.items():
                score = float(vector @ stored / (np.linalg.norm(vector) * np.linalg.norm(stored) or 1.0))
                title, date, _ = self.parents[(source, pid)]
                if source in sources and score >= self._floor(floor):
                    found.append((-score, ORDER[source], label, Result(source, pid, item, title, date, text, score)))
            responses.append(SearchResponse(None, k, names(sources), tuple(ranked(found, k)), {"total": 0.0}))
        return responses

    def _fetch_items(self, wanted):
        for label, (source, item, pid, text, _) in self.pieces.items():
            if item in wanted[source]:
                title, date, _ = self.parents[(source, pid)]
                yield source.value, label, item, pid, title, date, text

    def ingest_jsonl(self, path_or_lines, strict=False, progress=None, *, batch_size=32):
        lines, name, _ = open_lines(path_or_lines)
        return ingest_lines(lines, name, prepare=self._prepare, write=self._write, checkpoint=lambda timings: None,
                            strict=strict, progress=progress, batch_size=batch_size)

    def rebuild(self, *, reembed=False):
        return {"conversation": 0, "document": 0, "seconds": 0.0}

    def stats(self):
        return self._stats({"path": self.path}, [0] * 5, 0, {})

    def close(self):
        self._closed = True


MEMBERS = {"traces", "add_conversation", "add_document", "delete_conversation", "delete_document", "search",
           "search_vectors", "get", "ingest_jsonl", "stats", "rebuild", "close"}
BACKEND_OWN = {"traces", "ingest_jsonl", "stats", "rebuild", "close"}


def test_the_protocol_is_twelve_members_and_the_base_gives_all_but_five():
    declared = {n for n in vars(Memory) if not n.startswith("_")} | ({"traces"} & set(vars(Memory)))
    assert declared == MEMBERS
    given_by_base = {n for n in MEMBERS if n in vars(MemoryBase)
                     and getattr(vars(MemoryBase)[n], "__code__", None) is not None
                     and "NotImplementedError" not in vars(MemoryBase)[n].__code__.co_names}
    assert given_by_base == MEMBERS - BACKEND_OWN
    for derived in ("model_name", "dim", "__enter__", "__exit__", "embedder"):  # not in the protocol, on both
        assert derived in vars(MemoryBase) and derived not in MEMBERS


def test_a_third_backend_made_of_the_hooks_alone_is_a_memory(default_pack):
    with ListMemory(ToyEmbedder(), score_floor=0.1) as memory:
        assert isinstance(memory, Memory) and repr(memory) == "ListMemory('the lists')"
        assert memory.add_document("d1", "Price list", "2024-01-02", "Call-out fee 45 pounds.") == "added"
        assert memory.add_document("d1", "Price list", "2024-01-02", "Call-out fee 45 pounds.") == "unchanged"
        assert memory.add_conversation("c1", "Van quotes", "2024-02-03", [
            {"role": "user", "text": "Which van insurer is cheaper?"}]) == "added"
        assert (memory.model_name, memory.dim) == ("toy-bag-of-words-64", 64)
        hits = memory.search("what is the call-out fee?", k=2)
        assert [r.item for r in hits.results][0] == "d1#p0" and hits.sources == ("conversation", "document")
        assert set(hits.timings) == {"embed", "search", "metadata", "total"}
        assert list(memory.get(["c1#s0", "d1#p0", "nope"])) == ["c1#s0", "d1#p0"]
        turn = Recall(memory, default_pack, k=1).turn("How much is the call-out fee?")
        assert turn.decision.query and turn.results == memory.search(turn.decision.query, k=1).results
        assert memory.traces.rows[0]["id"] == turn.trace_id and memory.traces.rows[0]["n_results"] == 1
        assert memory.stats()["embedding"]["stored"]["backend"] == "custom"
        assert memory.delete_document("d1") and memory.get(["d1#p0"]) == {}
        report = memory.ingest_jsonl(['{"type": "document", "id": "d2", "title": "T", "date": "2024-01-01", '
                                      '"text": "Boiler service every spring."}', "not json"])
        assert report.added == 1 and len(report.problems) == 1


@pytest.mark.parametrize("call, error, message", [
    (lambda m: m.search("  "), ValueError, "non-empty string"),
    (lambda m: m.search(b"fee"), TypeError, "non-empty string, not bytes"),
    (lambda m: m.search("fee", k=True), TypeError, "positive integer"),
    (lambda m: m.search("fee", sources="emails"), ValueError, "sources must be among"),
    (lambda m: m.search_vectors(np.ones((1, 1, 64))), ValueError, "shape"),
    (lambda m: m.get("d1#p0"), TypeError, "not a single string"),
    (lambda m: m.add_document("d1", "T", "2024-01-01", ""), IngestError, "invalid document"),
    (lambda m: m.search_vectors(np.ones(3)), StoreError, "query vectors have 3 dimensions; the store's have 64"),
])
def test_the_base_checks_every_argument_for_every_backend(call, error, message):
    memory = ListMemory(ToyEmbedder())
    memory.add_document("d0", "T", "2024-01-01", "Boiler service every spring.")
    with pytest.raises(error, match=message):
        call(memory)


def test_a_backend_error_becomes_a_store_error_and_a_closed_store_refuses_work():
    memory = ListMemory(ToyEmbedder())
    memory.add_document("d0", "T", "2024-01-01", "Boiler service every spring.")
    memory.parents.clear()  # the pieces' parents are gone: looking one up is a KeyError inside the backend
    with pytest.raises(StoreError, match="the lists lost") as info:
        memory.search("boiler")
    assert isinstance(info.value.__cause__, KeyError)
    memory.close()
    with pytest.raises(StoreError, match="memory store is closed"):
        memory.add_document("d1", "T", "2024-01-01", "x")


def test_the_base_refuses_an_embedder_of_another_model_before_encoding():
    memory = ListMemory(ToyEmbedder())
    memory.add_document("d0", "T", "2024-01-01", "Boiler service every spring.")

    class Other(ToyEmbedder):
        model_name = "another-model"

        def encode(self, texts):
            raise AssertionError("never reached: the model is checked first")

    memory._embedder = Other()
    with pytest.raises(StoreError, match="holds vectors from model 'toy-bag-of-words-64'"):
        memory.search("boiler")


# -- StoreOptions ---------------------------------------------------------------------------------


def test_the_keywords_type_lists_every_option():
    assert typing.get_type_hints(StoreKeywords).keys() == {f.name for f in dataclasses.fields(StoreOptions)}
    assert StoreOptions.of() == StoreOptions() and StoreOptions.of(None, read_only=True).read_only
    options = StoreOptions(chunk_size=50, chunk_overlap=10)
    assert StoreOptions.of(options) is options and StoreOptions.of(options, M=8) == dataclasses.replace(options, M=8)
    assert StoreOptions(read_only=True).writes is False and StoreOptions(create=False).writes is False
    assert StoreOptions(score_floor=1).score_floor == 1.0 and isinstance(StoreOptions(score_floor=1).score_floor, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.chunk_size = 10  # type: ignore[misc]


@given(size=st.integers(-3, 300), overlap=st.integers(-3, 300), max_chars=st.integers(-3, 5000),
       m=st.integers(-3, 40))
def test_options_are_accepted_exactly_when_a_store_could_use_them(size, overlap, max_chars, m):
    possible = size >= 1 and 0 <= overlap < size and max_chars >= 1 and m >= 2
    try:
        StoreOptions(chunk_size=size, chunk_overlap=overlap, chunk_max_chars=max_chars, M=m)
    except ValueError:
        assert not possible
    else:
        assert possible


def test_the_embedded_store_takes_options_as_a_value(tmp_path):
    options = StoreOptions(chunk_size=30, chunk_overlap=0, read_only=False)
    with MemoryStore.open(tmp_path / "m", ToyEmbedder(), options=options) as store:
        assert store.options is options and store.chunk_size == 30
    with pytest.raises(TypeError, match="unexpected store option"):
        MemoryStore.open(tmp_path / "n", ToyEmbedder(), tenant="acme")  # a PostgreSQL keyword, not an option
    assert not (tmp_path / "n").exists()
