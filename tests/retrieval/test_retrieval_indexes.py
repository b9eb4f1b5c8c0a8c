"""IndexSet: damaged, missing or foreign index files, stale indexes, other writers, SIGKILL mid-ingest.

Every case opens the damaged store in this very process: a segfault in
hnswlib would kill the test run, so passing means none happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import cleo_rules.retrieval.hnsw_file as index_mod
from cleo_rules.resources import data_dir
from cleo_rules.retrieval import MemoryStore, StoreWarning
from cleo_rules.retrieval.hnsw_file import index_file, sidecar_path

SAMPLE_LINES = (data_dir() / "sample_memory.jsonl").read_text(encoding="utf-8").splitlines()
SUBSET = SAMPLE_LINES[:16]
QUERIES = [
    "van insurance excess and tools cover",
    "boiler care club members",
    "copper pipe prices",
    "apprentice college day",
    "accounting software invoices from the van",
    "bathroom deposit",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder):
    """A small closed store, its query vectors and its reference answers."""
    path = tmp_path_factory.mktemp("faults") / "store"
    with MemoryStore.open(path, embedder=embedder) as store:
        store.ingest_jsonl(SUBSET)
    vectors = embedder.encode(QUERIES)
    with MemoryStore.open(path, embedder=embedder) as store:
        reference = answers(store, vectors)
    return path, vectors, reference


def answers(store, vectors):
    """Items and scores for each query, for comparing stores."""
    return [[(r.item, round(r.score, 4)) for r in response] for response in store.search_vectors(vectors, k=8)]


@pytest.fixture
def damaged(built, tmp_path):
    path, vectors, reference = built
    copy = tmp_path / "store"
    shutil.copytree(path, copy)
    return copy, vectors, reference




def truncate_half(p):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def truncate_one_byte(p):
    p.write_bytes(p.read_bytes()[:-1])


def truncate_to_zero(p):
    p.write_bytes(b"")


def flip_bytes(p):
    data = bytearray(p.read_bytes())
    for i in range(0, len(data), 501):
        data[i] ^= 0x5A
    p.write_bytes(bytes(data))


def same_size_garbage(p):
    p.write_bytes(os.urandom(p.stat().st_size))


def delete_index(p):
    index_file(p).unlink()


def delete_sidecar(p):
    sidecar_path(p).unlink()


def garble_sidecar(p):
    sidecar_path(p).write_bytes(b"\x00\xff{{{")


def truncate_sidecar(p):
    side = sidecar_path(p)
    side.write_bytes(side.read_bytes()[:30])


def edit_sidecar(**changes):
    def damage(p):
        side = sidecar_path(p)
        side.write_text(json.dumps({**json.loads(side.read_text()), **changes}))

    damage.__name__ = "sidecar_" + "_".join(changes)
    return damage


BYTE_DAMAGE = [truncate_half, truncate_one_byte, truncate_to_zero, flip_bytes, same_size_garbage]
SIDECAR_DAMAGE = [
    delete_index,
    delete_sidecar,
    garble_sidecar,
    truncate_sidecar,
    edit_sidecar(model="some-other-model"),
    edit_sidecar(dim=768),
    edit_sidecar(deleted="all"),
]


def reopen_and_compare(copy, vectors, reference, embedder, match):
    with pytest.warns(StoreWarning, match=match) as record:
        store = MemoryStore.open(copy, embedder=embedder)
    try:
        assert answers(store, vectors) == reference
        text = store.search(QUERIES[0], k=3).results
        assert text and text[0].item == reference[0][0][0]
    finally:
        store.close()
    # the repaired index was saved: the next open needs no repair
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        with MemoryStore.open(copy, embedder=embedder) as again:
            assert answers(again, vectors) == reference
    return record


@pytest.mark.parametrize("which", ["snippets.hnsw", "passages.hnsw"])
@pytest.mark.parametrize("damage", BYTE_DAMAGE, ids=lambda f: f.__name__)
def test_damaged_index_file_is_rebuilt_without_being_loaded(damaged, embedder, load_calls, which, damage):
    copy, vectors, reference = damaged
    damage(index_file(copy / which))
    reopen_and_compare(copy, vectors, reference, embedder, "rebuilding")
    assert len(load_calls) == 1 + 2  # only the healthy index at the first open, both at the second


@pytest.mark.parametrize("which", ["snippets.hnsw", "passages.hnsw"])
@pytest.mark.parametrize("damage", SIDECAR_DAMAGE, ids=lambda f: f.__name__)
def test_missing_or_damaged_sidecar_or_index_is_rebuilt(damaged, embedder, load_calls, which, damage):
    copy, vectors, reference = damaged
    damage(copy / which)
    reopen_and_compare(copy, vectors, reference, embedder, "rebuilding")
    assert len(load_calls) == 1 + 2


@pytest.mark.parametrize("which", ["snippets.hnsw", "passages.hnsw"])
def test_a_whole_file_whose_sidecar_disagrees_is_loaded_and_reconciled(damaged, embedder, load_calls, which):
    copy, vectors, reference = damaged
    edit_sidecar(sha256="0" * 64)(copy / which)
    reopen_and_compare(copy, vectors, reference, embedder, "pair disagrees.*loaded and reconciled")
    assert len(load_calls) == 2 + 2  # the file was checked in full and loaded, not rebuilt


def test_a_sidecar_whose_counts_disagree_with_a_sound_file(damaged, embedder, load_calls):
    copy, vectors, reference = damaged
    edit_sidecar(elements=3)(copy / "snippets.hnsw")
    reopen_and_compare(copy, vectors, reference, embedder, "do not match the sidecar")


def test_both_indexes_deleted(damaged, embedder):
    copy, vectors, reference = damaged
    for name in ("snippets.hnsw", "passages.hnsw"):
        index_file(copy / name).unlink()
        sidecar_path(copy / name).unlink()
    record = reopen_and_compare(copy, vectors, reference, embedder, "rebuilding")
    assert len(record) == 2


def test_the_other_sources_index_in_its_place_is_refused(damaged, embedder):
    copy, vectors, reference = damaged
    for f in copy.glob("snippets.hnsw*"):
        f.unlink()
    shutil.copy(sidecar_path(copy / "passages.hnsw"), sidecar_path(copy / "snippets.hnsw"))
    side = json.loads(sidecar_path(copy / "snippets.hnsw").read_text())
    shutil.copy(copy / side["file"], copy / side["file"].replace("passages", "snippets"))
    side["file"] = side["file"].replace("passages", "snippets")
    sidecar_path(copy / "snippets.hnsw").write_text(json.dumps(side))
    reopen_and_compare(copy, vectors, reference, embedder, "not 'conversation'")


def test_an_index_from_another_store_is_refused(damaged, embedder, tmp_path):
    copy, vectors, reference = damaged
    with MemoryStore.open(tmp_path / "other", embedder=embedder) as other:
        other.ingest_jsonl(SUBSET[:5])
    for f in copy.glob("snippets.hnsw*"):
        f.unlink()
    for f in (tmp_path / "other").glob("snippets.hnsw*"):
        shutil.copy(f, copy / f.name)
    reopen_and_compare(copy, vectors, reference, embedder, "another store")


def test_an_index_left_behind_is_caught_up(damaged, embedder, tmp_path):
    copy, vectors, _ = damaged
    saved = tmp_path / "old-index"
    saved.mkdir()
    for f in copy.glob("*.hnsw*"):
        shutil.copy(f, saved / f.name)
    with MemoryStore.open(copy, embedder=embedder) as store:
        store.ingest_jsonl(SAMPLE_LINES[16:24])
        store.delete_conversation(json.loads(SUBSET[0])["id"])
        store.delete_document(next(json.loads(x)["id"] for x in SUBSET if '"document"' in x))
        reference = answers(store, vectors)
    for f in copy.glob("*.hnsw*"):
        f.unlink()
    for f in saved.iterdir():  # the indexes as they were before those writes
        shutil.copy(f, copy / f.name)
    record = reopen_and_compare(copy, vectors, reference, embedder, "behind the database")
    assert any("missing" in str(w.message) and "deleted" in str(w.message) for w in record)


def test_a_database_restored_from_a_backup_gets_a_fresh_index(damaged, embedder, tmp_path):
    copy, vectors, reference = damaged
    backup = tmp_path / "backup"
    shutil.copytree(copy, backup)
    with MemoryStore.open(copy, embedder=embedder) as store:  # writes after the backup
        store.ingest_jsonl(SAMPLE_LINES[16:24])
        store.delete_conversation(json.loads(SUBSET[1])["id"])
    for f in backup.glob("memory.db*"):
        shutil.copy(f, copy / f.name)
    for f in copy.glob("memory.db-*"):
        if not (backup / f.name).exists():
            f.unlink()
    reopen_and_compare(copy, vectors, reference, embedder, "newer than the database")


def test_leftover_temp_files_are_cleaned_up(damaged, embedder):
    copy, vectors, reference = damaged
    junk = copy / "snippets.hnsw.tmp.4194999.dead"  # a pid above the default pid_max
    junk.write_bytes(b"half-written index")
    with MemoryStore.open(copy, embedder=embedder) as store:
        assert answers(store, vectors) == reference
    assert not junk.exists()


def test_a_damaged_embedding_blob_is_left_out_with_a_warning(damaged, embedder):
    copy, vectors, _ = damaged
    con = sqlite3.connect(copy / "memory.db")
    label, item = con.execute("SELECT label, item FROM passages ORDER BY label LIMIT 1").fetchone()
    con.execute("UPDATE passages SET embedding = x'00' WHERE label = ?", (label,))
    con.commit()
    con.close()
    index_file(copy / "passages.hnsw").unlink()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        store = MemoryStore.open(copy, embedder=embedder)
    assert any("damaged embedding" in str(w.message) for w in record)
    with store:
        items = {r.item for response in store.search_vectors(vectors, k=50) for r in response}
        assert item not in items and len(items) > 10


def test_sigkill_mid_ingest_loses_no_committed_item(tmp_path, embedder):
    """Kill a real `cleo-rules memory ingest` process while it is writing, then reopen."""
    total = 300
    source = tmp_path / "big.jsonl"
    rng = np.random.default_rng(11)
    words = "boiler valve radiator invoice van quote copper pipe leak service tap cylinder flue pump".split()
    texts = []
    with source.open("w") as fh:
        for i in range(total):
            text = f"Job sheet {i}: " + " ".join(rng.choice(words, 12)) + "."
            texts.append(text)
            fh.write(json.dumps({"type": "document", "id": f"job-{i:05d}", "title": f"Job {i}",
                                 "date": "2024-03-01", "text": text}) + "\n")
    db_dir = tmp_path / "store"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cleo_rules", "memory", "ingest", "--db", str(db_dir), str(source),
             "--batch-size", "16", "--no-progress"],
            env=env, stdout=subprocess.DEVNULL, stderr=err,
        )
    committed: list[str] = []
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            time.sleep(0.05)
            assert proc.poll() is None, errors.read_text()
            if not (db_dir / "memory.db").exists():
                continue
            try:
                con = sqlite3.connect(f"file:{db_dir / 'memory.db'}?mode=ro", uri=True, timeout=5)
                rows = con.execute("SELECT id FROM documents").fetchall()
                con.close()
            except sqlite3.OperationalError:
                continue
            if len(rows) >= 48:
                committed = [r[0] for r in rows]
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        if proc.poll() is None and not committed:
            proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert 48 <= len(committed) < total  # killed in the middle

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        store = MemoryStore.open(db_dir, embedder=embedder)
    with store:
        stored = [r[0] for r in store.db.execute("SELECT id FROM documents")]
        assert set(committed) <= set(stored) and len(stored) < total
        stats = store.stats()
        assert stats["passages"] == stats["indexes"]["passages"]["elements"] == len(stored)
        # answers agree with exact search over the vectors in SQLite
        rows = store.db.execute("SELECT label, item, embedding FROM passages").fetchall()
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        items = [r[1] for r in rows]
        queries = embedder.encode(["Job sheet 3: boiler leak", "copper pipe and cylinder flue", "invoice for the van"])
        exact = np.argsort(-(queries @ matrix.T), axis=1)[:, :10]
        for q, response in enumerate(store.search_vectors(queries, k=10)):
            got = [r.item for r in response]
            assert got[0] == items[exact[q, 0]]
            assert len(set(got) & {items[i] for i in exact[q]}) >= 9
        # finishing the ingest keeps what was there and adds the rest
        report = store.ingest_jsonl(source)
        assert report.unchanged == len(stored) and report.added == total - len(stored)
        assert store.stats()["documents"] == total
        top = store.search(texts[-1], k=1).results[0]
        assert top.id == f"job-{total - 1:05d}" and top.score > 0.999


def test_a_failed_index_save_is_a_warning_and_heals_at_next_open(damaged, embedder, monkeypatch):
    copy, vectors, _ = damaged

    def disk_full(self, **kwargs):
        raise OSError(28, "No space left on device")

    with MemoryStore.open(copy, embedder=embedder) as store:
        monkeypatch.setattr(index_mod.VectorIndex, "save", disk_full)
        with pytest.warns(StoreWarning, match="No space left"):
            store.add_document("doc-late", "Late note", "2025-05-01", "The flue on the loft conversion needs a terminal guard.")
        reference = answers(store, vectors)
        with pytest.warns(StoreWarning, match="No space left"):
            store.close()
    monkeypatch.undo()
    record = reopen_and_compare(copy, vectors, reference, embedder, "behind the database")
    assert any("1 missing" in str(w.message) for w in record)


def test_two_writers_on_one_store_leave_a_consistent_index(tmp_path, embedder):
    path = tmp_path / "shared"
    a = MemoryStore.open(path, embedder=embedder)
    b = MemoryStore.open(path, embedder=embedder)
    a.add_document("d1", "Gutter note", "2024-01-01", "The gutter over the back door leaks in heavy rain.")
    b.add_document("d2", "Meter note", "2024-01-02", "The gas meter is in the cupboard under the stairs.")
    a.add_document("d3", "Tap note", "2024-01-03", "The kitchen mixer tap drips from the spout.")
    b.delete_document("d1")
    assert b.search("where is the gas meter", k=1).results[0].id == "d2"
    assert [r.id for r in a.search("dripping kitchen tap", k=5)] == ["d3", "d2"]
    a.close()
    b.close()  # closed last, with a view that was behind a's last write until it saved
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        with MemoryStore.open(path, embedder=embedder) as again:
            assert sorted(r.id for r in again.search("note", k=5)) == ["d2", "d3"]
