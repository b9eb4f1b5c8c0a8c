"""Traces: what is written, tracing off, failures that never fail a turn, where rows go, the shared query."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest
import sqlite_utils

from cleo_rules.retrieval.trace_sinks import SqliteTraces
from cleo_rules.trace import TABLE, Tracer, read_traces

from helpers.results import PASSAGE, SNIPPET, decision

TIMINGS = {"classify": 1e-5, "embed": 0.006, "search": 0.0002, "metadata": 0.0003, "context": 1e-5}


def test_record_writes_one_row_with_everything():
    db = sqlite_utils.Database(memory=True)
    tracer = Tracer(SqliteTraces(db))
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
    Tracer(SqliteTraces(db)).record(time="t", decision=decision(kind="skip", query=None, message="Yes."), results=(),
                      timings={"classify": 1e-6}, k=5)
    row = next(read_traces(SqliteTraces(db)))
    assert row["query"] is None and row["results"] == [] and row["embed_s"] is None


def test_disabled_tracer_writes_nothing_and_creates_no_table():
    db = sqlite_utils.Database(memory=True)
    assert Tracer(SqliteTraces(db), enabled=False).record(time="t", decision=decision(), results=(), timings={}, k=5) is None
    assert TABLE not in db.table_names()


def test_failure_is_logged_not_raised(caplog):
    db = sqlite_utils.Database(memory=True)
    tracer = Tracer(SqliteTraces(db))
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
        assert Tracer(SqliteTraces(ro)).record(time="t", decision=decision(), results=[], timings={}, k=5) is None
    assert "readonly" in caplog.text.lower() or "read-only" in caplog.text.lower()


def test_read_traces_since_and_searched_only():
    db = sqlite_utils.Database(memory=True)
    tracer = Tracer(SqliteTraces(db))
    tracer.record(time="2024-05-31T23:59:59+00:00", decision=decision(), results=[], timings={}, k=5)
    tracer.record(time="2024-06-01T00:00:01+00:00", decision=decision(kind="skip", query=None), results=[],
                  timings={}, k=5)
    tracer.record(time="2024-06-02T08:00:00+00:00", decision=decision(), results=[SNIPPET], timings={}, k=5)
    assert [r["id"] for r in read_traces(SqliteTraces(db))] == [1, 2, 3]
    assert [r["id"] for r in read_traces(SqliteTraces(db), since="2024-06-01")] == [2, 3]
    assert [r["id"] for r in read_traces(SqliteTraces(db), since="2024-06-01", searched_only=True)] == [3]
    assert list(read_traces(SqliteTraces(sqlite_utils.Database(memory=True)))) == []


def test_each_part_is_traced_with_where_it_came_from():
    from cleo_rules import load_pack

    d = load_pack().classify("Yes, go with the second one.", [
        "Compare the two van insurance quotes",
        {"role": "assistant", "content": "Hadley quotes 2,140 a year; Cresswell quotes 1,865."}])
    db = sqlite_utils.Database(memory=True)
    tid = Tracer(SqliteTraces(db)).record(time="2024-06-01T09:00:00+00:00", decision=d, results=[], timings=TIMINGS, k=5)
    parts = json.loads(db[TABLE].get(tid)["parts"])
    assert [p["name"] for p in parts] == ["anchor", "referent", "message"]
    assert parts[0]["text"] == "Compare the two van insurance quotes" and parts[0]["source"] == "user"
    assert parts[1] | {"span": None} == {"name": "referent", "text": "Cresswell quotes 1,865", "source": "assistant", "turn": 1,
                                         "index": 1, "span": None, "rule": "referent.position"}
    redacted = Tracer(SqliteTraces(db), redact=True)
    row = redacted.row(time="t", decision=d, results=[], timings=TIMINGS, k=5)
    assert [p["text"] for p in json.loads(row["parts"])] == ["[redacted]"] * 3
    assert json.loads(row["parts"])[1]["rule"] == "referent.position"


def test_an_older_traces_table_gains_the_parts_column():
    from cleo_rules.retrieval.trace_sinks import ensure_table

    db = sqlite_utils.Database(memory=True)
    db[TABLE].create({"id": int, "time": str, "message": str, "kind": str}, pk="id")
    ensure_table(db)
    assert "parts" in db[TABLE].columns_dict and "referent" not in db[TABLE].columns_dict


def test_a_tracer_takes_a_sink_or_a_memory_and_nothing_else(tmp_path, toy_embedder):
    from cleo_rules.retrieval import MemoryStore
    from cleo_rules.trace import as_sink

    db = sqlite_utils.Database(memory=True)
    sink = SqliteTraces(db)
    assert as_sink(sink) is sink and as_sink(None) is None
    with MemoryStore.open(tmp_path / "m", embedder=toy_embedder) as store:
        assert as_sink(store) is store.traces
        tid = Tracer(store).record(time="t", decision=decision(), results=[], timings={}, k=5)
        assert [r["id"] for r in read_traces(store)] == [tid]
    with pytest.raises(TypeError, match=r"not Database; give the memory store .*\.SqliteTraces\(db\)"):
        Tracer(db)  # a SQLite database was taken as it is before the sink moved to cleo_rules.retrieval
    with pytest.raises(TypeError, match="traces are kept by a memory or a trace sink, not str"):
        list(read_traces("memory/"))


@pytest.mark.parametrize("since", [None, "", "2024-06-01"])
@pytest.mark.parametrize("searched_only", [False, True])
def test_one_trace_query_in_each_dialect(since, searched_only):
    """Both backends read traces with the statement read_sql builds: the same clauses, each dialect's table and
    parameter."""
    from cleo_rules.retrieval.tables import POSTGRES, SQLITE
    from cleo_rules.retrieval.trace_sinks import read_sql

    lite, lite_params = read_sql(SQLITE, since=since, searched_only=searched_only)
    pg, pg_params = read_sql(POSTGRES, since=since, searched_only=searched_only)
    assert lite_params == pg_params == ([since] if since else [])
    assert lite.replace("traces", "T", 1).replace("?", "$") == pg.replace("{s}.traces", "T").replace("%s", "$")
    assert ("time >= " in lite) is bool(since) and ("query IS NOT NULL" in lite) is searched_only
    assert lite.endswith(" ORDER BY id")
    db = sqlite_utils.Database(memory=True)
    tracer = Tracer(SqliteTraces(db))
    tracer.record(time="2024-05-31T23:59:59+00:00", decision=decision(), results=[], timings={}, k=5)
    tracer.record(time="2024-06-01T00:00:01+00:00", decision=decision(kind="skip", query=None), results=[],
                  timings={}, k=5)
    tracer.record(time="2024-06-02T08:00:00+00:00", decision=decision(), results=[], timings={}, k=5)
    rows = [r[0] for r in db.conn.execute(lite, lite_params)]
    assert rows == [i for i, (late, searched) in enumerate([(False, True), (True, False), (True, True)], 1)
                    if (late or not since) and (searched or not searched_only)]


def test_a_trace_row_of_an_unknown_column_is_refused_before_any_sql():
    from cleo_rules.retrieval.tables import POSTGRES, SQLITE
    from cleo_rules.retrieval.trace_sinks import insert_sql

    for dialect in (SQLITE, POSTGRES):
        with pytest.raises(ValueError, match="unknown trace column"):
            insert_sql(dialect, ["time", "message); DROP TABLE traces; --"])
    assert insert_sql(POSTGRES, ["time", "kind"]) == "INSERT INTO {s}.traces (time, kind) VALUES (%s, %s) RETURNING id"
    assert insert_sql(SQLITE, ["time", "kind"]) == "INSERT INTO traces (time, kind) VALUES (?, ?)"


def test_a_trace_records_the_bases_of_the_pack_and_a_table_without_the_column_still_reads(tmp_path):
    from pathlib import Path

    from cleo_rules.pack.model import Base

    db = sqlite_utils.Database(memory=True)
    old = {"id": int, "time": str, "message": str, "kind": str, "results": str}  # as an earlier version made it
    db[TABLE].create(old, pk="id")
    db[TABLE].insert({"time": "2024-05-01T00:00:00+00:00", "message": "Yes.", "kind": "skip", "results": "[]"})
    assert [r["pack_bases"] for r in read_traces(SqliteTraces(db))] == [[]]  # an old row reads, with no bases
    bases = (Base("cleo-en", "1.0.0", "1be75dbe3f860a2e", Path("rules"), "cleo-en", "bundled"),
             Base("shared", "2.1.0", "00aa11bb22cc33dd", Path("../shared"), "../shared", "directory"))
    tracer = Tracer(SqliteTraces(db))
    tracer.record(time="2024-06-01T00:00:00+00:00", decision=decision(), results=[], timings=TIMINGS, k=5, bases=bases)
    tracer.record(time="2024-06-02T00:00:00+00:00", decision=decision(), results=[], timings=TIMINGS, k=5)
    rows = list(read_traces(SqliteTraces(db)))
    assert [r["pack_bases"] for r in rows] == [[], [
        {"name": "cleo-en", "version": "1.0.0", "hash": "1be75dbe3f860a2e"},
        {"name": "shared", "version": "2.1.0", "hash": "00aa11bb22cc33dd"}], []]
    assert db[TABLE].get(3)["pack_bases"] is None  # a pack that extends nothing: NULL, as in every older row
