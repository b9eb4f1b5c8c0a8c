"""One store test-suite, run on both backends: the embedded store (SQLite + hnswlib) and PostgreSQL + pgvector.

Every test takes ``backend``, parametrised ``embedded`` and ``postgres``; a
backend opens fresh stores (a new directory, or a new tenant of the
session's PostgreSQL server), reopens them as another handle, and counts the
SQL statements a call sends. What a test asserts is the contract of
:class:`~cleo_rules.retrieval.memory.Memory`, the same for both.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules.errors import IngestError, StoreError
from cleo_rules.relevance import sample_pairs
from cleo_rules.resources import data_dir
from cleo_rules.retrieval import Item, Memory, MemoryBase, Result, SearchResponse, StoreOptions
from cleo_rules.retrieval.locate import open_memory
from cleo_rules.trace import read_traces
from cleo_rules.turn import Recall

from helpers import ROOT
from helpers.embedders import ToyEmbedder
from helpers.hostile import TOY_EMBEDDER
from helpers.memory import BAD_SEARCH_ARGUMENTS

SAMPLE = data_dir() / "sample_memory.jsonl"
RECORDS = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
BY_ID = {r["id"]: r for r in RECORDS}


class Backend:
    """How a test makes stores of one kind."""

    name = ""

    def fresh(self) -> str:
        """The location of a store that does not exist yet."""
        raise NotImplementedError

    def open(self, location: str | None = None, embedder=None, **options) -> Memory:
        return open_memory(location or self.fresh(), embedder if embedder is not None else ToyEmbedder(), **options)

    def count_statements(self, store, fn):
        raise NotImplementedError

    def documents(self, location: str) -> list[str]:
        """The ids of the documents stored, read behind the store's back."""
        raise NotImplementedError


class Embedded(Backend):
    name = "embedded"

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return str(self.tmp / f"store-{self.n}")

    def count_statements(self, store, fn):
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        try:
            result = fn()
        finally:
            store.db.conn.set_trace_callback(None)
        return statements, result

    def documents(self, location: str) -> list[str]:
        path = Path(location) / "memory.db"
        if not path.exists():
            return []
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
            try:
                return [r[0] for r in con.execute("SELECT id FROM documents")]
            finally:
                con.close()
        except sqlite3.OperationalError:
            return []


class Postgres(Backend):
    name = "postgres"

    def __init__(self, pg, monkeypatch):
        self.pg = pg
        self.monkeypatch = monkeypatch
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return self.pg.url(f"c{self.n}-{os.getpid()}-{time.monotonic_ns() % 10**9}")

    def count_statements(self, store, fn):
        import psycopg

        statements: list[str] = []
        real_execute, real_many = psycopg.Cursor.execute, psycopg.Cursor.executemany

        def execute(cur, query, *args, **kwargs):
            if query:  # the pool's liveness check at checkout is an empty query, no statement
                statements.append(str(query))
            return real_execute(cur, query, *args, **kwargs)

        def executemany(cur, query, *args, **kwargs):
            statements.append(str(query))
            return real_many(cur, query, *args, **kwargs)

        with self.monkeypatch.context() as m:
            m.setattr(psycopg.Cursor, "execute", execute)
            m.setattr(psycopg.Cursor, "executemany", executemany)
            result = fn()
        return statements, result

    def documents(self, location: str) -> list[str]:
        from cleo_rules.retrieval.pg_schema import parse_location, quote

        where = parse_location(location)
        with self.pg.admin() as conn:
            if conn.execute("SELECT to_regclass(%s)", [f"{quote(where.schema)}.documents"]).fetchone()[0] is None:
                return []
            return [r[0] for r in conn.execute(f"SELECT id FROM {quote(where.schema)}.documents")]


@pytest.fixture(params=["embedded", "postgres"])
def backend(request, tmp_path, monkeypatch):
    if request.param == "embedded":
        return Embedded(tmp_path)
    return Postgres(request.getfixturevalue("pg"), monkeypatch)


