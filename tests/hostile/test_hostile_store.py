"""Hostile stores and ingest files (issue 12, items 13-19): every failure located and contained, nothing lost.

Each test is named after its item. Attacks that could hang, exhaust memory
or print a traceback run in a subprocess under ``RLIMIT_AS`` and an alarm
(``hostile.run_python``); the rest run in-process with the toy embedder.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
import warnings
from pathlib import Path

import pytest

from cleo_rules.cli import main
from cleo_rules.errors import IngestError, StoreError
from cleo_rules.retrieval import MemoryStore, StoreWarning
from cleo_rules.retrieval import hnsw_file as index_mod
from cleo_rules.retrieval import sqlite_schema as schema
from cleo_rules.retrieval.chunk import DEFAULT_CHUNK_MAX_CHARS, chunk_text
from cleo_rules.trace import REDACTED, TABLE, Tracer, read_traces
from cleo_rules.turn import Recall

from helpers.embedders import ToyEmbedder
from helpers.hostile import TOY_EMBEDDER, conversations, documents, jsonl, last_json, run_python, snapshot
from helpers.results import decision

DEEP = '{"type": "document", "id": "deep", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"


@pytest.fixture
def store_dir(tmp_path):
    """A small store (documents, conversations, both indexes saved) built with the toy embedder."""
    path = tmp_path / "mem"
    with MemoryStore.open(path, embedder=ToyEmbedder()) as store:
        report = store.ingest_jsonl(jsonl(documents(30) + conversations(5)).encode())
        assert report.added == 35
    return path


@pytest.fixture
def toy_cli(monkeypatch):
    """Stores the CLI opens get the toy embedder; returns run(*argv, stdin=...) -> (code, out, err)."""
    import io
    import sys

    original = MemoryStore.open.__func__

    def open_(cls, path, *args, **kwargs):
        kwargs["embedder"] = ToyEmbedder()
        return original(cls, path, **kwargs)

    monkeypatch.setattr(MemoryStore, "open", classmethod(open_))

    def run(capsys, *argv, stdin: bytes | None = None):
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        out, err = capsys.readouterr()
        return info.value.code, out, err

    return run


def _count(path: Path) -> tuple[int, int]:
    with MemoryStore.open(path, read_only=True) as store:
        stats = store.stats()
    return stats["documents"], stats["conversations"]


# -- 13: ingest skips what it cannot read, by line number -----------------------------------------


GOOD = documents(3, prefix="good")


@pytest.mark.parametrize("bad, code, pointer", [
    (DEEP, "E318", ""),
    (json.dumps({"type": "document", "id": "s", "title": "t", "date": "2024-01-01", "text": "boiler \ud800 x"}),
     "E319", "/text"),
    (json.dumps({"type": "document", "id": "\udfff", "title": "t", "date": "2024-01-01", "text": "boiler"}),
     "E319", "/id"),
    (json.dumps({"type": "conversation", "id": "c", "title": "t", "date": "2024-01-01",
                 "messages": [{"role": "user", "text": "hi \ud83d there"}]}), "E319", "/messages/0/text"),
], ids=["recursion", "surrogate-in-text", "surrogate-in-id", "surrogate-in-message"])
def test_13_ingest_recursion_error_or_surrogate_skips_the_line(tmp_path, bad, code, pointer):
    lines = jsonl([GOOD[0], bad, GOOD[1], GOOD[2]])
    with MemoryStore.open(tmp_path / "m", embedder=ToyEmbedder()) as store:
        report = store.ingest_jsonl(lines.encode("utf-8", "surrogatepass"), batch_size=32)  # one batch
        assert (report.added, report.skipped) == (3, 1)
        (problem,) = report.problems
        assert (problem.code, problem.line, problem.pointer) == (code, 2, pointer)
        assert "line 2" in report.summary()
        assert {r.id for r in store.search("note number", k=10).results} == {"good0", "good1", "good2"}
    with MemoryStore.open(tmp_path / "s", embedder=ToyEmbedder()) as store, pytest.raises(IngestError) as info:
        store.ingest_jsonl(lines.encode("utf-8", "surrogatepass"), strict=True)
    assert info.value.problems[0].code == code and "nothing was ingested" in str(info.value)
    assert _count(tmp_path / "s") == (0, 0)  # strict: the whole file rejected, nothing changed


def test_13_ingest_cli_reports_by_line_and_keeps_the_rest(tmp_path, capsys, toy_cli):
    path = tmp_path / "in.jsonl"
    path.write_bytes(jsonl([GOOD[0], DEEP, '{"type": "document", "id": "\\ud800", "title": "t", "date": '
                            '"2024-01-01", "text": "x"}', GOOD[1]]).encode())
    code, out, err = toy_cli(capsys, "memory", "ingest", "--db", str(tmp_path / "m"), str(path))
    assert code == 0, err
    assert "2 added, 0 updated, 0 unchanged, 2 skipped (lines 2, 3)" in out
    assert f"{path}:2:1: error[E318]" in err and f"{path}:3:1: error[E319] at /id" in err
    assert "Traceback" not in err


def test_13_the_api_refuses_a_lone_surrogate_as_an_ingest_error(tmp_path):
    with MemoryStore.open(tmp_path, embedder=ToyEmbedder()) as store:
        with pytest.raises(IngestError, match="lone surrogate") as info:
            store.add_document("d\ud800", "t", "2024-01-01", "boiler")
        assert info.value.problems[0].code == "E319"
        with pytest.raises(IngestError, match="lone surrogate"):
            store.add_conversation("c", "t", "2024-01-01", [{"role": "user", "text": "\udc80"}])
        assert store.stats()["documents"] == 0


def test_13_a_failed_batch_says_which_lines_are_stored(tmp_path, monkeypatch):
    store = MemoryStore.open(tmp_path, embedder=ToyEmbedder())
    real = store._write
    calls = []

    def failing(items, timings=None):
        calls.append(len(items))
        if len(calls) == 2:
            raise StoreError("cannot write to memory store: database or disk is full")
        return real(items, timings)

    monkeypatch.setattr(store, "_write", failing)
    with pytest.raises(StoreError) as info:
        store.ingest_jsonl(jsonl(documents(5)).encode(), batch_size=2)
    store.close()
    assert "lines 1-2 of <lines> are stored; the batch from line 3 on was not" in str(info.value)
    assert _count(tmp_path) == (2, 0)


# -- 14: store files that are not regular files ------------------------------------------------------

OPEN_AND_SEARCH = TOY_EMBEDDER + '''
import json, sys, warnings
from cleo_rules.errors import StoreError
from cleo_rules.retrieval import MemoryStore
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        with MemoryStore.open(sys.argv[1], embedder=Toy()) as store:
            hits = [r.id for r in store.search("boiler service", k=3).results]
            if sys.argv[2] == "rebuild":
                store.rebuild()
        out = {"ok": True, "hits": hits}
    except StoreError as exc:
        out = {"ok": False, "code": exc.code, "error": str(exc)}
print(json.dumps({**out, "warnings": [str(w.message) for w in caught]}))
'''


def _make(path: Path, kind: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
        (path / "x").write_text("x")
    elif kind == "deep-json":
        path.write_text("[" * 200_000 + "]" * 200_000)


def pair(path: Path) -> dict[str, bytes]:
    """The passage index's files (its sidecar and the file it names), by name."""
    return {f.name: f.read_bytes() for f in path.glob("passages.hnsw*")}


