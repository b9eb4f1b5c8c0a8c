"""The Memory protocol, its values, and the argument checks the store and Recall share."""

from __future__ import annotations

import json

import pytest

from cleo_rules.retrieval import Item, Memory, MemoryStore, Result, SearchResponse, Source
from cleo_rules.retrieval.memory import check_k, check_sources


def test_check_k():
    assert check_k(1) == 1 and check_k(500) == 500
    for bad in (2.5, "3", None, True):
        with pytest.raises(TypeError):
            check_k(bad)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="positive integer"):
            check_k(bad)


def test_check_sources():
    assert check_sources("document") == (Source.DOCUMENT,)
    assert check_sources(["document", "conversation", "document"]) == (Source.DOCUMENT, Source.CONVERSATION)
    assert check_sources(tuple(Source)) == (Source.CONVERSATION, Source.DOCUMENT)
    for bad in ((), ["emails"], ["conversation", "Conversation"], [None]):
        with pytest.raises(ValueError, match="sources must be among conversation, document"):
            check_sources(bad)
    with pytest.raises(TypeError):
        check_sources(7)


def test_values_are_plain_json():
    item = Item("document", "d1", "d1#p0", "Price list", "2024-01-02", "Call-out 45.")
    result = Result(**item.to_dict(), score=0.5)
    response = SearchResponse("call-out", 3, ("document",), (result,), {"total": 0.1})
    assert json.loads(json.dumps(response.to_dict()))["results"] == [{**item.to_dict(), "score": 0.5}]
    assert list(response) == [result] and len(response) == 1
    assert response == SearchResponse("call-out", 3, ("document",), (result,), {"total": 9.9})  # timings aside


def test_the_store_implements_the_protocol(tmp_path, toy_embedder):
    with MemoryStore.open(tmp_path / "m", embedder=toy_embedder) as store:
        assert isinstance(store, Memory)
    assert not isinstance(object(), Memory)


def test_a_result_is_an_item_with_its_score():
    """A search hit's fields are an item's, declared once: a field added to Item is a Result's too."""
    assert issubclass(Result, Item)
    hit = Result("document", "d1", "d1#p0", "Prices", "2024-01-05", "Call-out 50.", 0.5)
    assert hit.to_dict() == {"source": "document", "id": "d1", "item": "d1#p0", "title": "Prices",
                             "date": "2024-01-05", "text": "Call-out 50.", "score": 0.5}
    assert hit != Item(*list(hit.to_dict().values())[:-1])
