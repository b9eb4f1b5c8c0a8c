"""The requirements read off a pattern hold for every text it matches.

Patterns are drawn from pieces of the shapes rule patterns use (words, word
runs, optional and repeated groups, alternations, anchors, boundaries,
lookarounds) and texts from the same pieces, so that many of them match;
:func:`literal_requirements` must never name a condition a match fails.
"""

from __future__ import annotations

import os
import re

import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cleo_rules.prefilter import first_ascii_chars, holds, literal_requirements

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


# more examples for a longer run: PREFILTER_EXAMPLES=20000 pytest tests/prefilter/test_prefilter_requirements.py -k hold
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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_a_match_starts_with_one_of_the_first_ascii_characters(data):
    pattern = data.draw(patterns, label="pattern")
    starts = first_ascii_chars(pattern)
    text = data.draw(texts, label="text")
    m = regex.compile(pattern, cache_pattern=False).search(text, timeout=1.0)
    if m is not None and m.end() > m.start() and text[m.start()].isascii():
        assert text[m.start()] in starts, (pattern, text, m.span())


def test_first_ascii_characters_of_common_shapes():
    assert first_ascii_chars(r"\d+") == frozenset("0123456789")
    assert first_ascii_chars(r"(?:no|yes)\b") == frozenset("ny")
    assert first_ascii_chars(r"\b(?=x)[ab]c") == frozenset("ab")  # assertions consume nothing
    everything = frozenset(chr(c) for c in range(128))
    assert first_ascii_chars(r"\p{L}+") == everything          # re cannot read it: anything may start
    assert first_ascii_chars(r"(?i)yes") == everything
    assert first_ascii_chars(r"x?") == everything               # may match the empty string
