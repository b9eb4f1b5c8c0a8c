"""Ingesting JSON Lines: malformed lines, --strict, progress, duplicates, nothing lost."""

from __future__ import annotations

import json

import pytest

from cleo_rules.errors import IngestError
from cleo_rules.retrieval import MemoryStore, validate_record


def conversation(id, text="We compared two quotes for the van insurance renewal.", **extra):
    return {"type": "conversation", "id": id, "title": f"Title {id}", "date": "2024-02-19",
            "messages": [{"role": "user", "text": text}, {"role": "assistant", "text": "Noted."}], **extra}


def document(id, text="The boiler service costs eighty-five pounds.", **extra):
    return {"type": "document", "id": id, "title": f"Doc {id}", "date": "2024-02-01", "text": text, **extra}


KEEP = document("doc-keep", "Our ladders were inspected in April and passed.")

LINES = [
    json.dumps(conversation("c-ok")),                                     # 1 valid
    '{"type": "document", "id": "d-broken", ',                            # 2 bad JSON
    json.dumps({k: v for k, v in document("d-missing").items() if k != "text"}),  # 3 missing text
    json.dumps({**conversation("c-types"), "title": 42, "messages": "hello"}),    # 4 wrong types
    json.dumps(document("d-empty", "   ")),                               # 5 empty text
    "   ",                                                                # 6 blank: ignored
    json.dumps(document("d-ok")),                                         # 7 valid
    json.dumps({**document("d-date"), "date": "31/02/2024"}),             # 8 not an ISO date
    "[1, 2, 3]",                                                          # 9 not an object
    json.dumps({**document("d-type"), "type": "email"}),                  # 10 unknown type
    json.dumps({**conversation("c-msg"), "messages": [{"role": "user", "text": ""}, {"text": "x"}, "hi"]}),  # 11
    json.dumps(document("doc-keep", "")),                                 # 12 malformed new version of a stored doc
    json.dumps({**document("d-id"), "id": ""}),                           # 13 empty id
]
MALFORMED = {2, 3, 4, 5, 8, 9, 10, 11, 12, 13}


@pytest.fixture
def store(tmp_path, embedder):
    s = MemoryStore.open(tmp_path / "store", embedder=embedder)
    s.add_document(KEEP["id"], KEEP["title"], KEEP["date"], KEEP["text"])
    yield s
    s.close()


def keep_is_intact(store):
    rows = store.db.execute("SELECT title, text FROM documents WHERE id = 'doc-keep'").fetchall()
    top = store.search("when were the ladders inspected", k=1).results[0]
    return rows == [(KEEP["title"], KEEP["text"])] and top.id == "doc-keep"


def test_malformed_lines_are_reported_by_line_and_skipped(store, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(LINES) + "\n")
    report = store.ingest_jsonl(path)
    assert (report.added, report.updated, report.unchanged, report.skipped) == (2, 0, 0, len(MALFORMED))
    assert {p.line for p in report.problems} == MALFORMED
    assert report.lines == len(LINES)
    by_line = {}
    for p in report.problems:
        by_line.setdefault(p.line, set()).add(p.pointer)
        assert p.file == str(path) and p.format().startswith(f"{path}:{p.line}:")
    assert by_line[3] == {"/text"} and by_line[4] == {"/title", "/messages"} and by_line[5] == {"/text"}
    assert by_line[8] == {"/date"} and by_line[10] == {"/type"} and by_line[13] == {"/id"}
    assert by_line[11] == {"/messages/0/text", "/messages/1/role", "/messages/2"}
    codes = {p.line: p.code for p in report.problems}
    assert codes[2] == "E311" and codes[9] == "E312" and codes[3] == "E313"
    assert set(store.db.execute("SELECT id FROM conversations").fetchall()) == {("c-ok",)}
    assert {r[0] for r in store.db.execute("SELECT id FROM documents")} == {"d-ok", "doc-keep"}
    assert keep_is_intact(store)
    assert "skipped (lines 2, 3, 4, 5, 8, 9, 10, 11, 12, 13)" in report.summary()
    assert json.dumps(report.to_dict())


def test_strict_rejects_the_whole_input_and_writes_nothing(store):
    before = store.stats()
    with pytest.raises(IngestError) as info:
        store.ingest_jsonl(LINES, strict=True)
    assert {p.line for p in info.value.problems} == MALFORMED
    message = str(info.value)
    assert message.startswith("10 malformed lines in <lines>; nothing was ingested")
    assert "<lines>:2:" in message and "<lines>:13:1: error[E315] at /id" in message
    after = store.stats()
    assert {k: after[k] for k in ("conversations", "documents", "passages")} == {
        k: before[k] for k in ("conversations", "documents", "passages")}
    assert keep_is_intact(store)


def test_strict_accepts_a_clean_file(store):
    report = store.ingest_jsonl([LINES[0], LINES[6]], strict=True)
    assert (report.added, report.skipped) == (2, 0)


def test_invalid_utf8_is_a_line_problem(store, tmp_path):
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(json.dumps(document("d1")).encode() + b"\n" + b'{"type": "document", "id": "\xff\xfe"}\n')
    report = store.ingest_jsonl(path)
    assert report.added == 1 and [(p.line, p.code) for p in report.problems] == [(2, "E311")]
    assert "UTF-8" in report.problems[0].message


def test_progress_is_reported_for_every_line(store):
    lines = [json.dumps(document(f"d{i}", f"Note {i} about radiators.")) for i in range(23)] + LINES
    seen = []
    report = store.ingest_jsonl(lines, progress=seen.append, batch_size=5)
    assert sum(seen) == len(lines) and len(seen) > 4
    assert report.added == 25


def test_the_same_id_twice_in_one_file_keeps_the_last(store):
    lines = [json.dumps(document("dup", "First version about taps.")),
             json.dumps(document("other")),
             json.dumps(document("dup", "Second version about cylinders."))]
    report = store.ingest_jsonl(lines, batch_size=10)
    assert (report.added, report.updated) == (2, 1)
    assert store.db.execute("SELECT text FROM passages WHERE document_id = 'dup'").fetchall() == [
        ("Second version about cylinders.",)]
    stats = store.stats()
    assert stats["passages"] == stats["indexes"]["passages"]["elements"]


def test_bytes_input_and_missing_file(store, tmp_path):
    report = store.ingest_jsonl(("\n".join(LINES[:1] + LINES[6:7])).encode())
    assert report.added == 2
    with pytest.raises(IngestError, match="cannot read"):
        store.ingest_jsonl(tmp_path / "nope.jsonl")


def test_extra_fields_and_datetimes_are_accepted():
    assert validate_record({**document("x"), "tags": ["a"], "date": "2024-02-01T09:30:00Z"}) == []
    assert validate_record({**document("x"), "date": 20240201})[0][1] == "/date"
    assert validate_record({**document("x"), "text": None})[0][:2] == ("E314", "/text")
