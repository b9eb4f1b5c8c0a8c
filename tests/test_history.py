"""The history format: strings and {role, content}, oldest first; every malformed item named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.history import ASSISTANT, USER, HistoryError, Said, read_history

PACK = load_pack()


def test_strings_are_user_turns_and_turns_are_numbered_per_speaker():
    said = read_history(["Compare the quotes", {"role": "assistant", "content": "Hadley is 2,140."},
                         {"role": "user", "content": "And Cresswell?"}])
    assert said == (Said(USER, "Compare the quotes", 0, 1), Said(ASSISTANT, "Hadley is 2,140.", 1, 1),
                    Said(USER, "And Cresswell?", 2, 2))
    assert said[1].where == "assistant turn 1"


def test_system_and_tool_items_and_tool_only_replies_are_passed_over():
    said = read_history([{"role": "system", "content": "Be brief."}, "Hi there, find me a plumber",
                         {"role": "assistant", "content": None, "tool_calls": []},
                         {"role": "tool", "content": "{...}"}, {"role": "developer", "content": "x"},
                         {"role": "assistant", "content": "Dalton Heating can come today."}])
    assert [(s.role, s.index, s.turn) for s in said] == [(USER, 1, 1), (ASSISTANT, 5, 1)]


def test_content_may_be_a_list_of_text_parts():
    said = read_history([{"role": "user", "content": [{"type": "text", "text": "Compare"},
                                                        {"type": "image_url", "image_url": {"url": "x"}},
                                                        {"type": "text", "text": "the quotes"}]}])
    assert said[0].content == "Compare the quotes"


@pytest.mark.parametrize("history, index, words", [
    (["ok", 3], 1, "found int"),
    ([{"content": "x"}], 0, "must have a 'role'"),
    ([{"role": "robot", "content": "x"}], 0, "unknown role 'robot'"),
    ([{"role": "user"}], 0, "must have a 'content'"),
    ([{"role": "user", "content": None}], 0, "cannot be null"),
    ([{"role": "assistant", "content": 5}], 0, "must be a string"),
    ([{"role": "user", "content": [{"text": 5}]}], 0, "content part 0"),
])
def test_a_malformed_item_is_named(history, index, words):
    with pytest.raises(HistoryError) as err:
        read_history(history)
    assert err.value.index == index and str(err.value).startswith(f"history[{index}]: ") and words in str(err.value)
    assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)


@pytest.mark.parametrize("history", ["one string", {"role": "user", "content": "x"}, 42])
def test_a_history_that_is_not_a_sequence_is_a_type_error(history):
    with pytest.raises(TypeError):
        read_history(history)


def test_classify_takes_both_formats_and_names_a_bad_item():
    plain = PACK.classify("Tell me more.", ["Which van insurer covers tools left overnight?"])
    tagged = PACK.classify("Tell me more.", [{"role": "user", "content": "Which van insurer covers tools left overnight?"}])
    assert plain.query == tagged.query == "Which van insurer covers tools left overnight?\nTell me more."
    with pytest.raises(HistoryError, match=r"history\[1\]"):
        PACK.classify("Tell me more.", ["Which van insurer?", {"role": "bot", "content": "x"}])


texts = st.text(min_size=1, max_size=40)


@given(st.lists(st.one_of(texts, st.fixed_dictionaries({"role": st.just("user"), "content": texts})), max_size=8),
       texts)
def test_user_only_role_items_decide_exactly_as_plain_strings(history, message):
    """{role: user} items and plain strings are one format: the same decision, query and parts."""
    plain = [h["content"] if isinstance(h, dict) else h for h in history]
    assert PACK.classify(message, history) == PACK.classify(message, plain)