def doc(i: int, text: str | None = None) -> dict:
    return {"type": "document", "id": f"d{i}", "title": f"Job {i}", "date": "2024-03-01",
            "text": text or f"Job sheet {i}: replaced valve {i} on Larch Close, invoice {i * 7}."}


def jsonl(records) -> list[str]:
    return [json.dumps(r) for r in records]


@pytest.fixture
def toy(backend):
    """A small store: one conversation of three messages, one document."""
    s = backend.open()
    s.add_conversation("c1", "Van quotes", "2024-02-03", [
        {"role": "user", "text": "Which van insurer is cheaper?"}, {"role": "assistant", "text": "Zego, by 220 pounds."},
        {"role": "user", "text": "And for tools left overnight?"}])
    s.add_document("d1", "Price list", "2024-01-02", "Call-out fee 45 pounds.")
    yield s
    s.close()


@pytest.fixture
def jobs(backend):
    """A store of 200 one-passage documents and 20 conversations (toy vectors)."""
    s = backend.open()
    convs = [{"type": "conversation", "id": f"c{i}", "title": f"Call {i}", "date": "2024-04-01",
              "messages": [{"role": "user", "text": f"Boiler {i} is leaking near the valve again"},
                           {"role": "assistant", "text": f"Booked visit {i}."}]} for i in range(20)]
    report = s.ingest_jsonl(jsonl([doc(i) for i in range(200)] + convs), batch_size=64)
    assert report.added == 220, report.summary()
    yield s
    s.close()


def ids(response):
    return [r.id for r in response.results]


# -- the protocol, and what a search returns ------------------------------------------------------


def test_the_store_implements_the_protocol(toy):
    assert isinstance(toy, Memory)


def test_get_by_item_ids(toy):
    got = toy.get(["d1#p0", "c1#s1", "c1#s0", "c1#s0"])
    assert list(got) == ["d1#p0", "c1#s1", "c1#s0"]
    assert got["d1#p0"] == Item("document", "d1", "d1#p0", "Price list", "2024-01-02", "Call-out fee 45 pounds.")
    assert got["c1#s1"] == Item("conversation", "c1", "c1#s1", "Van quotes", "2024-02-03",
                                "user: And for tools left overnight?")
    assert toy.get([]) == {} and toy.get(iter(())) == {}
    assert toy.get(["c1#s7", "nope", "d1#s0", "d1#p0#p0", "c1"]) == {}


@pytest.mark.parametrize("bad", ["c1#s0", b"c1#s0", [1], [None], ["c1#s0", ("c1", 0)]])
def test_get_wants_an_iterable_of_strings(toy, bad):
    with pytest.raises(TypeError):
        toy.get(bad)


def test_get_is_one_statement_however_many_ids(backend, toy):
    for n in (1, 200):
        statements, got = backend.count_statements(toy, lambda: toy.get([f"c1#s{i}" for i in range(n)] + ["d1#p0"]))
        assert len(statements) == 1 and "title" in statements[0] and len(got) == min(n, 2) + 1
    statements, _ = backend.count_statements(toy, lambda: toy.get(["nothing-to-look-up"]))
    assert statements == []


def test_results_carry_title_date_text_and_the_cosine_score(jobs):
    toy = ToyEmbedder()
    query = "replaced valve 17 on Larch Close"
    response = jobs.search(query, k=12)
    assert isinstance(response, SearchResponse) and len(response) == 12
    scores = [r.score for r in response]
    assert scores == sorted(scores, reverse=True)
    q = toy.encode([query])[0]
    for r in response:
        assert isinstance(r, Result)
        if r.source == "document":
            record = doc(int(r.id[1:]))
            assert (r.title, r.date, r.text) == (record["title"], record["date"], record["text"])
            assert r.item == f"{r.id}#p0"
        else:
            assert r.title == f"Call {r.id[1:]}" and r.item.startswith(r.id + "#s")
        assert abs(r.score - float(toy.encode([r.text])[0] @ q)) < 1e-3
    assert response.results[0].id == "d17"
    assert set(response.timings) >= {"embed", "search", "metadata", "total"}
    assert json.dumps(response.to_dict())


