"""VectorIndex: the hnswlib index file, its sidecar and the checks before loading."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

import cleo_rules.retrieval.hnsw_file as index_mod
from cleo_rules.retrieval.hnsw_file import IndexInvalid, VectorIndex, index_file, remove_stale_temp_files, sidecar_path

DIM = 32


def unit(rows, seed=0):
    v = np.random.default_rng(seed).normal(size=(rows, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def exact(vectors, labels, queries, k):
    scores = queries @ vectors.T
    order = np.argsort(-scores, axis=1)[:, :k]
    return np.asarray(labels)[order]


@pytest.fixture
def saved(tmp_path):
    """An index of 300 vectors saved to disk, with its data."""
    vectors = unit(300)
    labels = list(range(1000, 1300))
    ix = VectorIndex(tmp_path / "x.hnsw", DIM)
    ix.add(vectors, labels)
    ix.save(model="m", generation=7)
    return ix, vectors, labels




def test_query_finds_exact_neighbours(saved):
    ix, vectors, labels = saved
    queries = unit(20, seed=1)
    got, scores = ix.query(queries, 5)
    assert got.shape == (20, 5) and scores.shape == (20, 5)
    assert (np.diff(scores, axis=1) <= 1e-6).all()  # best first
    want = exact(vectors, labels, queries, 5)
    assert np.mean([len(set(a) & set(b)) / 5 for a, b in zip(got.tolist(), want.tolist())]) >= 0.95
    # the score is the cosine similarity
    row = labels.index(int(got[0, 0]))
    assert abs(float(scores[0, 0]) - float(vectors[row] @ queries[0])) < 1e-5


def test_k_larger_than_the_index_returns_what_there_is(saved):
    ix, _, _ = saved
    got, _ = ix.query(unit(1, seed=3), 1000)
    assert got.shape == (1, 300)


def test_grows_past_its_capacity(tmp_path):
    ix = VectorIndex(tmp_path / "g.hnsw", DIM, capacity=10)
    start = ix.capacity
    vectors = unit(start + 500, seed=4)
    for i in range(0, len(vectors), 100):
        ix.add(vectors[i : i + 100], range(i, min(i + 100, len(vectors))))
    assert len(ix) == start + 500 and ix.capacity >= start + 500
    got, scores = ix.query(vectors[-1:], 1)
    assert int(got[0, 0]) == start + 499 and scores[0, 0] > 0.999


def test_deleted_labels_never_come_back_and_slots_are_reused(saved):
    ix, vectors, labels = saved
    ix.delete(labels[:150])
    assert len(ix) == 150
    got, _ = ix.query(vectors[:150], 10)
    assert not set(got.ravel().tolist()) & set(labels[:150])
    slots = ix.slots
    ix.add(unit(100, seed=5), range(5000, 5100))
    assert ix.slots == slots  # deleted slots were reused
    assert ix.delete([424242, labels[0]]) == 0  # unknown and already deleted: ignored


def test_exact_fallback_when_hnswlib_cannot_fill_k(tmp_path):
    ix = VectorIndex(tmp_path / "f.hnsw", DIM)
    vectors = unit(50, seed=6)
    ix.add(vectors, range(50))
    ix.delete(range(40, 50))

    class Refusing:
        """hnswlib's complaint when the graph cannot yield k live neighbours."""

        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            return getattr(self._real, name)

        def knn_query(self, *a, **kw):
            raise RuntimeError("Cannot return the results in a contiguous 2D array. Probably ef or M is too small")

    ix._index = Refusing(ix._index)
    got, scores = ix.query(vectors[:2], 3)
    assert got.shape == (2, 3) and got[:, 0].tolist() == [0, 1]
    assert np.allclose(scores[:, 0], 1.0, atol=1e-5)
    assert not set(got.ravel().tolist()) & set(range(40, 50))
    assert got.tolist() == exact(vectors[:40], list(range(40)), vectors[:2], 3).tolist()


def test_save_writes_index_and_sidecar_atomically(saved, tmp_path):
    ix, _, _ = saved
    side = json.loads(sidecar_path(ix.path).read_text())
    assert side["elements"] == 300 and side["dim"] == DIM and side["space"] == "cosine"
    assert side["model"] == "m" and side["generation"] == 7
    current = index_file(ix.path)
    assert current.name == side["file"] and current.name.startswith("x.hnsw.g") and not ix.path.exists()
    assert side["bytes"] == current.stat().st_size
    assert side["sha256"] == hashlib.sha256(current.read_bytes()).hexdigest()
    assert not [p for p in tmp_path.iterdir() if ".tmp." in p.name]


