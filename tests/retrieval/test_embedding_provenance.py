"""What made a store's vectors, on both backends: recorded with the first vectors, and checked on a probe.

Stand-in embedders (instant, deterministic) play the backends: ``a`` builds
the store, ``close`` gives a's vectors moved by far less than the probe's
threshold, ``far`` gives other vectors. The real backends meet at the end:
a store built by the torch reference, opened with the default ONNX model.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from cleo_rules.cli import main
from cleo_rules.errors import StoreError
from cleo_rules.retrieval import EmbeddingNotice
from cleo_rules.retrieval.locate import open_memory
from cleo_rules.retrieval.provenance import META_KEYS, PROBE_MIN_COSINE, PROBE_TEXT, decode_probe

from helpers.embedders import ToyEmbedder

DOCS = [{"type": "document", "id": f"d{i}", "title": f"Job {i}", "date": "2024-03-01", "text": text}
        for i, text in enumerate(["replaced the pressure valve on Larch Close", "serviced the boiler at the mill",
                                  "quoted for van insurance with Hadley", "fired the kiln for the glaze batch"])]


class Stand(ToyEmbedder):
    """A backend of its own name, hash and runtime, over the toy model's vectors (``turn`` rotates them)."""

    model_name = "toy-bag-of-words-64"

    def __init__(self, backend: str, *, runtime: str = "toy 1", nudge: float = 0.0, shift: int = 0):
        self.backend, self.runtime, self.nudge, self.shift = backend, runtime, nudge, shift
        self.encoded: list[str] = []

    def provenance(self) -> dict:
        return {"backend": self.backend, "model_sha256": "f" * 64, "runtime": self.runtime}

    def encode(self, texts):
        self.encoded += list(texts)
        vectors = np.roll(super().encode(texts), self.shift, axis=1)
        vectors = vectors + self.nudge * np.linspace(-1, 1, self.dim, dtype=np.float32)
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(params=["embedded", "postgres"])
def fresh(request, tmp_path):
    """A function giving the location of a new store on the backend of the parameter."""
    if request.param == "embedded":
        names = iter(range(1000))
        return lambda: str(tmp_path / f"store-{next(names)}")
    pg = request.getfixturevalue("pg")
    return lambda: pg.url(f"p{os.getpid()}-{time.monotonic_ns() % 10**10}")


def built(location: str, embedder) -> str:
    with open_memory(location, embedder) as store:
        report = store.ingest_jsonl([json.dumps(d) for d in DOCS])
        assert report.added == len(DOCS)
    return location