FILES = ["snippets.hnsw", "snippets.hnsw.json", "passages.hnsw", "passages.hnsw.json"]


@pytest.mark.parametrize("which, kind", [(w, k) for w in FILES for k in ("fifo", "dev-zero", "directory")]
                         + [(w, "deep-json") for w in FILES if w.endswith(".json")])
def test_14_an_index_or_sidecar_that_is_not_a_regular_file_is_rebuilt_unread(store_dir, which, kind):
    from cleo_rules.retrieval.hnsw_file import index_file

    sidecar = which.endswith(".json")
    _make(store_dir / which if sidecar else index_file(store_dir / which), kind)  # the file the sidecar names
    res = run_python(OPEN_AND_SEARCH, str(store_dir), "search", memory=1 << 30, seconds=20)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    out = last_json(res.stdout)
    assert out["ok"] and out["hits"], out
    label = "snippet" if which.startswith("snippets") else "passage"
    assert any(f"{label} index in {store_dir}" in w and "rebuilding it from SQLite" in w for w in out["warnings"])
    if kind == "directory" and sidecar:  # cannot be replaced by a rename: said so, and the data is safe in SQLite
        assert any("is a directory, not a regular file; remove it" in w for w in out["warnings"]), out
    else:  # repaired: the next open loads the saved index without a warning
        again = last_json(run_python(OPEN_AND_SEARCH, str(store_dir), "search", seconds=20).stdout)
        assert again["ok"] and again["warnings"] == [] and again["hits"] == out["hits"]


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_14_a_lock_file_that_is_not_a_regular_file_fails_rebuild_clearly(store_dir, kind):
    _make(store_dir / "index.lock", kind)
    res = run_python(OPEN_AND_SEARCH, str(store_dir), "rebuild", memory=1 << 30, seconds=20)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    out = last_json(res.stdout)
    assert not out["ok"] and out["code"] == "E304", out
    what = "a FIFO" if kind == "fifo" else "a directory"
    assert f"index.lock is {what}, not a regular file; remove it" in out["error"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_14_a_database_that_is_not_a_regular_file_is_refused(store_dir, kind):
    _make(store_dir / "memory.db", kind)
    res = run_python(OPEN_AND_SEARCH, str(store_dir), "search", memory=1 << 30, seconds=20)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    out = last_json(res.stdout)
    assert not out["ok"] and out["code"] == "E304" and "memory.db is a" in out["error"], out


def test_14_in_process_checks_name_the_kind_of_file(store_dir):
    """The same refusals, in-process (so the codes are recorded), for the database and the lock file."""
    os.mkfifo(store_dir / "memory.db-wal")
    with pytest.raises(StoreError, match=r"memory.db-wal is a FIFO, not a regular file") as info:
        MemoryStore.open(store_dir)
    assert info.value.code == "E304"
    (store_dir / "memory.db-wal").unlink()
    (store_dir / "index.lock").unlink(missing_ok=True)
    (store_dir / "index.lock").mkdir()
    store = MemoryStore.open(store_dir, embedder=ToyEmbedder())
    with pytest.raises(StoreError, match="index.lock is a directory") as info:
        store.rebuild()
    assert info.value.code == "E304"
    with pytest.warns(StoreWarning, match="index.lock is a directory, not a regular file"):
        store.add_document("new", "t", "2024-01-01", "boiler")  # stored; the index save that follows is refused
        store.close()
    with pytest.warns(StoreWarning, match="behind the database"):
        assert _count(store_dir) == (31, 5)


# -- 15: SQLite faults are StoreErrors that say what to do ---------------------------------------------


def test_15_opening_for_reading_writes_nothing(store_dir):
    before = snapshot(store_dir)
    conn = sqlite3.connect(store_dir / "memory.db")
    changes = conn.execute("PRAGMA data_version").fetchone()[0]
    for read_only in (True, False):  # a plain open writes nothing either (it used to write meta rows)
        with MemoryStore.open(store_dir, embedder=ToyEmbedder(), read_only=read_only) as store:
            store.stats()
            store.search("boiler")
    assert conn.execute("PRAGMA data_version").fetchone()[0] == changes  # no other connection committed
    conn.close()
    after = snapshot(store_dir)
    assert {k: v for k, v in after.items() if k != "memory.db-wal"} == \
        {k: v for k, v in before.items() if k != "memory.db-wal"}


def test_15_with_another_writer_holding_the_database_reads_work_and_writes_fail_fast(store_dir, capsys, toy_cli,
                                                                                    monkeypatch):
    monkeypatch.setattr(schema, "BUSY_TIMEOUT_MS", 300)
    writer = sqlite3.connect(store_dir / "memory.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE meta SET value = value WHERE key = 'created_at'")
    try:
        start = time.perf_counter()
        for argv in (["memory", "stats", "--db", str(store_dir)],
                     ["memory", "search", "--db", str(store_dir), "boiler service"],
                     ["relevance", "sample", "--db", str(store_dir), "--n", "3"]):
            code, out, err = toy_cli(capsys, *argv)
            assert code == 0, (argv, err)
        assert time.perf_counter() - start < 5
        code, out, err = toy_cli(capsys, "memory", "delete", "--db", str(store_dir), "--document", "d1")
        assert code == 2 and "Traceback" not in err
        assert f"Error: memory store {store_dir} is busy: another process holds its database" in err
        assert "try again when that process" in err
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_15_corrupt_pages_are_a_store_error_that_says_what_to_do(store_dir, capsys, toy_cli):
    path = store_dir / "memory.db"
    data = bytearray(path.read_bytes())
    data[4096 * 2:] = os.urandom(len(data) - 4096 * 2)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        with MemoryStore.open(store_dir, embedder=ToyEmbedder()) as store:
            store.search("boiler")
            store.stats()
    assert info.value.code == "E303"
    assert "is damaged: SQLite says" in str(info.value) and "restore the directory from a backup" in str(info.value)
    code, _, err = toy_cli(capsys, "memory", "stats", "--db", str(store_dir))
    assert code == 2 and "is damaged" in err and "Traceback" not in err


@pytest.mark.parametrize("key, value", [("schema_version", "one"), ("generation:conversation", "1.5"),
                                        ("generation:document", ""), ("dim", "64x")])
def test_15_meta_values_that_are_not_integers_are_a_damaged_store(store_dir, key, value):
    with sqlite3.connect(store_dir / "memory.db") as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    with pytest.raises(StoreError, match=f"is damaged: {key!r} is {value!r}, not a whole number") as info:
        MemoryStore.open(store_dir, read_only=True)
    assert info.value.code == "E303"


def test_15_a_missing_meta_row_is_a_damaged_store(store_dir):
    with sqlite3.connect(store_dir / "memory.db") as conn:
        conn.execute("DELETE FROM meta WHERE key = 'store_id'")
    with pytest.raises(StoreError, match="the row 'store_id' is missing"):
        MemoryStore.open(store_dir)


# -- 16: concurrent ingests both land ------------------------------------------------------------------

INGEST = TOY_EMBEDDER + '''
import os, sys, time
from cleo_rules.retrieval import MemoryStore
path, lines, go = sys.argv[1], sys.argv[2], sys.argv[3]
with MemoryStore.open(path, embedder=Toy()) as store:
    while not os.path.exists(go):
        time.sleep(0.005)
    report = store.ingest_jsonl(lines, batch_size=2)  # many write transactions, interleaved
print(report.added, report.skipped)
'''


def test_16_two_processes_ingesting_into_one_store_both_land(tmp_path):
    import subprocess
    import sys

    from helpers.hostile import LIMITS, ROOT

    store = tmp_path / "mem"
    MemoryStore.open(store, embedder=ToyEmbedder()).close()
    files = []
    for name in ("a", "b"):
        f = tmp_path / f"{name}.jsonl"
        f.write_text(jsonl(documents(80, prefix=name)))
        files.append(f)
    go = tmp_path / "go"
    script = LIMITS.format(memory=2 << 30, seconds=60) + INGEST
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(store), str(f), str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for f in files]
    time.sleep(0.5)  # both have opened the store
    go.write_text("")
    results = [p.communicate(timeout=90) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert out.split() == ["80", "0"]
    with MemoryStore.open(store, embedder=ToyEmbedder(), read_only=True) as s:
        assert s.stats()["documents"] == 160
        assert s.stats()["indexes"]["passages"]["elements"] == s.stats()["passages"]
        assert {r.id for r in s.search("note number 79", k=200).results} >= {"a79", "b79"}


def test_16_a_write_between_our_read_and_our_write_cannot_fail_the_ingest(store_dir, monkeypatch):
    """What the two processes above race into, made certain: another writer commits after our transaction read.

    A deferred BEGIN then fails at its first write, at once, whatever the busy
    timeout; an immediate one holds the write lock from the start, so the
    other writer waits instead.
    """
    store = MemoryStore.open(store_dir, embedder=ToyEmbedder())
    other = sqlite3.connect(store_dir / "memory.db", timeout=0.1, isolation_level=None)
    real = store.indexes.set_model
    outcome = []

    def interleaved(*args, **kwargs):
        store.db.conn.execute("SELECT count(*) FROM documents").fetchone()  # our transaction has read
        try:
            other.execute("INSERT INTO meta (key, value) VALUES ('other', 'process')")  # another process writes
            outcome.append("the other writer committed")
        except sqlite3.OperationalError:
            outcome.append("the other writer waited")
        return real(*args, **kwargs)

    monkeypatch.setattr(store.indexes, "set_model", interleaved)
    assert store.add_document("new", "t", "2024-01-01", "boiler") == "added"
    store.close()
    other.close()
    assert outcome == ["the other writer waited"]


def test_16_write_transactions_begin_immediate(store_dir):
    seen = []
    store = MemoryStore.open(store_dir, embedder=ToyEmbedder())
    store.db.conn.set_trace_callback(seen.append)
    store.add_document("new", "t", "2024-01-01", "boiler")
    store.delete_document("new")
    store.close()
    begins = [s for s in seen if s.strip().upper().startswith("BEGIN")]
    assert begins and all(s.strip().upper() == "BEGIN IMMEDIATE" for s in begins), begins


# -- 17: a save on a full disk leaves the previous index in place -----------------------------------------

OPEN_UNDER_FSIZE = '''
import json, resource, sys, warnings
from cleo_rules.retrieval import MemoryStore
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # writes beyond it fail (EFBIG): a full disk
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with MemoryStore.open(sys.argv[1]) as store:      # loads the old index, catches up, tries to save
        stats = store.stats()
print(json.dumps({"passages": stats["indexes"]["passages"]["elements"], "warnings": [str(w.message) for w in caught]}))
'''


def test_17_a_save_on_a_full_disk_leaves_the_previous_index_in_place(tmp_path):
    path = tmp_path / "mem"
    with MemoryStore.open(path, embedder=ToyEmbedder()) as store:
        store.ingest_jsonl(jsonl(documents(40)).encode())
    old = pair(path)
    with MemoryStore.open(path, embedder=ToyEmbedder()) as store:
        store.ingest_jsonl(jsonl(documents(400, start=40)).encode())
    big = max(len(data) for data in pair(path).values())
    for f in path.glob("passages.hnsw*"):
        f.unlink()
    for name, data in old.items():  # put the small, sound pair back: the next open finds it behind
        (path / name).write_bytes(data)
    limit = (max(len(data) for data in old.values()) + big) // 2  # the old index fits, the new one does not
    assert limit > 32768  # SQLite's shared-memory file fits too
    db = (path / "memory.db").stat()
    res = run_python(OPEN_UNDER_FSIZE, str(path), str(limit), seconds=30)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    out = last_json(res.stdout)
    assert out["passages"] == 440  # caught up in memory from SQLite
    assert any("could not save the passage index" in w and "rebuilt from SQLite" in w for w in out["warnings"]), out
    assert pair(path) == old  # the previous pair, untouched, and no file of the failed save
    assert not [p for p in path.iterdir() if ".tmp." in p.name]
    assert (path / "memory.db").stat().st_mtime_ns == db.st_mtime_ns  # opening wrote nothing to SQLite
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with MemoryStore.open(path, embedder=ToyEmbedder()) as store:
            assert store.stats()["indexes"]["passages"]["elements"] == 440
    assert [str(w.message) for w in caught if "behind the database" in str(w.message)]  # a sound file, caught up
    assert not [w for w in caught if "rebuilding" in str(w.message)]


def test_17_a_short_index_file_is_never_vouched_for(store_dir, monkeypatch):
    """hnswlib reports no failed write: a file cut short is caught before the sidecar or the rename."""
    old = pair(store_dir)
    store = MemoryStore.open(store_dir, embedder=ToyEmbedder())
    index = store.indexes["document"]
    assert index is not None

    class ShortWrites:
        def __init__(self, raw):
            self.raw = raw

        def save_index(self, name):
            self.raw.save_index(name)
            with open(name, "r+b") as fh:
                fh.truncate(os.path.getsize(name) - 100)  # what a full disk leaves

        def __getattr__(self, attr):
            return getattr(self.raw, attr)

    index._index = ShortWrites(index._index)
    with pytest.raises(OSError, match="written short"):
        index.save(model="m", generation=1)
    with pytest.warns(StoreWarning, match=r"could not save the passage index .*written short .*is the disk full"):
        store.add_document("new", "t", "2024-01-01", "boiler service for the new van")  # saved after the write
        store.close()
    assert pair(store_dir) == old
    with pytest.warns(StoreWarning, match=r"behind the database \(1 missing"):  # the old file loads, caught up
        again = MemoryStore.open(store_dir, embedder=ToyEmbedder())
    with again:
        assert "new" in {r.id for r in again.search("boiler service new van", k=5).results}


def test_17_check_hnsw_file_accepts_whole_files_only(tmp_path):
    from cleo_rules.retrieval.hnsw_file import VectorIndex, check_hnsw_file, index_file

    import numpy as np

    index = VectorIndex(tmp_path / "x.hnsw", 8)
    index.add(np.random.default_rng(0).random((50, 8), dtype=np.float32), range(50))
    index.save(model="m", generation=1)
    data = index_file(tmp_path / "x.hnsw").read_bytes()
    for cut in (0, 10, 96, len(data) // 2, len(data) - 1):
        (tmp_path / "y").write_bytes(data[:cut])
        fd = os.open(tmp_path / "y", os.O_RDONLY)
        try:
            with pytest.raises(OSError):
                check_hnsw_file(fd, slots=50, dim=8)
        finally:
            os.close(fd)
    fd = os.open(index_file(tmp_path / "x.hnsw"), os.O_RDONLY)
    try:
        assert check_hnsw_file(fd, slots=50, dim=8) == len(data)
        with pytest.raises(OSError, match="holds 50 elements, not 49"):
            check_hnsw_file(fd, slots=49, dim=8)
    finally:
        os.close(fd)


# -- 18: only ingest and demo create a store; reads change nothing ------------------------------------------

READ_COMMANDS = [
    ["memory", "stats", "--db", "{db}"],
    ["memory", "search", "--db", "{db}", "boiler service"],
    ["relevance", "sample", "--db", "{db}", "--n", "5"],
    ["relevance", "score", "--db", "{db}", "--judgments", "{judgments}"],
    ["turn", "--db", "{db}", "--no-trace", "Which van insurer covers tools?"],
]
WRITE_COMMANDS = [
    ["memory", "rebuild", "--db", "{db}"],
    ["memory", "delete", "--db", "{db}", "--document", "d1"],
    ["turn", "--db", "{db}", "Which van insurer covers tools?"],
]


@pytest.mark.parametrize("argv", READ_COMMANDS + WRITE_COMMANDS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("where", ["missing", "empty"])
def test_18_only_ingest_creates_a_store(tmp_path, capsys, toy_cli, argv, where):
    db = tmp_path / "db"
    if where == "empty":
        db.mkdir()
    judgments = tmp_path / "j.jsonl"
    judgments.write_text('{"pair": "1:1", "relevant": true}\n')
    code, out, err = toy_cli(capsys, *[a.format(db=db, judgments=judgments) for a in argv])
    assert code == 2 and f"Error: no memory store in {db} (create one with `cleo-rules memory ingest" in err, err
    assert (list(db.iterdir()) == []) if where == "empty" else not db.exists()


def test_18_ingest_and_demo_create_one(tmp_path, capsys, toy_cli):
    code, out, err = toy_cli(capsys, "memory", "ingest", "--db", str(tmp_path / "new"), "-",
                             stdin=jsonl(documents(2)).encode())
    assert code == 0, err
    assert (tmp_path / "new" / "memory.db").is_file()
    code, out, err = toy_cli(capsys, "demo", "--db", str(tmp_path / "demo"), "--no-compare")
    assert code == 0, err
    assert (tmp_path / "demo" / "memory.db").is_file()


def test_18_reads_change_no_byte_and_no_mtime(store_dir, capsys, toy_cli):
    recall = Recall(MemoryStore.open(store_dir, embedder=ToyEmbedder()), k=3)
    recall.turn("Which van insurer covers tools left overnight?")
    recall.close()
    judgments = store_dir.parent / "j.jsonl"
    judgments.write_text('{"pair": "1:1", "relevant": true}\n')
    time.sleep(0.02)  # a write now would show in the mtimes
    before = snapshot(store_dir)
    for argv in READ_COMMANDS:
        code, out, err = toy_cli(capsys, *[a.format(db=store_dir, judgments=judgments) for a in argv])
        assert code == 0, (argv, err)
    after = snapshot(store_dir)
    wal = after.pop("memory.db-wal", None)
    assert wal is None or wal[1] == 0  # SQLite may leave an empty write-ahead log beside the database
    assert after == before


def test_18_a_read_only_store_refuses_every_write(store_dir):
    with MemoryStore.open(store_dir, embedder=ToyEmbedder(), read_only=True) as store:
        for write in (lambda: store.add_document("x", "t", "2024-01-01", "boiler"),
                      lambda: store.delete_document("d1"),
                      lambda: store.ingest_jsonl(b""),
                      lambda: store.rebuild()):
            with pytest.raises(StoreError, match="is open read-only") as info:
                write()
            assert info.value.code == "E305"
    with pytest.raises(StoreError, match="no memory store in"):
        MemoryStore.open(store_dir.parent / "elsewhere", read_only=True)
    assert not (store_dir.parent / "elsewhere").exists()


# -- 19: traces are bounded and private; passages are bounded -----------------------------------------------


def test_19_traced_text_is_capped(tmp_path):
    with MemoryStore.open(tmp_path, embedder=ToyEmbedder()) as store:
        store.add_document("d1", "t", "2024-01-01", "boiler service")
        tracer = Tracer(store)
        huge = "boiler " * 1_500_000  # 10 MB
        size = os.path.getsize(tmp_path / "memory.db") + os.path.getsize(tmp_path / "memory.db-wal")
        tracer.record(time="t", decision=decision(kind="substantive", query=huge, message=huge), results=[],
                      timings={}, k=5)
        grown = os.path.getsize(tmp_path / "memory.db") + os.path.getsize(tmp_path / "memory.db-wal") - size
        assert grown < 100_000
        (row,) = read_traces(store)
        assert len(row["message"]) == len(row["query"]) == 2000 and row["message"].endswith("\u2026")
        assert "message, query cut to 2000 characters" in row["note"]
        Tracer(store, max_chars=50).record(time="u", decision=decision(message="x" * 60), results=[],
                                              timings={}, k=5)
        assert len(list(read_traces(store))[-1]["message"]) == 50


def test_19_redaction_keeps_kinds_rules_ids_scores_and_timings(tmp_path):
    from helpers.results import SNIPPET

    with MemoryStore.open(tmp_path, embedder=ToyEmbedder()) as store:
        recall = Recall(store, trace={"redact": True}, k=3)
        store.add_document("d1", "Van policy", "2024-01-01", "The second van insurance quote covers tools.")
        turn = recall.turn("Yes, the second one.", ["Which van insurance quote covers tools?"])
        skipped = recall.turn("ok")
        tracer = Tracer(store, redact=True)
        tracer.record(time="t", decision=decision(), results=[SNIPPET], timings={"classify": 0.5}, k=5)
        rows = list(read_traces(store))
    follow, skip, direct = rows
    assert turn.query and follow["message"] == follow["query"] == follow["anchor"] == REDACTED
    assert (follow["kind"], follow["rule"]) == (turn.kind, turn.rule) and follow["pack"] == "cleo-en"
    assert [r["id"] for r in follow["results"]] == [r.id for r in turn.results]
    assert follow["results"][0]["score"] == pytest.approx(turn.results[0].score, abs=1e-6)
    assert follow["classify_s"] is not None and follow["embed_s"] is not None
    assert skipped.query is None and skip["query"] is None and skip["message"] == REDACTED
    assert direct["results"] == [{"source": "conversation", "id": "c1", "item": "c1#s0", "score": 0.61}]
    assert direct["classify_s"] == 0.5
    with pytest.raises(ValueError, match="unknown trace setting"):
        Recall(store, trace={"redcat": True})


def test_19_turn_cli_redacts_and_caps(store_dir, capsys, toy_cli):
    code, out, err = toy_cli(capsys, "turn", "--db", str(store_dir), "--trace-redact", "Which van insurer covers tools?")
    assert code == 0, err
    code, out, err = toy_cli(capsys, "turn", "--db", str(store_dir), "--trace-max-chars", "12",
                             "Which van insurer covers tools?")
    assert code == 0, err
    with MemoryStore.open(store_dir, read_only=True) as store:
        redacted, capped = list(read_traces(store))
    assert redacted["message"] == REDACTED and redacted["results"]
    assert capped["message"] == "Which van i\u2026"


def test_19_store_files_are_0600_and_the_directory_0700(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "mem"
        with MemoryStore.open(path, embedder=ToyEmbedder()) as store:
            store.ingest_jsonl(jsonl(documents(3) + conversations(2)).encode())
            Tracer(store).record(time="t", decision=decision(), results=[], timings={}, k=5)
            store.rebuild()
            names = {p.name for p in path.iterdir()}
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.iterdir()}
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert {"memory.db", "memory.db-wal", "memory.db-shm", "snippets.hnsw.json", "passages.hnsw.json",
            "index.lock"} <= names
    assert len([n for n in names if n.startswith(("snippets.hnsw.g", "passages.hnsw.g"))]) == 2
    assert modes == {name: 0o600 for name in names}, modes


def test_19_an_existing_directory_keeps_its_mode(tmp_path):
    os.chmod(tmp_path, 0o755)
    MemoryStore.open(tmp_path, embedder=ToyEmbedder()).close()
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "memory.db").stat().st_mode) == 0o600


def test_19_a_20_mb_text_without_spaces_is_not_one_passage(tmp_path):
    text = "x" * 20_000_000
    chunks = chunk_text(text)
    assert len(chunks) == 10_000 and max(len(c.text) for c in chunks) == DEFAULT_CHUNK_MAX_CHARS
    assert "".join(c.text for c in chunks) == text
    with MemoryStore.open(tmp_path, embedder=ToyEmbedder(), chunk_max_chars=500_000) as store:
        store.add_document("blob", "t", "2024-01-01", text[:2_000_000] + " boiler")
        (hit,) = store.search("boiler", k=1).results
        assert len(hit.text) <= 500_000
    with pytest.raises(ValueError, match="max_chars"):
        MemoryStore.open(tmp_path / "x", chunk_max_chars=0)


@pytest.mark.parametrize("size, overlap, max_chars", [(120, 30, 2000), (5, 2, 12), (3, 0, 1), (40, 39, 80)])
def test_19_no_chunk_passes_max_chars_and_every_character_is_covered(size, overlap, max_chars):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    words = st.text(alphabet="ab.!? \n", max_size=300)

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(words)
    def check(text):
        chunks = chunk_text(text, size, overlap, max_chars)
        assert all(len(c.text) <= max_chars and c.text == text[c.start:c.end] for c in chunks)
        covered = set()
        for c in chunks:
            covered.update(range(c.start, c.end))
        assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())

    check()


