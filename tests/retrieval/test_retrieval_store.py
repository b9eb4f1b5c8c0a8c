"""MemoryStore, the façade: ingest, search, get, delete, re-ingest, rebuild, and SQL per search."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest

import cleo_rules.retrieval.hnsw_file as index_mod
from cleo_rules.errors import IngestError, StoreError
from cleo_rules.resources import data_dir
from cleo_rules.retrieval import Item, MemoryStore, Result, SearchResponse, StoreWarning

from helpers.memory import BAD_SEARCH_ARGUMENTS

SAMPLE = data_dir() / "sample_memory.jsonl"
RECORDS = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
BY_ID = {r["id"]: r for r in RECORDS}


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory, embedder):
    """A closed store holding the whole bundled sample memory.

    Built once per test run and shared with test_memory_cli.py (which builds
    it through the CLI when it runs first); tests only read it or copy it.
    """
    path = tmp_path_factory.getbasetemp() / "shared-sample-store"
    if not (path / "complete").exists():
        shutil.rmtree(path, ignore_errors=True)
        with MemoryStore.open(path, embedder=embedder) as store:
            report = store.ingest_jsonl(SAMPLE)
        assert report.added == len(RECORDS) and not report.problems, report.summary()
        (path / "complete").write_text("")
    return path


@pytest.fixture(scope="module")
def store(sample_dir, embedder):
    """The sample store, opened once, for tests that only read."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)  # a clean store opens without repairs
        s = MemoryStore.open(sample_dir, embedder=embedder)
    yield s
    s.close()


@pytest.fixture
def copy(sample_dir, tmp_path, embedder):
    """A private copy of the sample store, for tests that write."""
    path = tmp_path / "store"
    shutil.copytree(sample_dir, path)
    s = MemoryStore.open(path, embedder=embedder)
    yield s
    s.close()


def ids(response):
    return [r.id for r in response.results]


def test_sample_memory_is_a_small_business_with_titles_and_dates():
    kinds = [r["type"] for r in RECORDS]
    assert 30 <= kinds.count("conversation") <= 40 and 10 <= kinds.count("document") <= 15
    for r in RECORDS:
        assert r["title"].strip() and len(r["date"]) == 10
        if r["type"] == "conversation":
            assert 4 <= len(r["messages"]) <= 10
        else:
            assert 200 <= len(r["text"].split()) <= 500


def test_stats_after_ingest(store):
    stats = store.stats()
    assert stats["conversations"] == sum(r["type"] == "conversation" for r in RECORDS)
    assert stats["documents"] == sum(r["type"] == "document" for r in RECORDS)
    assert stats["messages"] == sum(len(r.get("messages", [])) for r in RECORDS)
    assert stats["snippets"] == stats["indexes"]["snippets"]["elements"] > stats["conversations"]
    assert stats["passages"] == stats["indexes"]["passages"]["elements"] > stats["documents"]
    assert stats["model"] == "all-MiniLM-L6-v2" and stats["dim"] == 384
    assert all(ix["saved"] for ix in stats["indexes"].values())


@pytest.mark.parametrize(
    "query,expected",
    [
        ("Which insurer did we pick for the two vans?", {"conv-2024-02-van-insurance-quotes", "doc-van-insurance-comparison-2024"}),
        ("Why did we stop the Boiler Care Club?", {"conv-2023-11-boiler-care-club-review", "doc-boiler-care-club-review"}),
        ("who covers evenings and Saturdays in winter", {"conv-2023-10-winter-on-call-rota", "doc-on-call-rota-policy"}),
        ("cheaper copper pipe from another merchant", {"conv-2023-06-copper-pipe-suppliers", "doc-suppliers-and-accounts"}),
    ],
)
def test_search_finds_the_right_memory(store, query, expected):
    response = store.search(query, k=3)
    assert expected & set(ids(response)), ids(response)


def test_results_carry_title_date_text_and_cosine_score(store, embedder):
    response = store.search("price of a boiler service", k=8)
    assert isinstance(response, SearchResponse) and len(response) == 8
    scores = [r.score for r in response]
    assert scores == sorted(scores, reverse=True)
    q = embedder.encode(["price of a boiler service"])[0]
    texts = embedder.encode([r.text for r in response])
    for r, vector in zip(response, texts):
        assert isinstance(r, Result)
        record = BY_ID[r.id]
        assert (r.title, r.date) == (record["title"], record["date"])
        assert r.item.startswith(r.id + ("#s" if r.source == "conversation" else "#p"))
        if r.source == "document":
            assert r.text in record["text"]
        else:
            assert r.text.splitlines()[0].split(": ", 1)[1] in {m["text"] for m in record["messages"]}
        # the score is the cosine similarity of the stored text
        assert abs(r.score - float(vector @ q)) < 1e-3
    d = response.results[0].to_dict()
    assert set(d) == {"source", "id", "item", "title", "date", "text", "score"}
    assert set(response.timings) >= {"embed", "search", "metadata", "total"}
    assert json.dumps(response.to_dict())


