"""Traces: what is written, tracing off, and failures that never fail a turn."""

from __future__ import annotations

import json
import logging
import sqlite3

import sqlite_utils

from cleo_rules.decision import Decision
from cleo_rules.trace import TABLE, Tracer, read_traces

from test_context import PASSAGE, SNIPPET


def decision(kind="follow_up", query="Compare the two quotes\nYes, the second one.", message="Yes, the second one."):
    return Decision(kind=kind, rule="vocab.choice" if kind != "skip" else None, span=None, matched=None,
                    query=query, anchor="Compare the two quotes" if kind == "follow_up" else None,
                    message=message, pack="cleo-en", pack_version="1.0.0", pack_hash="abc123")


TIMINGS = {"classify": 1e-5, "embed": 0.006, "search": 0.0002, "metadata": 0.0003, "context": 1e-5}


def test_record_writes_one_row_with_everything():
    db = sqlite_utils.Database(memory=True)
    tracer = Tracer(db)
    tid = tracer.record(time="2024-06-01T09:00:00+00:00", decision=decision(), results=[SNIPPET, PASSAGE],
                        timings=TIMINGS, k=5)
    assert tid == 1
    row = db[TABLE].get(1)
    assert row["time"] == "2024-06-01T09:00:00+00:00"
    assert row["message"] == "Yes, the second one."
    assert row["query"] == "Compare the two quotes\nYes, the second one."
    assert row["anchor"] == "Compare the two quotes"
    assert (row["kind"], row["rule"], row["pack"], row["pack_version"]) == ("follow_up", "vocab.choice", "cleo-en", "1.0.0")
    assert json.loads(row["results"]) == [
        {"source": "conversation", "id": "c1", "item": "c1#s0", "score": 0.61},
        {"source": "document", "id": "d1", "item": "d1#p0", "score": 0.55},
    ]
    assert row["n_results"] == 2 and row["k"] == 5
    assert [row[f"{s}_s"] for s in ("classify", "embed", "search", "metadata", "context")] == list(TIMINGS.values())


def test_skipped_turn_has_null_query():
    db = sqlite_utils.Database(memory=True)
    Tracer(db).record(time="t", decision=decision(kind="skip", query=None, message="Yes."), results=(),
                      timings={"classify": 1e-6}, k=5)
    row = next(read_traces(db))
    assert row["query"] is None and row["results"] == [] and row["embed_s"] is None


def test_disabled_tracer_writes_nothing_and_creates_no_table():
    db = sqlite_utils.Database(memory=True)
    assert Tracer(db, enabled=False).record(time="t", decision=decision(), results=(), timings={}, k=5) is None
    assert TABLE not in db.table_names()


def test_failure_is_logged_not_raised(caplog):
    db = sqlite_utils.Database(memory=True)
    tracer = Tracer(db)
    db.conn.close()  # any write now fails
    with caplog.at_level(logging.WARNING, logger="cleo_rules"):
        assert tracer.record(time="t", decision=decision(), results=[SNIPPET], timings={}, k=5) is None
    assert tracer.failures == 1
    assert "could not write the turn trace" in caplog.text


def test_failure_on_a_read_only_database(tmp_path, caplog):
    path = tmp_path / "m.db"
    sqlite_utils.Database(path)["x"].insert({"a": 1})
    ro = sqlite_utils.Database(sqlite3.connect(f"file:{path}?mode=ro", uri=True))
    with caplog.at_level(logging.WARNING, logger="cleo_rules"):
        assert Tracer(ro).record(time="t", decision=decision(), results=[], timings={}, k=5) is None
    assert "readonly" in caplog.text.lower() or "read-only" in caplog.text.lower()


def test_read_traces_since_and_searched_only():
    db = sqlite_utils.Database(memory=True)
    tracer = Tracer(db)
    tracer.record(time="2024-05-31T23:59:59+00:00", decision=decision(), results=[], timings={}, k=5)
    tracer.record(time="2024-06-01T00:00:01+00:00", decision=decision(kind="skip", query=None), results=[],
                  timings={}, k=5)
    tracer.record(time="2024-06-02T08:00:00+00:00", decision=decision(), results=[SNIPPET], timings={}, k=5)
    assert [r["id"] for r in read_traces(db)] == [1, 2, 3]
    assert [r["id"] for r in read_traces(db, since="2024-06-01")] == [2, 3]
    assert [r["id"] for r in read_traces(db, since="2024-06-01", searched_only=True)] == [3]
    assert list(read_traces(sqlite_utils.Database(memory=True))) == []


def test_each_part_is_traced_with_where_it_came_from():
    from cleo_rules import load_pack

    d = load_pack().classify("Yes, go with the second one.", [
        "Compare the two van insurance quotes",
        {"role": "assistant", "content": "Hadley quotes 2,140 a year; Cresswell quotes 1,865."}])
    db = sqlite_utils.Database(memory=True)
    tid = Tracer(db).record(time="2024-06-01T09:00:00+00:00", decision=d, results=[], timings=TIMINGS, k=5)
    parts = json.loads(db[TABLE].get(tid)["parts"])
    assert [p["name"] for p in parts] == ["referent", "message"]
    assert parts[0] | {"span": None} == {"name": "referent", "text": "Cresswell", "source": "assistant", "turn": 1,
                                         "index": 1, "span": None, "rule": "referent.position"}
    redacted = Tracer(db, redact=True)
    row = redacted.row(time="t", decision=d, results=[], timings=TIMINGS, k=5)
    assert [p["text"] for p in json.loads(row["parts"])] == ["[redacted]", "[redacted]"]
    assert json.loads(row["parts"])[0]["rule"] == "referent.position"


def test_an_older_traces_table_gains_the_parts_column():
    from cleo_rules.trace import ensure_table

    db = sqlite_utils.Database(memory=True)
    db[TABLE].create({"id": int, "time": str, "message": str, "kind": str}, pk="id")
    ensure_table(db)
    assert "parts" in db[TABLE].columns_dict and "referent" not in db[TABLE].columns_dict