def test_19_the_default_bound_keeps_the_hashes_of_stored_items(tmp_path):
    """Items stored before the bound existed are recognised as unchanged, so re-ingesting does not re-embed."""
    from cleo_rules.retrieval.records import content_hash
    from cleo_rules.kinds import Source

    a = content_hash(Source.DOCUMENT, "t", "2024-01-01", text="x", chunk_size=120, chunk_overlap=30)
    assert a == content_hash(Source.DOCUMENT, "t", "2024-01-01", text="x", chunk_size=120, chunk_overlap=30,
                             chunk_max_chars=DEFAULT_CHUNK_MAX_CHARS)
    assert a != content_hash(Source.DOCUMENT, "t", "2024-01-01", text="x", chunk_size=120, chunk_overlap=30,
                             chunk_max_chars=100)


def test_17_a_failed_sidecar_write_leaves_no_temp_file_and_the_old_pair(store_dir, monkeypatch):
    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    old = pair(store_dir)
    monkeypatch.setattr(index_mod, "_write_file", boom)
    store = MemoryStore.open(store_dir, embedder=ToyEmbedder())
    with pytest.warns(StoreWarning, match="No space left on device"):
        store.add_document("new", "t", "2024-01-01", "boiler")
        store.close()
    assert not [p for p in store_dir.iterdir() if ".tmp." in p.name]
    assert pair(store_dir) == old