def test_sources_limit_the_search_and_the_floor_drops_weak_results(jobs):
    docs = jobs.search("boiler leaking valve", k=6, sources=("document",))
    convs = jobs.search("boiler leaking valve", k=6, sources="conversation")
    assert {r.source for r in docs} == {"document"} and len(docs) == 6
    assert {r.source for r in convs} == {"conversation"} and len(convs) == 6
    everything = jobs.search("boiler leaking valve", k=30)
    floor = everything.results[5].score
    kept = jobs.search("boiler leaking valve", k=30, floor=floor)
    assert [r.item for r in kept] == [r.item for r in everything if r.score >= floor]
    assert jobs.search("boiler leaking valve", k=10, floor=1.01).results == ()


@pytest.mark.parametrize("kwargs,error", BAD_SEARCH_ARGUMENTS)
def test_bad_search_arguments_are_misuse_errors(toy, kwargs, error):
    with pytest.raises(error):
        toy.search(**kwargs)


def test_statements_per_search_do_not_grow_with_k(backend, jobs):
    jobs.search("warm up", k=1)
    counts = {}
    for k in (1, 5, 20, 60, 150):
        statements, response = backend.count_statements(jobs, lambda k=k: jobs.search("boiler valve invoice", k=k))
        assert len(response) == k  # more than pgvector's default hnsw.ef_search of 40, too
        counts[k] = len(statements)
        assert len([s for s in statements if "title" in s]) == 1, statements
        assert not any(s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")) for s in statements)
    assert len(set(counts.values())) == 1 and counts[1] <= 2, counts


def test_many_query_vectors_still_use_the_same_statements(backend, jobs):
    vectors = ToyEmbedder().encode([f"valve {i} on Larch Close" for i in range(12)])
    single, _ = backend.count_statements(jobs, lambda: jobs.search_vectors(vectors[0], k=10))
    statements, responses = backend.count_statements(jobs, lambda: jobs.search_vectors(vectors, k=10))
    assert len(responses) == 12 and all(len(r) == 10 for r in responses)
    assert len(statements) == len(single) <= 2
    assert [r.id for r in responses[3]][0] == "d3"
    by_text = jobs.search("valve 3 on Larch Close", k=10)
    assert [r.item for r in responses[3]] == [r.item for r in by_text] and responses[3].query is None
    with pytest.raises(StoreError, match="dimensions"):
        jobs.search_vectors(np.ones(10, dtype=np.float32), k=3)
    with pytest.raises(ValueError):
        jobs.search_vectors(np.ones((2, 2, 64), dtype=np.float32))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(alphabet="abcdefgh ", min_size=1, max_size=30).filter(lambda t: t.strip()),
                      min_size=1, max_size=25, unique=True),
       query=st.text(alphabet="abcdefgh ", min_size=1, max_size=20).filter(lambda t: t.strip()),
       k=st.integers(1, 30))
def test_search_returns_stored_pieces_best_first_with_true_scores(backend, texts, query, k):
    toy = ToyEmbedder()
    with backend.open() as store:
        store.ingest_jsonl(jsonl([doc(i, t) for i, t in enumerate(texts)]))
        response = store.search(query, k=k, sources="document")
    q = toy.encode([query])[0]
    truth = {f"d{i}": float(v @ q) for i, v in enumerate(toy.encode(texts))}
    assert len(response) == min(k, len(texts))  # a small store is searched whole
    assert len({r.id for r in response}) == len(response)
    for r in response:
        assert abs(r.score - truth[r.id]) < 1e-4
    scores = [r.score for r in response]
    assert scores == sorted(scores, reverse=True)
    # nothing left out scores higher than the last result kept
    if len(response) < len(texts):
        left = [s for i, s in truth.items() if i not in {r.id for r in response}]
        assert max(left) <= scores[-1] + 1e-4


# -- writing: idempotent, malformed input skipped, deletes at once -------------------------------


