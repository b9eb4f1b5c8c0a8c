"""The index file and its sidecar are replaced as one step (issue 30, item 4).

A save writes the index file of a new generation under its own name and then
renames the sidecar naming it over the old sidecar: a save that fails between
the two leaves the previous pair, and a pair that disagrees (the old layout
cut between its two renames, or a file damaged later) is checked in full,
loaded and reconciled with SQLite instead of rebuilt, with one warning.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules.resources import data_dir
from cleo_rules.retrieval import MemoryStore, StoreWarning
from cleo_rules.retrieval.hnsw_file import VectorIndex, index_file, sidecar_path
from cleo_rules.retrieval.hnsw_layout import HEADER, LayoutError, read_whole
from cleo_rules.retrieval.index_set import IndexSet
from cleo_rules.retrieval.tables import Source

LINES = (data_dir() / "sample_memory.jsonl").read_text(encoding="utf-8").splitlines()
QUERIES = ["van insurance excess and tools cover", "boiler care club members", "copper pipe prices"]
NAMES = ("snippets.hnsw", "passages.hnsw")


def answers(store, vectors):
    return [[(r.item, round(r.score, 4)) for r in response] for response in store.search_vectors(vectors, k=8)]


def snapshot(path):
    return {f.name: f.read_bytes() for f in path.iterdir() if ".hnsw" in f.name}


def to_old_layout(path):
    """Rewrite a store's index pairs as the old layout wrote them (``<name>`` and a format-1 sidecar)."""
    for name in NAMES:
        side = json.loads(sidecar_path(path / name).read_text())
        os.replace(path / side.pop("file"), path / name)
        side["format"] = 1
        sidecar_path(path / name).write_text(json.dumps(side))


@pytest.fixture
def builds(monkeypatch):
    """Records every full rebuild of an index from SQLite."""
    calls = []
    real = IndexSet.build

    def spy(self, source):
        calls.append(source)
        return real(self, source)

    monkeypatch.setattr(IndexSet, "build", spy)
    return calls


@pytest.fixture
def store_path(tmp_path, embedder):
    path = tmp_path / "store"
    with MemoryStore.open(path, embedder=embedder) as store:
        store.ingest_jsonl(LINES[:12])
    return path


def test_index_pair_replaced_as_one_a_failure_between_the_two_steps_keeps_the_previous_pair(
        store_path, embedder, monkeypatch, builds, load_calls):
    before = snapshot(store_path)
    real = os.replace

    def failing(src, dst, *args, **kwargs):
        if str(dst).endswith(".hnsw.json"):  # the second step of a save: its sidecar
            raise OSError(28, "No space left on device (injected)")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.warns(StoreWarning, match="could not save"):
        with MemoryStore.open(store_path, embedder=embedder) as store:
            store.ingest_jsonl(LINES[12:20])
    monkeypatch.setattr(os, "replace", real)
    assert snapshot(store_path) == before  # the previous pair, and no file of the failed generation
    vectors = embedder.encode(QUERIES)
    load_calls.clear()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with MemoryStore.open(store_path, embedder=embedder, read_only=True) as store:
            got = answers(store, vectors)
    said = [str(w.message) for w in record if issubclass(w.category, StoreWarning)]
    assert builds == [] and len(load_calls) == 2, said  # both previous pairs loaded as vouched for
    assert said and all("behind the database" in m for m in said), said  # then caught up, not rebuilt
    with MemoryStore.open(store_path, embedder=embedder) as store:
        assert answers(store, vectors) == got


def test_index_pair_replaced_as_one_old_generations_are_removed(store_path, embedder):
    first = {name: index_file(store_path / name).name for name in NAMES}
    leftover = store_path / "passages.hnsw.g0123456789abcdef"  # a save that died before its switch
    shutil.copy(index_file(store_path / "passages.hnsw"), leftover)
    with MemoryStore.open(store_path, embedder=embedder) as store:
        store.ingest_jsonl(LINES[12:20])
    names = sorted(f.name for f in store_path.iterdir() if ".hnsw" in f.name)
    current = [index_file(store_path / name).name for name in NAMES]
    assert names == sorted([*current, *(f"{n}.json" for n in NAMES)])
    assert not set(current) & set(first.values()) and not leftover.exists()


