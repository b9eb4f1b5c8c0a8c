"""The business-register evaluation's measures: the bare-value test and how a decision is scored.

``bench/bare_value.py`` decides whether a referent is only a value (digits,
punctuation, currency, units, times, dates); ``bench/eval_business.py``
scores each decision against a case's label, subject stems and rejected
words. Both are read from their files, as ``make bench`` runs them.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import ROOT


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the script imports it by name
    spec.loader.exec_module(module)
    return module


bare_value = _load("bare_value")
eval_business = _load("eval_business")
is_bare_value = bare_value.is_bare_value

#: tokens that are values by the definition: numbers, symbols, currency, units, times, dates, glue between them
VALUE_TOKENS = ("9:10", "14:00", "140", "1,450", "38.50", "£", "€", "$", "%", "×", "/", "-", "–", "(", ")", ",",
                "EUR", "GBP", "USD", "eur", "Gbp", "CHF", "TOP", "pounds", "euros", "dollars", "pence", "p", "£38",
                "38p", "kg", "3kg", "g", "m", "cm", "mm", "km", "l", "ml", "sq ft", "ft", "mph", "hours", "hrs",
                "min", "mins", "minutes", "days", "weeks", "pcm", "pp", "per head", "per person", "9 am", "9am",
                "noon", "midnight", "o'clock", "Monday", "Tue", "thursday", "June", "Sept", "21st", "2nd",
                "2024-06-01", "12/06", "the", "and", "or", "at", "for", "each", "x")
#: words that name a thing, a place, a person or an action: never a value
NOUNS = ("easyJet", "flights", "TAP", "LightCo", "panels", "Lisbon", "invoice", "Kwik Fit", "Mark", "order",
         "appointment", "van", "Unit", "option", "cheaper", "top", "head", "st")

values = st.lists(st.sampled_from(VALUE_TOKENS), min_size=1, max_size=8)
glue = st.sampled_from((" ", "  ", ", ", "\t", "\n"))
#: no time limit per example: the machine may be busy, and the time is no part of what is tested
relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@relaxed
@given(values, glue)
def test_any_text_made_only_of_values_is_bare(tokens, sep):
    assert is_bare_value(sep.join(tokens))


@relaxed
@given(values, st.sampled_from(NOUNS), st.integers(min_value=0, max_value=8), glue)
def test_a_noun_anywhere_among_values_makes_the_text_not_bare(tokens, noun, at, sep):
    tokens.insert(min(at, len(tokens)), noun)
    assert not is_bare_value(sep.join(tokens))


@relaxed
@given(st.lists(st.text(alphabet=st.characters(categories=("Nd", "P", "S")), min_size=1), min_size=1).map(" ".join))
def test_any_text_of_digits_punctuation_and_symbols_is_bare(text):
    assert is_bare_value(text)


@relaxed
@given(st.text(max_size=40))
def test_a_bare_text_has_no_word_outside_the_value_vocabulary(text):
    """The other way round: whatever the text, if it is bare, each of its letter runs is a value word."""
    if is_bare_value(text):
        for word in bare_value.tokens(text):
            if word[0].isalpha():
                assert (word.lower() in bare_value.VALUE_WORDS or word.upper() in bare_value.CURRENCY_CODES
                        or word.lower() in ("st", "nd", "rd", "th", "head", "person", "guest", "cover")), word


@pytest.mark.parametrize("text", ["EUR", "140 EUR", "9:10 or 8:40", "£38 each", "Monday 21st June", "2024-06-01",
                                  "12/06", "noon", "9 am", "3 days", "£25 per head", "14 x 38", "1,450 pcm"])
def test_values_from_replies_are_bare(text):
    assert is_bare_value(text)


@pytest.mark.parametrize("text", ["", "   ", "TAP at 9:10 for 140 EUR", "easyJet at 13:25 for 95 EUR", "Unit 7",
                                  "the LED panels", "Mark Dunn", "Flat 2", "top", "the 8:40 train", "per head count",
                                  "St Mary's"])
def test_a_thing_or_nothing_is_not_bare(text):
    assert not is_bare_value(text)


def test_a_code_that_is_an_english_word_is_a_code_only_in_capitals():
    assert is_bare_value("140 TRY") and is_bare_value("140 try".upper())
    assert not is_bare_value("140 try") and not is_bare_value("Top")
    assert is_bare_value("140 eur") and is_bare_value("140 Usd")


def test_the_subject_is_kept_by_a_stem_inside_a_word_in_any_case():
    kept = eval_business.subject_kept
    assert kept("Quotes from the PLUMBERS\nsame again", ["plumb"])
    assert kept("x\ny", ["zzz", "y"])
    assert not kept("EUR\nDo it again but cheaper", ["flight", "lisbon"])
    assert not kept(None, ["flight"])  # a skip searches nothing


def test_a_rejected_word_counts_when_the_query_has_it_and_the_message_does_not():
    searched = eval_business.rejected_searched
    assert searched("Trek Domane\nIt's the Brompton", "It's the Brompton", ["trek", "domane"]) == ["domane", "trek"]
    assert searched("Not the Trek, the Brompton", "Not the Trek, the Brompton", ["trek"]) == []  # the message says it
    assert searched("the foundation inspection\nWe're past foundations", "We're past foundations",
                    ["foundation"]) == ["foundation"]  # whole words: "foundations" does not say "foundation"
    assert searched("Trekking poles", "poles", ["trek"]) == []  # a word, not a part of one
    assert searched(None, "no", ["trek"]) == []


def test_cases_are_scored_from_the_pack_decisions(default_pack):
    reply = {"role": "assistant", "content": "LightCo, 14 panels at 38 pounds each, delivered in March."}
    cases = [
        {"id": "t1", "history": ["Which supplier did we use for the shop's LED panels?", reply],
         "message": "Does that include VAT?", "label": "follow_up", "subject": ["panel"], "rejected": []},
        {"id": "t2", "history": ["Which supplier did we use for the shop's LED panels?", reply],
         "message": "When does the van insurance renew?", "label": "substantive", "subject": [], "rejected": []},
        {"id": "t3", "history": ["Which supplier did we use for the shop's LED panels?", reply],
         "message": "When does the van insurance renew?", "label": "correction", "subject": ["panel"],
         "rejected": ["van"]},
    ]
    rows = [eval_business.judge(c, default_pack.classify(c["message"], c["history"])) for c in cases]
    assert [r["kind"] for r in rows] == ["follow_up", "substantive", "substantive"]
    assert [r["detected"] for r in rows] == [True, True, False]
    assert rows[0]["subject_kept"] is True and rows[1]["subject_kept"] is None and rows[2]["subject_kept"] is False
    assert rows[2]["rejected_searched"] == []  # the message itself says "van"
    fig = eval_business.figures(rows)
    assert fig["detected"]["follow_up"] == {"share": 1.0, "hit": 1, "total": 1}
    assert fig["detected"]["correction"] == {"share": 0.0, "hit": 0, "total": 1}
    assert fig["subject_kept"]["overall"] == {"share": 0.5, "hit": 1, "total": 2}
    assert fig["rejected_searched"]["overall"] == 0
    assert fig["bare_referents"]["overall"] == sum(r["bare_referent"] for r in rows)
    assert eval_business.misses(rows[2]) == ["detection", "subject"]
    assert eval_business.misses(rows[0]) == []


def test_the_headline_sets_each_target_of_the_issue():
    fig = {"detected": {k: {"share": 0.9, "hit": 9, "total": 10} for k in eval_business.LABELS},
           "subject_kept": {"overall": {"share": 0.85, "hit": 17, "total": 20}},
           "rejected_searched": {"overall": 1}, "bare_referents": {"overall": 0}, "referents": 5}
    judged = {name: eval_business.met(name, value) for name, value, _ in eval_business.headline(fig)}
    assert judged == {"follow_up detected": True, "correction detected": True, "substantive detected": True,
                      "subject kept": True, "rejected words searched": False, "bare-value referents": True}