def opened(location: str, embedder):
    """The store and the notices its opening gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = open_memory(location, embedder)
    return store, [str(w.message) for w in caught if issubclass(w.category, EmbeddingNotice)]


def test_the_first_vectors_record_backend_model_hash_runtime_and_the_probe(fresh):
    a = Stand("a")
    location = built(fresh(), a)
    with open_memory(location, Stand("a")) as store:
        stats = store.stats()
    assert stats["embedding"]["stored"] == {"backend": "a", "model_sha256": "f" * 64, "runtime": "toy 1",
                                            "recorded": True}
    assert stats["embedding"]["embedder"] == {"backend": "a", "model": "toy-bag-of-words-64"}
    if not location.startswith("postgresql"):
        with sqlite3.connect(Path(location) / "memory.db") as con:
            meta = dict(con.execute("SELECT key, value FROM meta"))
        assert {k: meta[k] for k in META_KEYS[:3]} == {"embed_backend": "a", "embed_model_sha256": "f" * 64,
                                                      "embed_runtime": "toy 1"}
        probe = decode_probe(meta["embed_probe"])
        assert probe is not None and np.array_equal(probe, a.encode([PROBE_TEXT])[0])


def test_the_same_backend_opens_silently_and_encodes_no_probe(fresh):
    location = built(fresh(), Stand("a"))
    again = Stand("a")
    store, notices = opened(location, again)
    with store:
        assert store.search("serviced the boiler at the mill", k=1).results[0].id == "d1"
    assert notices == [] and PROBE_TEXT not in again.encoded


def test_another_backend_is_told_and_used_as_it_is_when_the_probe_agrees(fresh):
    location = built(fresh(), Stand("a"))
    close = Stand("b", nudge=0.001)
    store, notices = opened(location, close)
    with store:
        assert len(notices) == 1
        assert "was built by the a backend (sha256 ffffffffffff, toy 1); this process embeds with the b backend" \
               in notices[0] and f"cosine >= {PROBE_MIN_COSINE}" in notices[0]
        assert store.search("quoted for van insurance with Hadley", k=1).results[0].id == "d2"
        assert close.encoded[0] == PROBE_TEXT  # checked before the first search
        assert store.add_document("d9", "Job 9", "2024-03-02", "rehung the studio door") == "added"
        assert store.stats()["embedding"]["stored"]["backend"] == "a"  # the store's vectors are still a's


def test_vectors_that_disagree_are_refused_with_how_to_reembed_and_nothing_is_written(fresh):
    location = built(fresh(), Stand("a"))
    far = Stand("c", shift=7)
    store, notices = opened(location, far)
    with store:
        assert len(notices) == 1 and "built by the a backend" in notices[0]
        with pytest.raises(StoreError) as refused:
            store.search("serviced the boiler at the mill", k=1)
        message = str(refused.value)
        assert refused.value.code == "E309"
        assert "holds vectors made by the a backend (sha256 ffffffffffff, toy 1); the c backend" in message
        assert f"below {PROBE_MIN_COSINE}" in message and "rebuild --reembed --db " in message
        with pytest.raises(StoreError, match="E309|below 0.999"):
            store.add_document("d9", "Job 9", "2024-03-02", "rehung the studio door")
        assert store.get(["d9#p0"]) == {}
        store.rebuild(reembed=True)  # the way out the message gives
        assert store.stats()["embedding"]["stored"]["backend"] == "c"
        assert store.search("serviced the boiler at the mill", k=1).results[0].id == "d1"
    store, notices = opened(location, Stand("a"))  # and now a is the stranger
    with store, pytest.raises(StoreError, match="made by the c backend"):
        store.search("serviced the boiler at the mill", k=1)
    assert notices and "built by the c backend" in notices[0]


def test_a_new_runtime_of_the_same_backend_is_checked_without_a_notice(fresh):
    location = built(fresh(), Stand("a"))
    upgraded = Stand("a", runtime="toy 2", nudge=0.001)
    store, notices = opened(location, upgraded)
    with store:
        assert store.search("serviced the boiler at the mill", k=1).results[0].id == "d1"
    assert notices == [] and upgraded.encoded[0] == PROBE_TEXT
    store, notices = opened(location, Stand("a", runtime="toy 3", shift=5))
    with store, pytest.raises(StoreError, match="toy 3\\) embeds the probe text to cosine"):
        store.search("serviced the boiler at the mill", k=1)
    assert notices == []


def test_a_store_from_before_backends_were_recorded_is_checked_on_its_first_piece(tmp_path):
    class Legacy(Stand):
        model_name = "all-MiniLM-L6-v2"  # the only model such a store could name

    location = built(str(tmp_path / "old"), Legacy("torch"))
    with sqlite3.connect(tmp_path / "old" / "memory.db") as con:  # as the earlier version left it
        con.execute(f"DELETE FROM meta WHERE key IN ({', '.join('?' * len(META_KEYS))})", META_KEYS)
    agreeing = Legacy("onnx", nudge=0.001)
    store, notices = opened(location, agreeing)
    with store:
        assert store.stats()["embedding"]["stored"] == {"backend": "torch", "model_sha256": None, "runtime": None,
                                                        "recorded": False}
        assert notices and "built by the torch backend (recorded before backends were" in notices[0]
        assert store.search("serviced the boiler at the mill", k=1).results[0].id == "d1"
        assert agreeing.encoded[0] == "replaced the pressure valve on Larch Close"  # the first stored piece
    store, _ = opened(location, Legacy("onnx", shift=3))
    with store, pytest.raises(StoreError, match="embeds the first stored piece to cosine"):
        store.search("serviced the boiler at the mill", k=1)


class Minilm(Stand):
    model_name = "all-MiniLM-L6-v2"  # the default embedder's model: only the backends differ


def test_the_command_line_shows_the_notice_the_refusal_and_what_embeds(tmp_path, capsys, monkeypatch):
    location = built(str(tmp_path / "mem"), Minilm("a"))
    monkeypatch.setenv("CLEO_EMBED_THREADS", "2")
    with pytest.raises(SystemExit) as done:
        main(["memory", "stats", "--db", location])
    out, err = capsys.readouterr()
    assert done.value.code == 0
    assert "vectors from:  a (model sha256 ffffffffffff, toy 1)" in out
    assert "embedder:      onnx int8 (onnxruntime " in out and "), 2 threads (CLEO_EMBED_THREADS)" in out
    assert err.startswith(f"Warning: memory store {location} was built by the a backend")
    assert "this process embeds with the onnx backend" in err
    with pytest.raises(SystemExit) as done:
        main(["memory", "search", "--db", location, "boiler"])
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == ""
    assert f"Error: memory store {location} holds vectors made by the a backend" in err
    assert f"`cleo-rules memory rebuild --reembed --db {location}`" in err


def test_a_store_built_by_the_torch_reference_is_refused_by_the_int8_model_until_reembedded(tmp_path, embedder,
                                                                                          reference_embedder):
    """The real pair: int8 and float32 agree to about 0.995 on the probe, under the 0.999 the check asks."""
    location = built(str(tmp_path / "ref"), reference_embedder)
    store, notices = opened(location, embedder)
    with store:
        assert len(notices) == 1 and "was built by the torch backend (sha256 " in notices[0]
        with pytest.raises(StoreError, match=r"the onnx backend \(sha256 \w+, onnxruntime [\d.]+\) embeds the probe "
                                             r"text to cosine 0\.99\d\d, below 0\.999"):
            store.search("boiler at the mill", k=1)
        store.rebuild(reembed=True)
        assert store.search("boiler at the mill", k=1).results[0].id == "d1"
        assert store.stats()["embedding"]["stored"]["backend"] == "onnx"
    store, notices = opened(location, embedder)
    with store:
        assert notices == [] and store.search("the kiln", k=1).results[0].id == "d3"
