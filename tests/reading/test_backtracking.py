"""The backtracking lint: static risk read off the pattern, and the timed probe."""

from __future__ import annotations

import pytest
import regex

from cleo_rules.reading.backtracking import probe, static_risk


@pytest.mark.parametrize("pattern, why", [
    (r"(\w+\s?)+$", "a repeat nested inside another repeat"),
    (r"(?:a+)+b", "a repeat nested inside another repeat"),
    (r"^(?:\w+,?)*\d", "a repeat nested inside another repeat"),
    (r"(?:ab|a|b)*c", "alternatives inside a repeat can split the same text two ways"),
    (r"(?:(?:yes|ye|s)+)x", "alternatives inside a repeat can split the same text two ways"),
    (r"(?:\w+|[a-z]+\d*)*!", "a repeat nested inside another repeat"),
    (r"(?:x\w*|x\d+)+!", "a repeat nested inside another repeat"),   # the parser takes the x out in front
    (r"(?:-(?:[ab]\d*|b))+!", "repeated alternatives overlap and one of them repeats itself"),
    (r"(?=(?:a+)+b)c", "a repeat nested inside another repeat"),
])
def test_risky_shapes_are_flagged(pattern, why):
    assert static_risk(pattern).startswith(why)


@pytest.mark.parametrize("pattern", [
    r"(?:\w+ )*end",                      # each round ends at a space no inner repeat can match
    r"^(?:\w+,? ){0,3}(?:what|how)\b",    # bounded: at most three rounds
    r"\b(?:we|i)(?:'ve| have)? (?:already )?tried (?:that|this|it)\b",
    r"(?:yes|no)+",                       # alternatives that cannot spell each other
    r"(?:a|b)*c",
    r"\w++\s",                            # possessive: nothing to backtrack into
])
def test_safe_shapes_pass(pattern):
    assert static_risk(pattern) is None


def test_regex_only_syntax_is_left_to_the_probe():
    assert static_risk(r"\p{L}+(?:\s\p{L}+)*") is None   # \p{..}: the re parser cannot read it


def test_the_probe_times_out_a_catastrophic_pattern_and_names_the_pump():
    """``(?:a|aa)+`` is one the static check lets through (the parser reads it
    as ``a(?:|a)``, whose alternatives cannot spell each other): the probe is
    what refuses it."""
    assert static_risk(r"^(?:a|aa)+$") is None
    why = probe(regex.compile(r"^(?:a|aa)+$"), r"^(?:a|aa)+$", budget=0.05)
    assert why is not None and why.startswith("took over 0.05s on 'a' repeated 40 times")


def test_the_probe_passes_a_linear_pattern():
    pattern = r"\b(?:we|i) (?:already )?tried (?:that|this|it)\b"
    assert probe(regex.compile(pattern), pattern, budget=0.05) is None
