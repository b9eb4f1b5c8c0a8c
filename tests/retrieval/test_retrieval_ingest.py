"""Ingesting JSON Lines: malformed lines, --strict, progress, duplicates, nothing lost."""

from __future__ import annotations

import json

import pytest

from cleo_rules.errors import IngestError
from cleo_rules.retrieval import MemoryStore
from cleo_rules.retrieval.ingest import IngestReport, ingest_lines, open_lines, parse_record

from helpers.records import conversation, document

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


# -- the ingest module on its own: reading, batching, the report ------------------------------------------


class Writer:
    """Records the batches ingest_lines hands over, and the checkpoints between them."""

    def __init__(self, stored=()):
        self.batches = []
        self.checkpoints = 0
        self.stored = dict(stored)  # id -> text

    def write(self, items, timings):
        self.batches.append([(item.id, item.text) for item in items])
        statuses = []
        for item in items:
            old = self.stored.get(item.id)
            statuses.append("added" if old is None else "unchanged" if old == item.text else "updated")
            self.stored[item.id] = item.text
        return statuses

    def checkpoint(self, timings):
        assert set(timings) == {"parse", "embed", "sql", "index", "save"}
        self.checkpoints += 1


def run_lines(lines, writer, **kwargs):
    from cleo_rules.retrieval.records import prepare

    return ingest_lines(enumerate(lines, 1), "<test>", prepare=lambda r: prepare(r, 120, 30), write=writer.write,
                        checkpoint=writer.checkpoint, **kwargs)


def test_batches_are_full_except_the_last_and_each_is_followed_by_a_checkpoint():
    writer = Writer()
    seen = []
    report = run_lines([json.dumps(document(f"d{i}")) for i in range(7)], writer, batch_size=3, progress=seen.append)
    assert [len(b) for b in writer.batches] == [3, 3, 1] and writer.checkpoints == 3
    assert seen == [3, 3, 1] and (report.added, report.lines, report.source) == (7, 7, "<test>")


def test_a_second_version_of_an_id_waits_for_the_first_to_be_written():
    writer = Writer(stored={"d0": document("d0")["text"]})
    lines = [json.dumps(document("d0")), json.dumps(document("d1", "one")), json.dumps(document("d1", "two")), "",
             json.dumps(document("d2"))]
    report = run_lines(lines, writer, batch_size=10)
    assert writer.batches == [[("d0", document("d0")["text"]), ("d1", "one")], [("d1", "two"), ("d2", document("d2")["text"])]]
    assert (report.added, report.updated, report.unchanged, report.lines) == (2, 1, 1, 5)


def test_strict_reads_everything_before_writing_anything():
    writer = Writer()
    with pytest.raises(IngestError, match="1 malformed line in <test>; nothing was ingested"):
        run_lines([json.dumps(document("d0"))] * 40 + ["{"], writer, strict=True, batch_size=2)
    assert writer.batches == [] and writer.checkpoints == 0


def test_reading_lines_from_paths_bytes_and_iterables(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"a\nb\n")
    lines, name, fh = open_lines(path)
    assert (list(lines), name) == ([(1, b"a\n"), (2, b"b\n")], str(path)) and fh is not None
    fh.close()
    lines, name, fh = open_lines(b"a\nb")
    assert (list(lines), name, fh) == ([(1, b"a\n"), (2, b"b")], "<lines>", None)
    assert list(open_lines(["x", "y"])[0]) == [(1, "x"), (2, "y")]


def test_parse_line():
    assert parse_record("  \n", 4, "f") == (None, [])
    record, problems = parse_record(json.dumps(document("d")).encode(), 1, "f")
    assert record == document("d") and problems == []
    _, (problem,) = parse_record('{"type": ', 3, "f.jsonl")  # the line is stripped first: column 9
    assert (problem.code, problem.line, problem.col) == ("E311", 3, 9)
    assert problem.format().startswith("f.jsonl:3:9: error[E311]")


def test_report_counts_only_known_statuses():
    report = IngestReport()
    report.count("added")
    report.count("unchanged")
    assert (report.added, report.unchanged, report.items) == (1, 1, 2) and str(report) == report.summary()
    with pytest.raises(ValueError):
        report.count("deleted")