def test_sources_limit_the_search(store):
    docs = store.search("insurance", k=6, sources=("document",))
    convs = store.search("insurance", k=6, sources="conversation")
    assert {r.source for r in docs} == {"document"} and len(docs) == 6
    assert {r.source for r in convs} == {"conversation"} and len(convs) == 6
    both = store.search("insurance", k=12)
    assert {r.source for r in both} == {"conversation", "document"}


def test_score_floor_drops_weak_results(store, sample_dir, embedder):
    everything = store.search("van insurance excess", k=30)
    floor = everything.results[5].score
    kept = store.search("van insurance excess", k=30, floor=floor)
    assert [r.item for r in kept] == [r.item for r in everything if r.score >= floor]
    assert len(kept) < len(everything)
    with MemoryStore.open(sample_dir, embedder=embedder, score_floor=0.99) as strict:
        assert strict.search("van insurance excess", k=10).results == ()


def count_statements(store, fn):
    statements = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        result = fn()
    finally:
        store.db.conn.set_trace_callback(None)
    return statements, result


def test_sql_statements_per_search_do_not_grow_with_k(store):
    store.search("warm up", k=1)
    counts = {}
    for k in (1, 5, 20, 60, 150):
        statements, response = count_statements(store, lambda: store.search("boiler service reminder", k=k))
        assert len(response) == k
        counts[k] = len(statements)
        metadata = [s for s in statements if "title" in s]
        assert len(metadata) == 1, statements
        assert not any(s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")) for s in statements)
    assert len(set(counts.values())) == 1 and counts[1] <= 2, counts


def test_many_query_vectors_still_use_one_metadata_statement(store, embedder):
    vectors = embedder.encode([f"question {i} about vans, boilers and invoices" for i in range(12)])
    statements, responses = count_statements(store, lambda: store.search_vectors(vectors, k=10))
    assert len(responses) == 12 and all(len(r) == 10 for r in responses)
    assert len([s for s in statements if "title" in s]) == 1
    assert len(statements) <= 2


def test_search_vectors_matches_search(store, embedder):
    query = "deposit for a bathroom refit"
    by_text = store.search(query, k=7)
    single = store.search_vectors(embedder.encode([query])[0], k=7)
    assert isinstance(single, SearchResponse) and single.query is None
    assert [r.item for r in single] == [r.item for r in by_text]
    assert single.timings["embed"] == 0.0
    with pytest.raises(StoreError, match="dimensions"):
        store.search_vectors(np.ones(10, dtype=np.float32), k=3)
    with pytest.raises(ValueError):
        store.search_vectors(np.ones((2, 2, 384), dtype=np.float32))


@pytest.mark.parametrize("kwargs,error", BAD_SEARCH_ARGUMENTS)
def test_bad_search_arguments_are_misuse_errors(store, kwargs, error):
    with pytest.raises(error):
        store.search(**kwargs)


def test_delete_removes_from_results_at_once(copy, embedder):
    target = "conv-2024-02-van-insurance-quotes"
    other = MemoryStore.open(copy.path, embedder=embedder)  # another handle, opened before the delete
    try:
        assert target in ids(copy.search("van insurance quotes Hadley Cresswell", k=10))
        assert target in ids(other.search("van insurance quotes Hadley Cresswell", k=10))
        assert copy.delete_conversation(target) is True
        assert target not in ids(copy.search("van insurance quotes Hadley Cresswell", k=50))
        assert target not in ids(other.search("van insurance quotes Hadley Cresswell", k=50))
        assert copy.delete_conversation(target) is False
        assert copy.delete_document("doc-van-insurance-comparison-2024") is True
        assert not {"doc-van-insurance-comparison-2024", target} & set(ids(copy.search("van insurance", k=170)))
        stats = copy.stats()
        assert stats["conversations"] == 34 and stats["snippets"] == stats["indexes"]["snippets"]["elements"]
        rows = copy.db.execute("SELECT count(*) FROM messages WHERE conversation_id = ?", [target]).fetchone()
        assert rows[0] == 0
    finally:
        other.close()


def test_re_adding_after_delete_and_updating(copy):
    record = BY_ID["conv-2023-09-second-van-lease-or-buy"]
    copy.delete_conversation(record["id"])
    assert copy.add_conversation(record["id"], record["title"], record["date"], record["messages"]) == "added"
    assert copy.add_conversation(record["id"], record["title"], record["date"], record["messages"]) == "unchanged"
    changed = record["messages"] + [{"role": "user", "text": "Update: the Vivaro lease was signed with a pink van livery."}]
    assert copy.add_conversation(record["id"], "Second van decision", record["date"], changed) == "updated"
    top = copy.search("pink van livery on the lease", k=1).results[0]
    assert (top.id, top.title) == (record["id"], "Second van decision")
    n = copy.db.execute("SELECT count(*) FROM snippets WHERE conversation_id = ?", [record["id"]]).fetchone()[0]
    assert n == len([m for m in changed if m["role"] == "user"])


def test_re_ingesting_the_same_file_changes_nothing(copy):
    before = copy.search("landlord certificates for the letting agent", k=10)
    labels_before = copy.db.execute("SELECT max(label) FROM snippets").fetchone()[0]
    report = copy.ingest_jsonl(SAMPLE)
    assert (report.added, report.updated, report.unchanged, report.skipped) == (0, 0, len(RECORDS), 0)
    assert report.timings["embed"] == 0.0
    assert copy.db.execute("SELECT max(label) FROM snippets").fetchone()[0] == labels_before
    assert copy.search("landlord certificates for the letting agent", k=10) == before


def test_re_ingesting_a_changed_item_replaces_it(copy):
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    target = next(i for i, line in enumerate(lines) if '"doc-price-list-2024"' in line)
    record = json.loads(lines[target])
    record["text"] = "The call-out fee is now paid in seashells, three per visit."
    lines[target] = json.dumps(record)
    report = copy.ingest_jsonl(lines)
    assert (report.added, report.updated, report.unchanged) == (0, 1, len(RECORDS) - 1)
    top = copy.search("paid in seashells", k=1).results[0]
    assert top.id == "doc-price-list-2024" and "seashells" in top.text
    passages = copy.db.execute("SELECT text FROM passages WHERE document_id = 'doc-price-list-2024'").fetchall()
    assert passages == [(record["text"],)]


def test_malformed_arguments_are_ingest_errors_and_change_nothing(copy):
    before = copy.stats()
    with pytest.raises(IngestError) as info:
        copy.add_conversation("c-x", "Title", "yesterday", [{"role": "user", "text": ""}])
    pointers = {p.pointer for p in info.value.problems}
    assert pointers == {"/date", "/messages/0/text"}
    with pytest.raises(IngestError, match="text"):
        copy.add_document("d-x", "Title", "2024-01-01", 42)
    assert copy.stats()["conversations"] == before["conversations"]


def test_a_second_handle_sees_additions(copy, embedder):
    with MemoryStore.open(copy.path, embedder=embedder) as other:
        other.add_document("doc-new", "Ladder inspection log", "2025-04-01", "The ladders were inspected by Tom in April 2025.")
    top = copy.search("when were the ladders inspected", k=1).results[0]
    assert top.id == "doc-new" and top.title == "Ladder inspection log"


def test_rebuild_gives_the_same_answers(copy):
    queries = ["heat pump course", "Tom's pay rise", "Christmas emergency call-out fee"]
    before = [copy.search(q, k=6) for q in queries]
    counts = copy.rebuild()
    assert counts["conversation"] == copy.stats()["snippets"] and counts["document"] == copy.stats()["passages"]
    assert [copy.search(q, k=6) for q in queries] == before


def test_a_store_built_with_another_model_refuses_to_mix(tmp_path, embedder):
    class Renamed:
        model_name = "another-model"
        loaded = True

        def encode(self, texts):
            return embedder.encode(texts)

    path = tmp_path / "small"
    with MemoryStore.open(path, embedder=embedder) as small:
        small.ingest_jsonl([json.dumps(r) for r in RECORDS if r["id"] in {
            "conv-2024-02-van-insurance-quotes", "doc-van-insurance-comparison-2024",
            "conv-2023-07-hiring-apprentice", "doc-price-list-2025"}])
    with MemoryStore.open(path, embedder=Renamed()) as other:
        with pytest.raises(StoreError, match="rebuild --reembed"):
            other.search("van insurance")
        with pytest.raises(StoreError, match="another-model"):
            other.add_document("d", "T", "2024-01-01", "text")
        other.rebuild(reembed=True)
        assert other.model_name == "another-model"
        assert other.search("which insurer for the vans", k=1).results[0].id in {
            "conv-2024-02-van-insurance-quotes", "doc-van-insurance-comparison-2024"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        MemoryStore.open(path, embedder=Renamed()).close()


def test_index_grows_past_capacity_without_the_caller_noticing(tmp_path, embedder, monkeypatch):
    monkeypatch.setattr(index_mod, "MIN_CAPACITY", 4)
    with MemoryStore.open(tmp_path / "grow", embedder=embedder) as s:
        for i in range(3):
            s.add_document(f"d{i}", f"Note {i}", "2024-01-01", f"Note number {i} is about a job in street {i}.")
        lines = [json.dumps({"type": "document", "id": f"n{i}", "title": f"Job {i}", "date": "2024-02-02",
                             "text": f"Job sheet {i}: replaced valve number {i} on Larch Close."}) for i in range(40)]
        s.ingest_jsonl(lines, batch_size=7)
        capacity = s.stats()["indexes"]["passages"]["capacity"]
        assert capacity >= 43 and s.stats()["passages"] == 43
        assert s.search("Job sheet 22: replaced valve number 22 on Larch Close.", k=1).results[0].id == "n22"


def test_empty_store_answers_nothing(tmp_path, embedder):
    with MemoryStore.open(tmp_path / "empty", embedder=embedder) as s:
        response = s.search("anything at all", k=3)
        assert response.results == () and s.stats()["model"] is None
        assert s.search_vectors(np.ones((2, 384), dtype=np.float32), k=3)[1].results == ()


def test_open_errors(tmp_path, embedder):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(StoreError, match="directory"):
        MemoryStore.open(a_file)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "memory.db").write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(StoreError, match="is damaged: SQLite says 'file is not a database'") as info:
        MemoryStore.open(bad)
    assert info.value.code == "E303" and "restore the directory from a backup" in str(info.value)
    with pytest.raises(ValueError, match="overlap"):
        MemoryStore.open(tmp_path / "x", chunk_size=10, chunk_overlap=10)
    s = MemoryStore.open(tmp_path / "closed", embedder=embedder)
    s.close()
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.search("x")


def test_other_modules_can_add_tables_to_the_same_database(copy, embedder):
    copy.db["traces"].insert({"id": 1, "query": "van"}, pk="id")
    path = copy.path
    copy.close()
    with MemoryStore.open(path, embedder=embedder) as again:
        assert again.db["traces"].count == 1
        assert "traces" in again.db.table_names()


def test_get_gives_what_search_gave(store):
    response = store.search("van insurance excess", k=8)
    items = [r.item for r in response]
    got = store.get(reversed(items))
    assert list(got) == items[::-1]  # in the order asked
    for r in response:
        assert got[r.item].to_dict() == {k: v for k, v in r.to_dict().items() if k != "score"}


@pytest.fixture
def toy(tmp_path, toy_embedder):
    """A small store embedded by the toy embedder (no model needed)."""
    s = MemoryStore.open(tmp_path / "toy", embedder=toy_embedder)
    s.add_conversation("c1", "Van quotes", "2024-02-03", [
        {"role": "user", "text": "Which van insurer is cheaper?"}, {"role": "assistant", "text": "Zego, by 220 pounds."},
        {"role": "user", "text": "And for tools left overnight?"}])
    s.add_document("d1", "Price list", "2024-01-02", "Call-out fee 45 pounds.")
    yield s
    s.close()


def test_get_by_item_ids(toy):
    got = toy.get(["d1#p0", "c1#s1", "c1#s0", "c1#s0"])
    assert list(got) == ["d1#p0", "c1#s1", "c1#s0"]
    assert got["d1#p0"] == Item("document", "d1", "d1#p0", "Price list", "2024-01-02", "Call-out fee 45 pounds.")
    assert got["c1#s1"] == Item("conversation", "c1", "c1#s1", "Van quotes", "2024-02-03",
                                "user: And for tools left overnight?")
    assert toy.get([]) == {} and toy.get(iter(())) == {}
    assert toy.get(["c1#s7", "nope", "d1#s0", "d1#p0#p0", "c1"]) == {}  # not stored, or not an item id


def test_get_follows_updates_and_deletes(toy):
    toy.add_document("d1", "Price list 2025", "2025-01-02", "Call-out fee 50 pounds.")
    assert toy.get(["d1#p0"])["d1#p0"].title == "Price list 2025"
    toy.delete_conversation("c1")
    assert list(toy.get(["c1#s0", "c1#s1", "d1#p0"])) == ["d1#p0"]


def test_get_is_one_statement_however_many_ids(toy):
    for n in (1, 200):
        statements, got = count_statements(toy, lambda: toy.get([f"c1#s{i}" for i in range(n)] + ["d1#p0"]))
        assert len(statements) == 1 and "title" in statements[0] and len(got) == min(n, 2) + 1
    statements, _ = count_statements(toy, lambda: toy.get(["nothing-to-look-up"]))
    assert statements == []


@pytest.mark.parametrize("ids", ["c1#s0", b"c1#s0", [1], [None], ["c1#s0", ("c1", 0)]])
def test_get_wants_an_iterable_of_strings(toy, ids):
    with pytest.raises(TypeError):
        toy.get(ids)


def test_a_closed_store_refuses_get(tmp_path, toy_embedder):
    s = MemoryStore.open(tmp_path / "closed", embedder=toy_embedder)
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.get(["c1#s0"])