def test_re_ingesting_the_same_lines_changes_nothing(jobs):
    before = jobs.search("replaced valve 40", k=10)
    lines = jsonl([doc(i) for i in range(200)])
    report = jobs.ingest_jsonl(lines)
    assert (report.added, report.updated, report.unchanged, report.skipped) == (0, 0, 200, 0)
    assert report.timings["embed"] == 0.0
    assert jobs.search("replaced valve 40", k=10) == before
    assert jobs.stats()["passages"] == 200


def test_re_ingesting_a_changed_item_replaces_it(jobs):
    changed = doc(7, "The call-out fee is now paid in seashells, three per visit.")
    report = jobs.ingest_jsonl(jsonl([doc(6), changed, doc(8)]))
    assert (report.added, report.updated, report.unchanged) == (0, 1, 2)
    top = jobs.search("paid in seashells", k=1).results[0]
    assert top.id == "d7" and "seashells" in top.text
    assert jobs.get(["d7#p0"])["d7#p0"].text == changed["text"]
    assert jobs.stats()["passages"] == 200


def test_malformed_lines_are_reported_and_skipped(backend):
    with backend.open() as store:
        lines = jsonl([doc(1)]) + ["{not json", json.dumps({"type": "document", "id": "x"}), ""] + jsonl([doc(2)])
        report = store.ingest_jsonl(lines)
        assert (report.added, report.skipped, report.lines) == (2, 2, 5)
        assert sorted({p.line for p in report.problems}) == [2, 3]
        assert {p.code for p in report.problems} >= {"E311", "E313"}
        with pytest.raises(IngestError, match="nothing was ingested"):
            store.ingest_jsonl(jsonl([doc(3)]) + ["[1, 2]"], strict=True)
        assert store.stats()["documents"] == 2
        with pytest.raises(IngestError) as info:
            store.add_conversation("c-x", "Title", "yesterday", [{"role": "user", "text": ""}])
        assert {p.pointer for p in info.value.problems} == {"/date", "/messages/0/text"}
        with pytest.raises(IngestError, match="text"):
            store.add_document("d-x", "Title", "2024-01-01", 42)  # type: ignore[arg-type]
        assert store.stats()["documents"] == 2 and store.stats()["conversations"] == 0


def test_add_update_and_unchanged(toy):
    messages = [{"role": "user", "text": "Which van insurer is cheaper?"},
                {"role": "assistant", "text": "Zego, by 220 pounds."},
                {"role": "user", "text": "And for tools left overnight?"}]
    assert toy.add_conversation("c1", "Van quotes", "2024-02-03", messages) == "unchanged"
    changed = messages + [{"role": "user", "text": "Update: the lease was signed with a pink van livery."}]
    assert toy.add_conversation("c1", "Second van decision", "2024-02-03", changed) == "updated"
    top = toy.search("pink van livery lease", k=1).results[0]
    assert (top.id, top.title) == ("c1", "Second van decision")
    stats = toy.stats()
    assert (stats["conversations"], stats["messages"], stats["snippets"]) == (1, 4, 3)


def test_delete_removes_from_results_at_once_for_every_handle(backend, jobs):
    location = jobs.path if backend.name == "embedded" else jobs.location.as_url()
    other = backend.open(str(location))  # another handle, opened before the delete
    try:
        assert "d17" in ids(jobs.search("replaced valve 17", k=5))
        assert "d17" in ids(other.search("replaced valve 17", k=5))
        assert jobs.delete_document("d17") is True
        assert "d17" not in ids(jobs.search("replaced valve 17", k=250))
        assert "d17" not in ids(other.search("replaced valve 17", k=250))
        assert jobs.get(["d17#p0"]) == {} and other.get(["d17#p0"]) == {}
        assert jobs.delete_document("d17") is False
        assert jobs.delete_conversation("c3") is True
        assert "c3" not in ids(other.search("Boiler 3 is leaking near the valve", k=250))
        stats = other.stats()
        assert (stats["documents"], stats["passages"], stats["conversations"], stats["messages"]) == (199, 199, 19, 38)
        # a new handle gets the same additions the other made
        other.add_document("d-new", "Ladder inspection log", "2025-04-01", "The ladders were inspected in April.")
        top = jobs.search("when were the ladders inspected", k=1).results[0]
        assert (top.id, top.title) == ("d-new", "Ladder inspection log")
    finally:
        other.close()


