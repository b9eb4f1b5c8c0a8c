"""Records: validation, preparation into a PreparedItem, and the content hash."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules.retrieval.records import (
    Piece, PreparedItem, content_hash, invalid_argument, plan_writes, prepare, validate_record,
)
from cleo_rules.retrieval.tables import Source

from helpers.records import conversation, document

CONVERSATION = {"type": "conversation", "id": " c1 ", "title": " Vans ", "date": "2024-02-03",
                "messages": [{"role": "user", "text": " Which insurer? "}, {"role": "assistant", "text": "Zego — cheaper."}]}
DOCUMENT = {"type": "document", "id": "d1", "title": "Price list", "date": "2024-01-02",
            "text": "  Call-out fee 45 pounds. Weekend rate é. "}


def test_extra_fields_and_datetimes_are_accepted():
    assert validate_record({**document("x"), "tags": ["a"], "date": "2024-02-01T09:30:00Z"}) == []
    assert validate_record({**document("x"), "date": 20240201})[0][1] == "/date"
    assert validate_record({**document("x"), "text": None})[0][:2] == ("E314", "/text")


@pytest.mark.parametrize("record, expected", [
    ("a string", [("E312", "")]),
    ({"id": "x"}, [("E313", "/type")]),
    ({**document("x"), "type": ["document"]}, [("E316", "/type")]),
    ({**document("x"), "id": "  "}, [("E315", "/id")]),
    ({**conversation("x"), "messages": []}, [("E315", "/messages")]),
    ({**conversation("x"), "messages": [{"role": 1, "text": "hi"}]}, [("E314", "/messages/0/role")]),
    ({"type": "conversation"}, [("E313", "/id"), ("E313", "/title"), ("E313", "/date"), ("E313", "/messages")]),
])
def test_each_problem_has_a_code_and_a_pointer(record, expected):
    assert [(code, pointer) for code, pointer, _ in validate_record(record)] == expected


def test_prepare_strips_fields_and_cuts_pieces():
    conv = prepare(CONVERSATION, 120, 30)
    assert isinstance(conv, PreparedItem) and conv.source is Source.CONVERSATION
    assert (conv.id, conv.title, conv.date, conv.text) == ("c1", "Vans", "2024-02-03", None)
    assert conv.messages == (("user", "Which insurer?"), ("assistant", "Zego — cheaper."))
    assert conv.pieces == (Piece("user: Which insurer?\nassistant: Zego — cheaper.", (0, 1)),)
    assert conv.key == (Source.CONVERSATION, "c1")
    doc = prepare(DOCUMENT, 120, 30)
    assert doc.text == DOCUMENT["text"] and doc.messages == ()  # a document's text is kept as given
    (piece,) = doc.pieces
    assert DOCUMENT["text"][piece.bounds[0] : piece.bounds[1]] == piece.text == "Call-out fee 45 pounds. Weekend rate é."
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.title = "changed"  # type: ignore[misc]


def test_content_hash_is_the_one_stores_already_hold():
    # digests of these two records as written by earlier versions: changing them would make
    # every re-ingest of an existing store count as "updated" and embed everything again
    assert prepare(CONVERSATION, 120, 30).content_hash == "5cfef23d537d9f898d358acf1bacfeb1d7d8fadf4670006ecb00137d0458ab9b"
    assert prepare(DOCUMENT, 120, 30).content_hash == "e84e76927d4092cebeb4043bd31680a301b8c684651c0e674772e74d505ceb06"


def test_content_hash_covers_content_and_chunking_but_not_the_id():
    base = prepare(DOCUMENT, 120, 30).content_hash
    assert prepare({**DOCUMENT, "id": "another"}, 120, 30).content_hash == base
    assert prepare(DOCUMENT, 100, 30).content_hash != base
    assert prepare(DOCUMENT, 120, 20).content_hash != base
    assert prepare({**DOCUMENT, "title": "Prices"}, 120, 30).content_hash != base
    assert prepare({**DOCUMENT, "date": "2024-01-03"}, 120, 30).content_hash != base
    assert content_hash(Source.DOCUMENT, "T", "2024-01-01", text="x", chunk_size=1, chunk_overlap=0) != content_hash(
        Source.CONVERSATION, "T", "2024-01-01", messages=[("user", "x")], chunk_size=1, chunk_overlap=0)


def test_invalid_argument_names_every_problem():
    record = {"type": "conversation", "id": "c", "title": "T", "date": "soon", "messages": [{"role": "user"}]}
    message, problems = invalid_argument(record, validate_record(record))
    assert message.startswith("invalid conversation: /date: 'date' must be an ISO 8601 date")
    assert "/messages/0/text: missing field 'text'" in message
    assert [p.file for p in problems] == ["<argument>", "<argument>"]
    assert invalid_argument(42, validate_record(42))[0].startswith("invalid item: /: a line must hold")


words = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=8)
sentences = st.lists(words, min_size=1, max_size=12).map(lambda w: " ".join(w) + ".")
texts = st.lists(sentences, min_size=1, max_size=20).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(text=texts, size=st.integers(1, 40), overlap=st.integers(0, 39))
def test_prepared_passages_point_into_the_document_and_are_deterministic(text, size, overlap):
    overlap = min(overlap, size - 1)
    record = {"type": "document", "id": "d", "title": "T", "date": "2024-01-01", "text": text}
    item = prepare(record, size, overlap)
    assert item == prepare(dict(record), size, overlap)
    assert item.pieces and all(text[p.bounds[0] : p.bounds[1]] == p.text for p in item.pieces)
    starts = [p.bounds[0] for p in item.pieces]
    assert starts == sorted(set(starts))  # every passage moves forward


def test_plan_writes_says_added_updated_unchanged_and_writes_only_the_changed():
    a, b, c = (prepare(document(id=i, text=f"text of {i}"), 200, 40) for i in ("a", "b", "c"))
    existing = {a.key: a.content_hash, b.key: "an older hash"}
    statuses, todo = plan_writes([a, b, c], existing)
    assert statuses == ["unchanged", "updated", "added"]
    assert todo == [b, c]
    assert plan_writes([], existing) == ([], [])
