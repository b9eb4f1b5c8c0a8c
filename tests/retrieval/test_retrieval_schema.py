"""The Source names, the per-source table descriptions (tables.py), the SQLite statements and opening the database
(sqlite_schema.py)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from cleo_rules.errors import StoreError
from cleo_rules.retrieval.sqlite_schema import (
    DB_FILE,
    GENERATIONS_SQL,
    METADATA_BY_ITEM,
    METADATA_BY_LABEL,
    SCHEMA_VERSION,
    insert_messages_sql,
    insert_piece_sql,
    metadata_sql,
    open_database,
    upsert_parent_sql,
)
from cleo_rules.retrieval import pg_schema, tables
from cleo_rules.retrieval.tables import TABLES, Source, source_of_item


def test_source_values_are_the_strings_traces_and_json_carry():
    assert [s.value for s in Source] == ["conversation", "document"]
    assert Source.CONVERSATION == "conversation" and json.dumps([Source.DOCUMENT]) == '["document"]'
    assert f"{Source.DOCUMENT}" == "document"


def test_each_source_is_described_once():
    assert list(TABLES) == list(Source)
    conv, doc = TABLES[Source.CONVERSATION], TABLES[Source.DOCUMENT]
    assert (conv.parent, conv.pieces, conv.label, conv.messages) == ("conversations", "snippets", "snippet", "messages")
    assert (doc.parent, doc.pieces, doc.label, doc.messages) == ("documents", "passages", "passage", None)
    assert conv.item_id("c1", 3) == "c1#s3" and doc.item_id("c1#s3", 0) == "c1#s3#p0"


@pytest.mark.parametrize("item, source", [
    ("c1#s0", Source.CONVERSATION), ("doc-9#p12", Source.DOCUMENT), ("a#s0#p1", Source.DOCUMENT),
    ("a#p1#s0", Source.CONVERSATION), ("plain", None), ("x#s", None), ("x#q1", None), ("x#s1a", None), ("x#s²", None),
])
def test_the_source_of_an_item_is_its_last_mark(item, source):
    assert source_of_item(item) == source


@pytest.fixture
def db(tmp_path):
    db = open_database(tmp_path)
    yield db
    db.close()


def fill(db):
    """One conversation and one document, written with the statements built from TABLES."""
    conv, doc = TABLES[Source.CONVERSATION], TABLES[Source.DOCUMENT]
    conn = db.conn
    conn.execute(upsert_parent_sql(conv), ("c1", "Van quotes", "2024-02-03", "h1", "now"))
    conn.executemany(insert_messages_sql(conv), [("c1", 0, "user", "Which van?"), ("c1", 1, "assistant", "The blue one.")])
    conn.execute(insert_piece_sql(conv), ("c1#s0", "c1", 0, 0, 1, "user: Which van?", b"\0" * 8))
    conn.execute(upsert_parent_sql(doc), ("d1", "Price list", "2024-01-02", "Call-out 45.", "h2", "now"))
    conn.execute(insert_piece_sql(doc), ("d1#p0", "d1", 0, 0, 12, "Call-out 45.", b"\0" * 8))
    conn.execute(upsert_parent_sql(doc), ("d1", "Prices", "2024-01-05", "Call-out 50.", "h3", "later"))  # an update


def test_statements_built_from_the_descriptions_fit_the_tables(db):
    fill(db)
    assert db.execute("SELECT id, title, date, text, content_hash, ingested_at FROM documents").fetchall() == [
        ("d1", "Prices", "2024-01-05", "Call-out 50.", "h3", "later")]
    assert db.execute("SELECT first_message, last_message FROM snippets").fetchall() == [(0, 1)]
    assert db.execute("SELECT start_char, end_char FROM passages").fetchall() == [(0, 12)]
    assert db.execute("SELECT count(*) FROM messages WHERE conversation_id = 'c1'").fetchone() == (2,)


def test_the_tables_are_created_from_their_description(db):
    """Each table's columns, in either dialect, come from TABLES: a column added there is in both backends."""
    for t in TABLES.values():
        parent = [r[1] for r in db.execute(f"PRAGMA table_info({t.parent})").fetchall()]
        assert parent == ["id", *t.parent_columns, "content_hash", "ingested_at"]
        pieces = [r[1] for r in db.execute(f"PRAGMA table_info({t.pieces})").fetchall()]
        assert pieces == ["label", "item", t.fk, "position", *t.bounds, "text", "embedding"]
    statements = [s for s in pg_schema.MIGRATIONS[0].statements if "CREATE TABLE" in s]
    for t in TABLES.values():
        (pieces,) = [s for s in statements if s.startswith(f"CREATE TABLE {{s}}.{t.pieces} (")]
        assert all(c in pieces for c in (t.fk, *t.bounds, "embedding vector")), pieces
    # the definitions are written once, in tables.py: no module defines a table of pieces by hand
    package = Path(tables.__file__).parents[1]
    spelled = sorted(str(f.relative_to(package)) for f in package.rglob("*.py")
                     if re.search(r"create table[^(]*(snippets|passages) \(", f.read_text(encoding="utf-8"), re.I))
    assert spelled == []


def test_one_metadata_statement_by_label_or_by_item(db):
    fill(db)
    (s_label,) = db.execute("SELECT label FROM snippets").fetchone()
    (p_label,) = db.execute("SELECT label FROM passages").fetchone()
    expected = {("conversation", s_label, "c1#s0", "c1", "Van quotes", "2024-02-03", "user: Which van?"),
                ("document", p_label, "d1#p0", "d1", "Prices", "2024-01-05", "Call-out 45.")}
    by_label = db.execute(METADATA_BY_LABEL, (json.dumps([s_label]), json.dumps([p_label]))).fetchall()
    by_item = db.execute(METADATA_BY_ITEM, (json.dumps(["c1#s0"]), json.dumps(["d1#p0", "d9#p0"]))).fetchall()
    assert set(by_label) == set(by_item) == expected
    assert db.execute(METADATA_BY_ITEM, ("[]", json.dumps(["c1#s0"]))).fetchall() == []  # each source its own list
    assert METADATA_BY_LABEL == metadata_sql("label") and sqlite3.complete_statement(METADATA_BY_ITEM + ";")
    with pytest.raises(ValueError):
        metadata_sql("text")


def test_a_new_database_has_its_meta_rows(db, tmp_path):
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert meta["schema_version"] == str(SCHEMA_VERSION) and len(meta["store_id"]) == 32
    assert dict(db.execute(GENERATIONS_SQL).fetchall()) == {"generation:conversation": "0", "generation:document": "0"}
    assert (tmp_path / DB_FILE).exists()
    again = open_database(tmp_path)  # opening again keeps the store's identity
    assert dict(again.execute("SELECT key, value FROM meta").fetchall())["store_id"] == meta["store_id"]
    again.close()


def test_another_schema_version_is_refused(tmp_path):
    db = open_database(tmp_path)
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.conn.commit()
    db.close()
    with pytest.raises(StoreError, match="has schema version 2; this cleo-rules reads version 1"):
        open_database(tmp_path)
