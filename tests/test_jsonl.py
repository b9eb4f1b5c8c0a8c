"""What a value read from JSON or YAML is called in an error message: one function, in either file's words."""

from __future__ import annotations

from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from cleo_rules.jsonl import json_type

VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                      max_leaves=8)
#: JSON's word for a kind of value, and YAML's
YAML_WORDS = {"null": "nothing", "an array": "a list", "an object": "a mapping"}


@given(VALUES)
def test_a_value_is_named_in_yaml_words_where_they_differ_from_json_ones(value):
    named = json_type(value)
    assert named in {"null", "a boolean", "a number", "a string", "an array", "an object"}
    assert json_type(value, as_yaml=True) == YAML_WORDS.get(named, named)


def test_a_yaml_value_json_has_no_word_for_is_named_by_its_type():
    assert json_type(date(2024, 1, 2), as_yaml=True) == "date"
    assert json_type(date(2024, 1, 2)) == "an object"
    assert (json_type(True), json_type(1.5, as_yaml=True)) == ("a boolean", "a number")
