"""Normalisation: the same text for compiler and matcher, and spans back to the original."""

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules.text import normalize, normalize_map, original_span, words


def test_normalize_folds_case_quotes_dashes_space_and_zero_width():
    raw = "  We\u2019VE\u00a0 tried \u201cthat\u201d\u200b one \u2014 ALREADY\t"
    assert normalize(raw) == 'we\'ve tried "that" one - already'


def test_normalize_nfkc_and_casefold():
    assert normalize("\uff34\uff32\uff39 \ufb01ne STRASSE stra\u00dfe") == "try fine strasse strasse"


def test_words_keep_inner_apostrophes():
    assert words(normalize("Let\u2019s try it, don't we?")) == ["let's", "try", "it", "don't", "we"]


def test_original_span_maps_back_through_normalisation():
    raw = "Yes,\u00a0\u00a0GO \u200bwith the\u2019 second"
    norm = normalize(raw)
    start = norm.index("go with")
    s, e = original_span(raw, start, start + len("go with"))
    assert raw[s:e] == "GO \u200bwith"


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_map_agrees_with_fast_path(text):
    assert normalize_map(text)[0] == normalize(text)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_normalize_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once
    assert once == once.strip()
    assert "  " not in once
    assert unicodedata.normalize("NFKC", once) == once


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127)), st.data())
def test_ascii_span_fast_path_matches_the_general_map(text, data):
    norm, starts, ends = normalize_map(text)
    if not norm:
        return
    a = data.draw(st.integers(0, len(norm) - 1))
    b = data.draw(st.integers(a + 1, len(norm)))
    assert original_span(text, a, b) == (starts[a], ends[b - 1])
    # given the normalised text, an ASCII text of the same length keeps its positions
    assert original_span(text, a, b, norm) == (starts[a], ends[b - 1])
