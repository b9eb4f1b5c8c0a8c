"""The prefilter's index: the candidates for a text are the rules whose requirements it meets.

With whole literals as keys the answer is exact; with shorter keys it may
hold a rule too many, never miss one (a found key may stand for a longer
literal that is not there). Checked against :func:`holds`, the plain
reference, on drawn requirements and texts.
"""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.prefilter import LiteralIndex, holds, words_of, words_of_tokens
from cleo_rules.text import normalize, word_pattern

ALPHABET = "ab cé'"
literal = st.text(alphabet=ALPHABET, min_size=1, max_size=6)
word = st.text(alphabet="abé", min_size=1, max_size=3)
early = st.tuples(word, st.integers(1, 3))
condition = st.tuples(st.lists(literal, max_size=2).map(tuple), st.lists(literal, max_size=3).map(tuple),
                      st.lists(word, max_size=3).map(tuple), st.lists(early, max_size=2).map(tuple)).filter(any)
requirements = st.lists(st.one_of(st.none(), st.lists(condition, min_size=1, max_size=3)), max_size=10)


def brute(reqs, text):
    return [i for i, conds in enumerate(reqs) if not conds or holds(conds, text)]


@settings(max_examples=400, deadline=None)
@given(requirements, st.text(alphabet=ALPHABET, max_size=40))
def test_with_whole_keys_the_candidates_are_exactly_the_rules_whose_conditions_hold(reqs, text):
    assert LiteralIndex(reqs, key_length=100).candidates(text) == brute(reqs, text)


@settings(max_examples=400, deadline=None)
@given(requirements, st.text(alphabet=ALPHABET, max_size=60), st.integers(1, 4))
def test_with_short_keys_no_rule_that_holds_is_missed(reqs, text, key_length):
    found = LiteralIndex(reqs, key_length=key_length).candidates(text)
    assert set(brute(reqs, text)) <= set(found)
    assert found == sorted(found)


WIDE = "abcdefghijklmnopqrstuvwxyzαβγδεζηθικλμνξοπρστυφχψωабвгдежзийклмнопрстуфхцчшщ é'"
wide_literal = st.text(alphabet=WIDE, min_size=1, max_size=4)
wide_requirements = st.lists(st.lists(st.tuples(st.just(()), st.lists(wide_literal, min_size=1, max_size=8).map(tuple),
                                                st.just(()), st.just(())), min_size=1, max_size=2),
                             min_size=20, max_size=40)


@settings(max_examples=150, deadline=None)
@given(wide_requirements, st.text(alphabet=WIDE, max_size=60))
def test_many_first_characters_take_the_blocked_scan_to_the_same_answer(reqs, text):
    """Over 24 first characters the scan is split into guarded blocks."""
    assert LiteralIndex(reqs, key_length=100).candidates(text) == brute(reqs, text)


def test_examples():
    index = LiteralIndex([
        (((), ("tried", "tested"), (), ()),),              # 0: contains one of them
        None,                                              # 1: always
        ((("and", "so"), (), (), ()),),                    # 2: starts with one of them
        (((), (), ("it",), ()),),                          # 3: "it" as a whole word
        (((), ("been",), (), ()), ((), ("tried",), (), ())),  # 4: both
        (((), (), (), (("what", 2),)),),                   # 5: "what" among the first two words
    ])
    assert index.candidates("we tried it") == [0, 1, 3]
    assert index.candidates("it has been tried") == [0, 1, 3, 4]
    assert index.candidates("with its items") == [1]  # "it" only inside words
    assert index.candidates("so, tested") == [0, 1, 2]
    assert index.candidates("also tested") == [0, 1]  # "so" not at the start
    assert index.candidates("and what") == [1, 2, 5]
    assert index.candidates("and so what") == [1, 2]  # "what" is the third word
    assert index.candidates("") == [1]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab 'é.\u0301", max_size=30))
def test_words_from_tokens_are_the_words_of_the_text(text):
    text = normalize(text)
    assert words_of_tokens(word_pattern(text).findall(text), text) == words_of(text)
    assert words_of(text) == regex.findall(r"\w+", text)


def test_bundled_rules_mostly_skip_the_search_on_substantive_messages():
    matcher = load_pack().matcher
    messages = ["Can you book a table for four at an Italian place in Oakland tomorrow night?",
                "I need a flight from Boston to Denver on the 12th.",
                "What's the weather going to be like in Paris next week?",
                "Find me a dentist near Mission Street."]
    # classification patterns only: referent rules share the scan but are searched for follow-ups alone
    searched = sum(sum(1 for c in matcher._index.candidates(normalize(m)) if c < matcher._ref_start)
                   for m in messages)
    assert searched <= len(messages), searched


@settings(max_examples=300, deadline=None)
@given(requirements.flatmap(lambda reqs: st.tuples(st.just(reqs), st.lists(st.one_of(st.none(), st.integers(0, 6)),
                                                                          min_size=len(reqs), max_size=len(reqs)))),
       st.text(alphabet=ALPHABET, max_size=40))
def test_a_word_cap_leaves_out_only_a_rule_with_no_condition_and_only_for_a_longer_text(drawn, text):
    reqs, caps = drawn
    count = len(word_pattern(text).findall(text))
    expected = [i for i in brute(reqs, text) if reqs[i] or caps[i] is None or count <= caps[i]]
    index = LiteralIndex(reqs, key_length=100, caps=caps)
    assert index.candidates(text) == expected
    assert index.candidates(text, count=count) == expected  # the walk's own count, when given, is the one used
    assert index.unconditional == frozenset(i for i, conds in enumerate(reqs) if not conds)


def test_a_rule_with_no_required_words_is_named_for_short_messages_alone():
    matcher = load_pack().matcher
    searched = [r for lane in matcher.lanes for r in lane.patterns]
    capped = {i: matcher.word_caps[i] for i in matcher.unconditional if i < len(searched)}
    assert capped and all(cap is not None for cap in capped.values())  # the bundled pack's has a cap
    for i, cap in capped.items():
        short = normalize(" ".join(["thai"] * cap))
        long = normalize(" ".join(["thai"] * (cap + 1)))
        assert i in matcher._index.candidates(short) and i not in matcher._index.candidates(long)