def test_index_pair_replaced_as_one_the_old_layout_opens_and_moves_on_its_next_save(
        store_path, embedder, builds, load_calls):
    to_old_layout(store_path)
    old = snapshot(store_path)
    vectors = embedder.encode(QUERIES)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        with MemoryStore.open(store_path, embedder=embedder, read_only=True) as store:
            reference = answers(store, vectors)
    assert snapshot(store_path) == old and builds == [] and len(load_calls) == 2
    with MemoryStore.open(store_path, embedder=embedder) as store:  # a write to each source
        store.ingest_jsonl(LINES[12:14])
        store.delete_document(next(json.loads(x)["id"] for x in LINES[:12] if '"document"' in x))
        reference = answers(store, vectors)
    for name in NAMES:
        assert not (store_path / name).exists()
        assert json.loads(sidecar_path(store_path / name).read_text())["format"] == 2
    with MemoryStore.open(store_path, embedder=embedder, read_only=True) as store:
        assert answers(store, vectors) == reference


def disagreeing_old_layout(path, embedder):
    """The old layout cut between its two renames: the index file of one save, the sidecar of the one before."""
    to_old_layout(path)
    sidecar = sidecar_path(path / "passages.hnsw").read_bytes()
    with MemoryStore.open(path, embedder=embedder) as store:
        store.ingest_jsonl(LINES[12:20])
        store.delete_document(next(json.loads(x)["id"] for x in LINES[:12] if '"document"' in x))
    to_old_layout(path)
    sidecar_path(path / "passages.hnsw").write_bytes(sidecar)


def damaged_vector(path, embedder):
    """A store of today's layout whose passage file has one vector changed, its structure intact."""
    file = index_file(path / "passages.hnsw")
    data = bytearray(file.read_bytes())
    fields = HEADER.unpack_from(data, 0)
    offset = HEADER.size + fields[5] + 4 * 3  # element 0, its fourth component
    data[offset : offset + 4] = np.float32(0.9).tobytes()
    file.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [disagreeing_old_layout, damaged_vector], ids=lambda f: f.__name__)
def test_index_pair_replaced_as_one_a_disagreeing_pair_opens_read_only_without_a_rebuild(
        store_path, embedder, builds, load_calls, damage):
    damage(store_path, embedder)
    vectors = embedder.encode(QUERIES)
    healthy = store_path.parent / "healthy"
    shutil.copytree(store_path, healthy)
    for f in healthy.glob("*.hnsw*"):
        f.unlink()
    with pytest.warns(StoreWarning):
        with MemoryStore.open(healthy, embedder=embedder) as store:  # rebuilt from SQLite: the reference
            reference = answers(store, vectors)
    builds.clear()
    load_calls.clear()
    before = snapshot(store_path)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with MemoryStore.open(store_path, embedder=embedder, read_only=True) as store:
            for _ in range(3):
                assert answers(store, vectors) == reference
                store.search(QUERIES[0], k=3)
    said = [str(w.message) for w in record if issubclass(w.category, StoreWarning)]
    assert len(said) == 1 and "pair disagrees" in said[0] and "read-only" in said[0], said  # once, at the open
    assert builds == [] and len(load_calls) == 2
    assert snapshot(store_path) == before  # read-only: nothing written
    with pytest.warns(StoreWarning, match="pair disagrees"):
        with MemoryStore.open(store_path, embedder=embedder) as store:  # a writer persists the reconciled pair
            assert answers(store, vectors) == reference
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        with MemoryStore.open(store_path, embedder=embedder, read_only=True) as store:
            assert answers(store, vectors) == reference