def test_load_round_trip(saved, load_calls):
    ix, vectors, labels = saved
    loaded, side = VectorIndex.load(ix.path, dim=DIM, model="m")
    assert len(load_calls) == 1 and side["generation"] == 7
    assert loaded.labels == frozenset(labels)
    queries = unit(5, seed=7)
    assert loaded.query(queries, 4)[0].tolist() == ix.query(queries, 4)[0].tolist()


def damage_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def damage_flip(path):
    data = bytearray(path.read_bytes())
    for i in range(100, len(data), 997):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def damage_zero_header(path):
    data = bytearray(path.read_bytes())
    data[:64] = b"\0" * 64
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage,reason",
    [
        (lambda p: damage_truncate(index_file(p)), "bytes"),
        (lambda p: damage_flip(index_file(p)), "checksum"),
        (lambda p: damage_zero_header(index_file(p)), "checksum"),
        (lambda p: index_file(p).unlink(), "index file missing"),
        (lambda p: sidecar_path(p).write_text(json.dumps({**json.loads(sidecar_path(p).read_text()), "file": "../x.hnsw"})),
         "names no index file"),
        (lambda p: sidecar_path(p).unlink(), "sidecar missing"),
        (lambda p: sidecar_path(p).write_text("{not json"), "not valid JSON"),
        (lambda p: sidecar_path(p).write_text(sidecar_path(p).read_text()[:40]), "not valid JSON"),
        (lambda p: sidecar_path(p).write_text("[]"), "unknown format"),
        (lambda p: sidecar_path(p).write_text(json.dumps({**json.loads(sidecar_path(p).read_text()), "dim": "32"})), "'dim'"),
        (lambda p: sidecar_path(p).write_text(json.dumps({**json.loads(sidecar_path(p).read_text()), "elements": 10**9})), "inconsistent"),
    ],
)
def test_damage_is_detected_before_hnswlib_sees_the_file(saved, load_calls, damage, reason):
    ix, _, _ = saved
    damage(ix.path)
    with pytest.raises(IndexInvalid, match=reason):
        VectorIndex.load(ix.path, dim=DIM, model="m")
    assert load_calls == []


@pytest.mark.parametrize("kwargs,reason", [({"dim": 64, "model": "m"}, "dimension"), ({"dim": DIM, "model": "other"}, "model")])
def test_an_index_for_another_model_or_dimension_is_refused(saved, load_calls, kwargs, reason):
    ix, _, _ = saved
    with pytest.raises(IndexInvalid, match=reason):
        VectorIndex.load(ix.path, **kwargs)
    assert load_calls == []


def test_stale_temp_files_of_dead_processes_are_removed(tmp_path):
    dead_pid = 2**22 + 12345  # above the default pid_max: no such process
    stale = tmp_path / f"snippets.hnsw.tmp.{dead_pid}.abcd"
    mine = tmp_path / f"snippets.hnsw.tmp.{os.getpid()}.beef"
    stale.write_bytes(b"x")
    mine.write_bytes(b"y")
    removed = remove_stale_temp_files(tmp_path)
    assert removed == [stale] and not stale.exists() and mine.exists()


def test_deleted_labels_stay_deleted_after_a_reload(saved):
    ix, vectors, labels = saved
    ix.delete(labels[:40])
    side = ix.save(model="m", generation=8)
    assert side["deleted"] == labels[:40] and side["elements"] == 260
    loaded, _ = VectorIndex.load(ix.path, dim=DIM, model="m")
    assert loaded.labels == frozenset(labels[40:]) and len(loaded) == 260
    got, _ = loaded.query(vectors[:40], 10)
    assert not set(got.ravel().tolist()) & set(labels[:40])
    # a deleted label can be added back (hnswlib reuses a free slot for it)
    loaded.add(vectors[:1], [labels[0]])
    assert int(loaded.query(vectors[:1], 1)[0][0, 0]) == labels[0]


def test_extra_sidecar_fields_are_kept(saved):
    ix, _, _ = saved
    ix.save(model="m", generation=9, extra={"store_id": "abc", "source": "document"})
    _, side = VectorIndex.load(ix.path, dim=DIM, model="m")
    assert (side["store_id"], side["source"], side["generation"]) == ("abc", "document", 9)