def test_a_store_built_with_another_model_refuses_to_mix(backend):
    class Renamed(ToyEmbedder):
        model_name = "another-model"

    location = backend.fresh()
    with backend.open(location) as store:
        store.ingest_jsonl(jsonl([doc(i) for i in range(5)]))
    with backend.open(location, embedder=Renamed()) as other:
        with pytest.raises(StoreError, match="rebuild --reembed"):
            other.search("valve")
        with pytest.raises(StoreError, match="another-model"):
            other.add_document("d", "T", "2024-01-01", "text")
        counts = other.rebuild(reembed=True)
        assert counts["document"] == 5 and other.model_name == "another-model"
        assert other.search("replaced valve 3 on Larch Close", k=1).results[0].id == "d3"
    with backend.open(location, embedder=Renamed()) as again:
        assert again.stats()["model"] == "another-model"
        assert again.rebuild()["document"] == 5
        assert again.search("replaced valve 4 on Larch Close", k=1).results[0].id == "d4"


def test_an_empty_store_answers_nothing(backend):
    with backend.open() as store:
        assert store.search("anything at all", k=3).results == () and store.stats()["model"] is None
        assert store.search_vectors(np.ones((2, 64), dtype=np.float32), k=3)[1].results == ()
        assert store.get(["d1#p0"]) == {}


def test_opening_a_missing_store_without_create_and_writing_read_only(backend):
    location = backend.fresh()
    with pytest.raises(StoreError, match="no memory store in") as info:
        backend.open(location, create=False)
    assert info.value.code == "E301"
    with backend.open(location) as store:
        store.add_document("d1", "T", "2024-01-01", "a text")
    with backend.open(location, read_only=True) as ro:
        assert ro.search("a text", k=1).results[0].id == "d1"
        for write in (lambda: ro.add_document("d2", "T", "2024-01-01", "x"), lambda: ro.delete_document("d1"),
                      lambda: ro.ingest_jsonl(jsonl([doc(5)]))):
            with pytest.raises(StoreError, match="read-only") as info:
                write()
            assert info.value.code == "E305"
    store = backend.open(location)
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.search("x")
    with pytest.raises(StoreError, match="closed"):
        store.get(["d1#p0"])


# -- one set of options, one base ------------------------------------------------------------------


def test_options_as_a_value_or_as_keywords_open_the_same_store(backend):
    options = StoreOptions(score_floor=0.25, chunk_size=40, chunk_overlap=5, chunk_max_chars=300, ef_search=32)
    location = backend.fresh()
    with backend.open(location, options=options) as store:
        assert isinstance(store, MemoryBase) and store.options == options
        store.add_document("d1", "T", "2024-01-01", "word " * 100)
        stats = store.stats()
        assert stats["documents"] == 1 and stats["passages"] == 3  # 40 words each, 5 shared: the options' chunks
    assert (stats["score_floor"], stats["chunk_size"], stats["chunk_overlap"], stats["chunk_max_chars"]) == \
        (0.25, 40, 5, 300)
    with backend.open(location, options=options, read_only=True, score_floor=0.5) as store:  # keywords win
        assert store.read_only and store.score_floor == 0.5 and store.chunk_size == 40 and store.ef_search == 32
        assert store.options == StoreOptions.of(options, read_only=True, score_floor=0.5)
        with pytest.raises(StoreError, match="read-only"):
            store.add_document("d2", "T", "2024-01-01", "x")
    with backend.open(location, score_floor=0.25, chunk_size=40, chunk_overlap=5, chunk_max_chars=300,
                      ef_search=32) as store:
        assert store.options == options


