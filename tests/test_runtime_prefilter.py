"""The literal index finds exactly the rules whose literals are in a text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules.prefilter import LiteralIndex

ALPHABET = "ab cé'"
literal = st.text(alphabet=ALPHABET, min_size=1, max_size=6)
literal_sets = st.lists(st.one_of(st.none(), st.lists(literal, min_size=1, max_size=4)), max_size=12)


def brute(sets, text):
    return [i for i, lits in enumerate(sets)
            if not lits or any(len(lit) < 2 for lit in lits) or any(lit in text for lit in lits)]


@settings(max_examples=400, deadline=None)
@given(literal_sets, st.text(alphabet=ALPHABET, max_size=40))
def test_candidates_are_exactly_the_rules_that_could_match(sets, text):
    assert LiteralIndex(sets).candidates(text) == brute(sets, text)


@settings(max_examples=100, deadline=None)
@given(literal_sets, st.text(alphabet=ALPHABET, min_size=200, max_size=400))
def test_long_texts_take_the_other_path_to_the_same_answer(sets, text):
    assert LiteralIndex(sets).candidates(text) == brute(sets, text)


def test_examples():
    index = LiteralIndex([("tried", "tested"), None, ("it",), ("x",), ("been tried",)])
    assert index.candidates("we tried it") == [0, 1, 2, 3]
    assert index.candidates("it has been tried") == [0, 1, 2, 3, 4]
    assert index.candidates("nothing here") == [1, 3]
    assert index.candidates("") == [1, 3]
