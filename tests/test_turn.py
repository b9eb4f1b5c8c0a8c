"""One turn end to end against a small in-test memory."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from cleo_rules.retrieval import MemoryStore
from cleo_rules.trace import TABLE, read_traces
from cleo_rules.turn import Recall, Turn

pytestmark = pytest.mark.model

CONVERSATIONS = [
    ("van-quotes", "Comparing van insurance quotes", "2024-02-03", [
        {"role": "user", "text": "I have two quotes for insuring the van: Direct Line at 1,180 and Zego at 960."},
        {"role": "assistant", "text": "Zego is cheaper but excludes tools left in the van overnight."},
        {"role": "user", "text": "The tools matter, I keep about 3,000 pounds of kit in there."},
        {"role": "assistant", "text": "Then the Direct Line policy with tools cover is the safer choice."},
    ]),
    ("boiler", "Boiler engineer for the office", "2024-03-10", [
        {"role": "user", "text": "The office boiler keeps losing pressure. Which engineer should we call?"},
        {"role": "assistant", "text": "Last time Hughes Heating fixed the expansion vessel; Pipeline Gas is the other local firm."},
    ]),
    ("website", "Redesigning the website", "2023-11-21", [
        {"role": "user", "text": "The website looks dated and is slow on phones."},
        {"role": "assistant", "text": "A simpler template and compressed photos would fix most of the speed problem."},
    ]),
]
DOCUMENTS = [
    ("price-list", "Price list 2024", "2024-01-02",
     "Call-out fee 45 pounds. Hourly rate 38 pounds. Weekend work is charged at time and a half."),
    ("van-policy", "Van insurance policy schedule", "2024-02-20",
     "Direct Line commercial van policy. Tools in transit covered up to 5,000 pounds. Excess 250 pounds."),
]


def fill(store: MemoryStore) -> MemoryStore:
    for cid, title, date, messages in CONVERSATIONS:
        store.add_conversation(cid, title, date, messages)
    for did, title, date, text in DOCUMENTS:
        store.add_document(did, title, date, text)
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder):
    s = fill(MemoryStore.open(tmp_path_factory.mktemp("memory"), embedder=embedder))
    yield s
    s.close()


@pytest.fixture
def recall(store, default_pack):
    return Recall(store, default_pack, k=3)


class Spy:
    """Wraps ``store.search`` and records the queries it was given."""

    def __init__(self, store, monkeypatch):
        self.queries = []
        original = store.search

        def search(query, *args, **kwargs):
            self.queries.append(query)
            return original(query, *args, **kwargs)

        monkeypatch.setattr(store, "search", search)


def trace_row(store, trace_id):
    return next(r for r in read_traces(store) if r["id"] == trace_id)


def test_skipped_turn_makes_no_search_says_so_and_traces_a_null_query(recall, store, default_pack, monkeypatch):
    spy = Spy(store, monkeypatch)
    t = recall.turn("Yes.", history=["Compare the two van insurance quotes"])
    assert isinstance(t, Turn)
    assert t.kind == "skip" and t.query is None and t.results == ()
    assert spy.queries == []
    assert t.context == default_pack.context["skipped"]
    assert "no memory search was made" in t.context.lower()
    row = trace_row(store, t.trace_id)
    assert row["query"] is None and row["kind"] == "skip" and row["message"] == "Yes."
    assert row["results"] == [] and row["n_results"] == 0


def test_follow_up_trace_records_the_combined_query_not_the_raw_message(recall, store, monkeypatch):
    spy = Spy(store, monkeypatch)
    history = ["Compare the two van insurance quotes"]
    t = recall.turn("Yes, go with the second one.", history=history)
    assert t.kind == "follow_up"
    assert t.decision.anchor == history[0]
    assert spy.queries == [t.query]
    assert history[0] in t.query and "Yes, go with the second one." in t.query
    row = trace_row(store, t.trace_id)
    assert row["query"] == t.query != row["message"] == "Yes, go with the second one."
    assert row["anchor"] == history[0]
    assert row["rule"] == t.rule and row["pack"] == "cleo-en" and row["pack_version"]
    assert [r["item"] for r in row["results"]] == [r.item for r in t.results]
    assert {r["source"] for r in row["results"]} <= {"conversation", "document"}
    assert all(isinstance(r["score"], float) for r in row["results"])
    for stage in ("classify", "embed", "search", "metadata", "context"):
        assert row[f"{stage}_s"] is not None


@pytest.mark.parametrize("message", ["We tried that one already.", "I said no to that one."])
def test_correction_is_never_combined(recall, store, monkeypatch, message):
    spy = Spy(store, monkeypatch)
    history = ["Which engineer should we call about the office boiler?", "What about Hughes Heating?"]
    t = recall.turn(message, history=history)
    assert t.kind == "correction"
    assert t.query == message and t.decision.anchor is None
    assert spy.queries == [message]
    row = trace_row(store, t.trace_id)
    assert row["query"] == message and row["anchor"] is None


def test_snippets_and_passages_in_the_context_carry_title_and_date(recall):
    t = recall.turn("How much does the van insurance cost with tools cover?")
    assert t.kind == "substantive" and len(t.results) == 3
    lines = t.context.split("\n- ")
    assert len(lines) == 1 + len(t.results)
    for line, r in zip(lines[1:], t.results):
        assert r.title and r.date
        assert f"\"{r.title}\" ({r.date})" in line
    assert {r.source for r in t.results} == {"conversation", "document"}


def test_metadata_for_a_turns_results_comes_from_one_query(store, default_pack):
    recall = Recall(store, default_pack, k=5, trace=False)
    recall.turn("warm up the index and the model")
    statements = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        t = recall.turn("How much does the van insurance cost with tools cover?")
    finally:
        store.db.conn.set_trace_callback(None)
    assert len(t.results) == 5 and {r.source for r in t.results} == {"conversation", "document"}
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT") and "title" in s]
    assert len(reads) == 1, statements
    assert not any("INSERT" in s.upper() for s in statements)


def test_trace_failure_never_fails_the_turn(recall, caplog, monkeypatch):
    class Broken:
        def table_names(self):
            raise sqlite3.OperationalError("disk I/O error")

        @property
        def conn(self):
            raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(recall.tracer.sink, "db", Broken())  # the embedded store's SQLite sink, every access failing
    with caplog.at_level(logging.WARNING, logger="cleo_rules"):
        t = recall.turn("How much does the van insurance cost?")
    assert t.results and t.trace_id is None
    assert "could not write the turn trace" in caplog.text and "disk I/O error" in caplog.text


def test_tracing_off_writes_nothing(tmp_path, embedder, default_pack):
    with MemoryStore.open(tmp_path, embedder=embedder) as s:
        s.add_document("d", "Doc", "2024-01-01", "Some text about ovens.")
        t = Recall(s, default_pack, trace=False).turn("Tell me about the ovens in the bakery.")
        assert t.results and t.trace_id is None
        assert TABLE not in s.db.table_names()


def test_search_that_finds_nothing_says_a_search_was_made(store, default_pack):
    t = Recall(store, default_pack, floor=0.99).turn("How much does the van insurance cost?")
    assert t.results == ()
    assert t.context == default_pack.context["empty"].format(query=t.query)
    assert t.context != default_pack.context["skipped"]


def test_pack_and_store_are_loaded_once_and_reused(recall, store, monkeypatch):
    import cleo_rules.pack.compile as compile_mod
    import cleo_rules.retrieval.store as store_mod

    def boom(*a, **k):
        raise AssertionError("reloaded")

    monkeypatch.setattr(compile_mod, "load_pack", boom)
    monkeypatch.setattr(compile_mod, "compile_pack", boom)
    monkeypatch.setattr(store_mod.MemoryStore, "open", boom)
    turns = recall.replay(["Which engineer fixed the office boiler?", "Tell me more.", "Thanks"])
    assert [t.kind for t in turns] == ["substantive", "follow_up", "skip"]
    assert turns[1].query.startswith("Which engineer fixed the office boiler?")


def test_turn_to_dict_and_timings(recall):
    t = recall.turn("Which engineer fixed the office boiler?")
    d = t.to_dict(timings=True)
    assert set(d) >= {"kind", "rule", "query", "anchor", "results", "context", "timings"}
    assert set(d["results"][0]) == {"source", "id", "item", "title", "date", "text", "score"}
    assert d["results"][0]["id"] == "boiler" and d["results"][0]["item"].startswith("boiler#")
    assert set(t.timings) == {"classify", "embed", "search", "metadata", "context", "trace", "total"}
    # each stage was timed, and the stages are disjoint parts of the turn (which is faster, classify or
    # the embedding, is bench/bench_turn.py's to measure: a turn preempted mid-classify would say otherwise)
    stages = [t.timings[s] for s in ("classify", "embed", "search", "metadata", "context", "trace")]
    assert all(s > 0 for s in stages) and t.timings["total"] >= sum(stages)
    assert "timings" not in t.to_dict()


def test_recall_open_loads_pack_from_a_path(tmp_path, embedder, default_pack):
    with Recall.open(tmp_path, pack=default_pack.path, embedder=embedder) as recall:
        assert recall.pack.name == default_pack.name
        assert recall.turn("Okay.").kind == "skip"


def test_k_must_be_positive(store, default_pack):
    with pytest.raises(ValueError):
        Recall(store, default_pack, k=0)


@pytest.mark.parametrize("kwargs,error", [
    ({"k": 0}, ValueError), ({"k": 2.5}, TypeError), ({"k": True}, TypeError),
    ({"sources": ("emails",)}, ValueError), ({"sources": ()}, ValueError),
])
def test_recall_and_the_store_refuse_the_same_arguments_alike(store, default_pack, kwargs, error):
    with pytest.raises(error) as by_recall:
        Recall(store, default_pack, **kwargs)
    with pytest.raises(error) as by_store:
        store.search("boiler engineer", **kwargs)
    assert str(by_recall.value) == str(by_store.value)


def test_recall_sources(store, default_pack):
    recall = Recall(store, default_pack, k=3, sources="document")
    assert recall.sources == ("document",)
    assert {r.source for r in recall.turn("Which engineer fixed the office boiler?").results} == {"document"}


def test_relevance_sample_pairs_the_searched_query_with_the_recalled_text(store, default_pack):
    from cleo_rules.relevance import sample_pairs

    recall = Recall(store, default_pack, k=2)
    t = recall.turn("Go with the second one.", history=["Compare the two van insurance quotes"])
    pairs = [p for p in sample_pairs(store, 1000) if p["trace_id"] == t.trace_id]
    assert [p["item"] for p in pairs] == [r.item for r in t.results]
    for p, r in zip(pairs, t.results):
        assert p["query"] == t.query != t.decision.message
        assert (p["title"], p["date"], p["text"]) == (r.title, r.date, r.text)
        assert p["kind"] == "follow_up" and p["relevant"] is None
