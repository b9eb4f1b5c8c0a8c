"""The prefilter never drops a rule that could match, and drops most that cannot.

Three layers: the requirements read off a pattern hold for every text it
matches (:func:`literal_requirements`); the index finds the rules whose
requirements a text meets (:class:`LiteralIndex`); and classifying with the
prefilter gives the same decisions as searching every rule.
"""

from __future__ import annotations

import os
import re

import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.pack.regexlint import literal_requirements
from cleo_rules.prefilter import LiteralIndex, holds, words_of, words_of_tokens
from cleo_rules.text import normalize, word_pattern

# -- the index ----------------------------------------------------------------

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


# -- the requirements of a pattern ---------------------------------------------

ATOMS = ["a", "b", "ab", "ba", " ", "it", "the", "one", "'s", r"\w+", r"\W*", r"\d", "[ab]", "[ab ]", ".",
         r"(?:\w+,? )", r"(?:\w+[,.]? ){0,2}", r"(?:\w+ )+", "^(?:\\w+ ){1,2}"]


def _pattern():
    return st.recursive(
        st.sampled_from(ATOMS),
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=4).map("".join),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
            st.tuples(inner, st.sampled_from(["?", "*", "+", "{1,2}", "{0,2}", "{2}"])).map(
                lambda t: f"(?:{t[0]}){t[1]}"),
            st.tuples(st.sampled_from([r"\b", "^", "$", r"\B"]), inner).map("".join),
            st.tuples(inner, st.sampled_from([r"\b", "$"])).map("".join),
            st.tuples(st.sampled_from(["(?=", "(?!", "(?<=", "(?<!"]), inner, inner).map(
                lambda t: t[2] + t[0] + t[1] + ")" if t[0] in ("(?=", "(?!") else t[0] + t[1] + ")" + t[2]),
        ),
        max_leaves=8,
    )


def _compiles(p):
    """Both engines read it (the analysis parses with ``re``'s parser)."""
    try:
        regex.compile(p, cache_pattern=False)  # a full cache is pruned at random, which hypothesis forbids here
        re.compile(p)
        return True
    except (regex.error, re.error):
        return False


patterns = _pattern().filter(_compiles)
# texts made of the patterns' own pieces, so that many of them match
PIECES = ["a", "b", "ab", "it", "the", "one", "'s", "s", " ", " ", ",", ".", "1", "é", "x"]
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


# more examples for a longer run: PREFILTER_EXAMPLES=20000 pytest tests/test_runtime_prefilter.py -k hold
EXAMPLES = int(os.environ.get("PREFILTER_EXAMPLES", "500"))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_requirements_hold_for_every_text_the_pattern_matches(data):
    pattern = data.draw(patterns, label="pattern")
    conditions = literal_requirements(pattern, min_length=1)
    assume(conditions is not None)
    text = data.draw(texts, label="text")
    try:
        hit = regex.compile(pattern, cache_pattern=False).search(text, timeout=1.0)
    except TimeoutError:
        return
    if hit:
        assert holds(conditions, text), (pattern, conditions, text)


def test_requirements_of_common_shapes():
    assert ((("ok", "yes"), (), (), ())) in literal_requirements(r"^(?:yes|ok)\b")
    # sre factors "th" out of the alternatives; the strings are put back together
    assert literal_requirements(r"\b(?:that|this)\b") == (((), (), ("that", "this"), ()),)
    assert literal_requirements(r"sounds?") == (((), ("sound", "sounds"), (), ()),)
    # a required lookahead adds what it needs; a negative one adds nothing
    reqs = literal_requirements(r"\bthe(?= ones?\b)(?!x)")
    assert any(set(c[1]) >= {" one"} or "one" in c[2] for c in reqs)
    assert all("x" not in c[1] for c in reqs)
    # nothing required: no prefilter
    assert literal_requirements(r"\w+") is None
    assert literal_requirements(r"(?i)yes") is None


def test_a_pronoun_after_a_space_is_required_as_a_whole_word():
    reqs = literal_requirements(r"^(?:what|how)\b(?: \w+){0,5} (?:it|they)\b")
    assert any(set(c[2]) == {"it", "they"} and not c[1] for c in reqs)
    assert holds(reqs, "what is it") and not holds(reqs, "what is the item")


def test_a_word_after_a_few_leading_words_is_required_early():
    reqs = literal_requirements(r"^(?:\w+,? ){0,2}(?:what|how)\b")
    assert (((), (), (), (("how", 3), ("what", 3)))) in reqs
    assert holds(reqs, "ok, so what") and not holds(reqs, "ok so then what")
    behind = literal_requirements(r"(?<=^(?:\w+[,.!]? ){1,3})(?:fine|good)\b")
    assert any(c[3] == (("fine", 4), ("good", 4)) for c in behind)


# -- classifying with and without the prefilter --------------------------------

def _messages():
    pack = load_pack()
    out = []
    for rule in pack.follow_ups + pack.corrections:
        out.extend(rule.examples + rule.counterexamples + tuple(getattr(rule, "request_forms", ())))
    for vset in pack.vocab_sets:
        out.extend(vset.examples)
    out += ["What is it?", "Is it cheaper?", "what about the other ones", "That one.", "And the price?",
            "It's fine, thanks", "no, i meant the blue one", "İt is too vague", "ok", "x" * 300]
    return out


def test_the_prefilter_changes_no_decision():
    fast = load_pack()
    slow = load_pack()
    matcher = slow._matcher
    matcher._index = LiteralIndex([None] * matcher._index.size)  # every rule searched
    matcher._history_kind.cache_clear()
    history = ("Which boiler should we fit in the new flat?",)
    for message in _messages():
        a, b = fast.classify(message, history=history), slow.classify(message, history=history)
        assert (a.kind, a.rule, a.span, a.query) == (b.kind, b.rule, b.span, b.query), message


def test_bundled_rules_mostly_skip_the_search_on_substantive_messages():
    pack = load_pack()
    matcher = pack._matcher
    messages = ["Can you book a table for four at an Italian place in Oakland tomorrow night?",
                "I need a flight from Boston to Denver on the 12th.",
                "What's the weather going to be like in Paris next week?",
                "Find me a dentist near Mission Street."]
    searched = sum(len(matcher._index.candidates(normalize(m))) for m in messages)
    assert searched <= len(messages), searched


WORDS = ["ok", "fine", "good", "so", "it's", "what", "is", "that", "a", "one"]
sentences = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(["", ",", ".", "!", " -"])),
                     min_size=1, max_size=7).map(lambda ws: " ".join(w + p for w, p in ws))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2), st.integers(1, 3), st.sampled_from([r"(?:fine|good)\b", r"(?:it|what)\b(?: \w+)? is"]),
       sentences)
def test_requirements_hold_after_leading_words_and_lookbehinds(lo, extra, tail, text):
    """Patterns the ``re`` parser reads but cannot draw texts for (variable lookbehind)."""
    hi = lo + extra
    for pattern in (rf"(?<=^(?:\w+[,.!]? ){{{lo},{hi}}}){tail}", rf"^(?:\w+[,.!]? ){{{lo},{hi}}}{tail}"):
        conditions = literal_requirements(pattern, min_length=1)
        if conditions is not None and regex.compile(pattern, cache_pattern=False).search(text):
            assert holds(conditions, text), (pattern, conditions, text)
