"""MemoryBase, StoreOptions and the Memory protocol: what a backend provides is enough to be a memory.

``ListMemory`` (tests/helpers/list_memory.py) is a third backend, kept in Python lists, that provides only
what :mod:`cleo_rules.retrieval.base` lists as a backend's part; everything
else (adding, deleting, get, search, the embedder and its checks, the
argument checks, the context manager) comes from the base, and a turn runs
against it.
"""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cleo_rules.errors import IngestError, StoreError
from cleo_rules.retrieval import Memory, MemoryBase, MemoryStore, StoreOptions
from cleo_rules.retrieval.options import StoreKeywords
from cleo_rules.turn import Recall

from helpers.embedders import ToyEmbedder
from helpers.list_memory import ListMemory


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