@pytest.fixture(scope="module")
def whole_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("layout") / "x.hnsw"
    index = VectorIndex(path, 8, M=4)
    rng = np.random.default_rng(3)
    index.add(rng.standard_normal((300, 8)).astype(np.float32), range(1, 301))
    index.delete(range(1, 301, 7))
    meta = index.save(model="m", generation=1)
    return path, meta, index_file(path).read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)),
                      min_size=1, max_size=6))
def test_index_pair_replaced_as_one_a_file_the_full_check_accepts_is_safe_for_hnswlib(whole_file, edits):
    """Bytes changed anywhere: the full check refuses the file, or hnswlib loads, searches and adds safely."""
    path, meta, data = whole_file
    damaged = bytearray(data)
    for at, value in edits:
        damaged[at % len(damaged)] = value
    file = path.with_name(meta["file"])
    file.write_bytes(bytes(damaged))
    fd = os.open(file, os.O_RDONLY)
    try:
        try:
            read_whole(fd, dim=8, M=4)
        except LayoutError:
            return
    finally:
        os.close(fd)
    index, layout = VectorIndex.salvage(path, meta)  # a crash here would end the test run
    rng = np.random.default_rng(5)
    index.query(rng.standard_normal((4, 8)).astype(np.float32), 10)
    index.put(rng.standard_normal((20, 8)).astype(np.float32), range(1000, 1020))
    index.query(rng.standard_normal((4, 8)).astype(np.float32), 10)
    assert len(layout.labels) == meta["slots"]


def test_index_pair_replaced_as_one_the_full_check_refuses_a_broken_graph(whole_file):
    path, meta, data = whole_file
    fields = HEADER.unpack_from(data, 0)
    first_link = HEADER.size + 4  # element 0's first level-0 neighbour
    cases = {
        "neighbour is not an element": (first_link, (10**6).to_bytes(4, "little")),
        "longer than 2\\*M": (HEADER.size, (200).to_bytes(4, "little")),
        "offsets do not fit": (8 * 5, (fields[5] + 4).to_bytes(8, "little")),
    }
    for reason, (at, value) in cases.items():
        damaged = bytearray(data)
        damaged[at : at + len(value)] = value
        file = path.with_name(meta["file"])
        file.write_bytes(bytes(damaged))
        fd = os.open(file, os.O_RDONLY)
        try:
            with pytest.raises(LayoutError, match=reason):
                read_whole(fd, dim=8, M=4)
        finally:
            os.close(fd)


def test_index_pair_replaced_as_one_a_disagreeing_pair_with_a_damaged_embedding_says_so_once(
        store_path, embedder, builds):
    """The file's vector that differs from SQLite's is replaced; a damaged SQLite embedding is named in the one warning."""
    damaged_vector(store_path, embedder)  # element 0 of the passage file now holds another vector
    db = sqlite3.connect(store_path / "memory.db")
    with db:
        first, wanted = db.execute("SELECT label, embedding FROM passages ORDER BY label LIMIT 1").fetchone()
        (broken,) = db.execute("SELECT max(label) FROM passages").fetchone()
        db.execute("UPDATE passages SET embedding = x'00' WHERE label = ?", (broken,))
    db.close()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with MemoryStore.open(store_path, embedder=embedder, read_only=True) as store:
            index = store.indexes[Source.DOCUMENT]
            labels, scores = index.query(np.frombuffer(wanted, dtype=np.float32)[None, :], 1)
            assert broken not in index.labels  # left out, as a rebuild leaves it out
    said = [str(w.message) for w in record if issubclass(w.category, StoreWarning)]
    assert len(said) == 1, said
    assert "pair disagrees" in said[0] and "1 replaced" in said[0], said
    assert f"1 with a damaged embedding in SQLite are left out (labels [{broken}])" in said[0], said
    assert labels[0, 0] == first and scores[0, 0] > 0.9999  # SQLite's vector, not the file's
    assert builds == []
