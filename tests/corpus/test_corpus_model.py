"""The corpus's values (cleo_rules.corpus.model): turns, history items, cases, the corpus error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cleo_rules.corpus.model import (
    CorpusError, Case, CaseTurn, history_item, plain_item, problem, role_tagged, user_turns,
)
from cleo_rules.errors import CleoError

text = st.text(max_size=20)
items = st.one_of(text, st.builds(lambda r, c: {"role": r, "content": c}, st.sampled_from(["user", "assistant"]), text))


def test_a_turn_is_a_mapping_and_a_hashable_value():
    t = CaseTurn("assistant", "Two quotes: Acme and Zed.")
    assert dict(t) == {"role": "assistant", "content": "Two quotes: Acme and Zed."} == t.to_dict()
    assert len(t) == 2 and t["role"] == "assistant" and hash(t) == hash(CaseTurn("assistant", t.content))
    with pytest.raises(KeyError):
        t["text"]


@given(st.lists(items, max_size=6))
def test_history_items_read_and_written_back(history):
    read = [history_item(h) for h in history]
    assert [plain_item(h) for h in read] == history
    assert [history_item(h) for h in read] == read  # reading a read item changes nothing
    assert role_tagged(read) == any(isinstance(h, dict) for h in history)
    assert user_turns(read) == [h if isinstance(h, str) else h["content"] for h in history
                                if isinstance(h, str) or h["role"] == "user"]


@pytest.mark.parametrize("bad, why", [
    ({"role": "system", "content": "x"}, "role must be"),
    ({"role": "user", "content": 3}, "content must be a string"),
    ({"role": "user", "content": "x", "name": "a"}, "unknown key(s) name"),
    (7, "found int"),
])
def test_a_bad_history_item_is_a_value_error_saying_why(bad, why):
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        history_item(bad)


def test_a_case_is_placed_by_file_and_line():
    case = Case("regression/1", "We tried that one already.", "correction", file="corpus/regressions.yaml", line=12)
    assert case.source == "corpus/regressions.yaml:12"
    assert case.to_dict()["source"] == "corpus/regressions.yaml:12"
    in_memory = Case("c/1", "Go with the other one.", "follow_up")
    assert in_memory.source == "" and "source" not in in_memory.to_dict()


def test_a_case_as_json_keeps_what_it_asserts_and_only_that():
    case = Case("c/2", "Yes, that one.", None, rule=None, not_rules=("correction.already-tried",),
                history=("Compare the two quotes", CaseTurn("assistant", "Acme or Zed?")), has_referent=True,
                referent=None, anchor="Compare the two quotes")
    d = case.to_dict()
    assert d == {"id": "c/2", "message": "Yes, that one.", "not": ["correction.already-tried"],
                 "history": ["Compare the two quotes", {"role": "assistant", "content": "Acme or Zed?"}],
                 "referent": None, "anchor": "Compare the two quotes"}
    json.dumps(d)


def test_the_corpus_error_lists_problems_by_rank_then_place():
    late = problem("E201", "a template yields nothing", "b.yaml", 3, 1, rank=5)
    early = problem("E201", "a template yields nothing", "a.yaml", 9, 1, rank=5)
    first = problem("E212", "case id 'c/1' is used twice (also at y.yaml:4)", "z.yaml", 1, 1, rank=1)
    exc = CorpusError([late, early, first], "templates have problems")
    assert isinstance(exc, CleoError) and exc.code == "E200"
    assert list(exc.problems) == [first, early, late]
    assert str(exc).startswith("templates have problems (3 errors)\n")
    assert exc.report().splitlines()[-1] == "3 errors"