@pytest.mark.parametrize("keywords, error, message", [
    ({"M": 1}, ValueError, "M must be an integer of at least 2, not 1"),
    ({"ef_search": 0}, ValueError, "ef_search must be an integer of at least 1"),
    ({"ef_construction": "200"}, ValueError, "ef_construction must be an integer"),
    ({"chunk_overlap": 200}, ValueError, "chunk overlap must be at least 0 and less than the chunk size"),
    ({"chunk_sise": 10}, TypeError, "unexpected store option.* chunk_sise"),
    ({"options": {"read_only": True}}, TypeError, "options must be StoreOptions, not dict"),
])
def test_impossible_options_are_refused_alike_before_anything_is_made(backend, keywords, error, message):
    location = backend.fresh()
    with pytest.raises(error, match=message):
        backend.open(location, **keywords)
    assert backend.documents(location) == []
    if backend.name == "embedded":
        assert not Path(location).exists()  # (M=1 reached hnswlib, and failed at the first write, before)


# -- traces, turns and the relevance check ---------------------------------------------------------


def test_turns_are_traced_in_the_store_and_sampled_back(backend, default_pack):
    location = backend.fresh()
    with backend.open(location) as store:
        store.ingest_jsonl(jsonl([doc(i) for i in range(30)]))
        recall = Recall(store, default_pack, k=3)
        first = recall.turn("What was on job sheet 12, the valve on Larch Close?")
        skipped = recall.turn("ok")
        follow = recall.turn("Yes, the second one.", history=["What was on job sheet 12, the valve on Larch Close?"])
        assert first.trace_id is not None and skipped.trace_id is not None and follow.trace_id is not None
        assert recall.tracer.failures == 0
    with backend.open(location, read_only=True) as store:
        rows = list(read_traces(store))
        assert [r["id"] for r in rows] == [first.trace_id, skipped.trace_id, follow.trace_id]
        assert rows[0]["query"] == first.query and rows[1]["query"] is None
        assert rows[0]["results"][0]["item"] == first.results[0].item and rows[0]["n_results"] == 3
        assert [r["id"] for r in read_traces(store, searched_only=True)] == [first.trace_id, follow.trace_id]
        assert list(read_traces(store, since="9999-01-01")) == []
        pairs = sample_pairs(store, 100, seed=1)
        assert len(pairs) == 6 and all(p["text"] and p["relevant"] is None for p in pairs)
        assert {p["query"] for p in pairs} == {first.query, follow.query}


# -- a process killed mid-ingest --------------------------------------------------------------------

KILLED = TOY_EMBEDDER + textwrap.dedent('''
    import json, sys, time
    from cleo_rules.retrieval.locate import open_memory

    def lines():
        for i in range(400):
            if i % 16 == 0:
                time.sleep(0.05)
            yield json.dumps({"type": "document", "id": f"job-{i:04d}", "title": f"Job {i}", "date": "2024-03-01",
                              "text": f"Job sheet {i}: replaced valve {i} on Larch Close."})

    store = open_memory(sys.argv[1], Toy())
    store.ingest_jsonl(lines(), batch_size=16)
    print("finished", flush=True)
''')


def test_a_killed_ingest_loses_nothing_committed(backend):
    location = backend.fresh()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, location], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    committed: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
            found = backend.documents(location)
            if len(found) >= 48:
                committed = found
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        if proc.poll() is None and not committed:
            proc.kill()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err
    assert 48 <= len(committed) < 400
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the embedded store catches its index up from SQLite, and says so
        store = backend.open(location)
    with store:
        stats = store.stats()
        assert stats["documents"] >= len(committed) and stats["documents"] % 16 == 0  # whole batches only
        assert stats["passages"] == stats["documents"]
        got = store.get([f"{d}#p0" for d in committed])
        assert len(got) == len(committed)
        for d in committed[:: max(1, len(committed) // 8)]:
            n = int(d.split("-")[1])
            assert d in ids(store.search(f"Job sheet {n}: replaced valve {n} on Larch Close.", k=10))
        report = store.ingest_jsonl([json.dumps({"type": "document", "id": f"job-{i:04d}", "title": f"Job {i}",
                                                 "date": "2024-03-01",
                                                 "text": f"Job sheet {i}: replaced valve {i} on Larch Close."})
                                     for i in range(400)])
        assert report.unchanged == stats["documents"] and report.added == 400 - stats["documents"]
