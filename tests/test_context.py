"""The context block: skipped vs empty vs recalled, wording from the pack."""

from __future__ import annotations

import pytest

from cleo_rules.context import TEMPLATE_KEYS, build_context, item_fields
from cleo_rules.errors import UsageError

from helpers.results import PASSAGE, R, SNIPPET

TEMPLATES = {
    "skipped": "No memory search was made for this turn.",
    "empty": "Searched for {query!r}; nothing relevant.",
    "header": "Recalled ({count}) for {query!r}:",
    "snippet": "- conversation {title} ({date}) [{id} {item} {score:.2f} #{rank}]: {text}",
    "passage": "- document {title} ({date}) [{id} {item}]: {text}",
    "footer": "",
}


def test_pack_provides_every_template(default_pack):
    for key in TEMPLATE_KEYS:
        assert default_pack.context[key]


def test_skipped_says_no_search_was_made_never_nothing_found(default_pack):
    text = build_context(default_pack.context, query=None, message="Yes.", kind="skip")
    assert text == default_pack.context["skipped"]
    assert "no memory search was made" in text.lower()
    assert text != default_pack.context["empty"].format(query="")
    assert "found nothing" not in text.lower()


def test_empty_search_says_a_search_ran_and_names_the_query(default_pack):
    text = build_context(default_pack.context, query="kiln element quote", results=())
    assert text == default_pack.context["empty"].format(query="kiln element quote")
    assert "kiln element quote" in text
    assert text != default_pack.context["skipped"]


def test_snippets_and_passages_carry_title_and_date(default_pack):
    text = build_context(default_pack.context, query="van", results=[SNIPPET, PASSAGE])
    lines = text.splitlines()
    assert lines[0] == default_pack.context["header"].format(query="van")
    assert "Van insurance renewal" in lines[1] and "2024-02-03" in lines[1]
    assert "Price list 2024" in lines[2] and "2024-01-02" in lines[2]
    assert lines[1].startswith(default_pack.context["snippet"].split("{")[0])
    assert lines[2].startswith(default_pack.context["passage"].split("{")[0])


def test_every_field_reaches_the_templates():
    text = build_context(TEMPLATES, query="van", results=[SNIPPET, PASSAGE])
    assert text.splitlines() == [
        "Recalled (2) for 'van':",
        "- conversation Van insurance renewal (2024-02-03) [c1 c1#s0 0.61 #1]: user: the van quote",
        "- document Price list 2024 (2024-01-02) [d1 d1#p0]: Call-out fee 45",
    ]


def test_footer_is_added_when_the_pack_has_one():
    text = build_context({**TEMPLATES, "footer": "({count} items)"}, query="van", results=[SNIPPET])
    assert text.splitlines()[-1] == "(1 items)"


def test_wording_comes_from_the_templates_not_the_code():
    mine = {key: f"<{key}>" for key in TEMPLATES}
    assert build_context(mine, query=None) == "<skipped>"
    assert build_context(mine, query="q") == "<empty>"
    assert build_context(mine, query="q", results=[SNIPPET, PASSAGE]) == "<header>\n<snippet>\n<passage>\n<footer>"


def test_unknown_template_field_is_a_usage_error():
    with pytest.raises(UsageError, match="'snippet'"):
        build_context({**TEMPLATES, "snippet": "{author}"}, query="q", results=[SNIPPET])


def test_missing_template_is_a_usage_error():
    with pytest.raises(UsageError, match="'skipped'"):
        build_context({"empty": "x"}, query=None)


def test_item_fields():
    assert item_fields(PASSAGE, 2) == {
        "title": "Price list 2024", "date": "2024-01-02", "text": "Call-out fee 45", "score": 0.55,
        "id": "d1", "item": "d1#p0", "source": "document", "rank": 2,
    }
