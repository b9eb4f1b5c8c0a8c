"""Properties of classify over open input, with hypothesis."""

from __future__ import annotations

import unicodedata

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from cleo_rules.shaping import fill_template

from cleo_rules import load_pack

PACK = load_pack()
KINDS = {"skip", "correction", "follow_up", "substantive"}

# realistic chat text: words from the pack's own vocabulary and topics, punctuation, odd spacing
VOCAB = sorted({w for s in PACK.vocab_sets for w in s.words})
TOPIC = ["van", "insurance", "Brightline", "quote", "flour", "rota", "invoice", "2023", "loyalty", "scheme"]
WORD = st.sampled_from(VOCAB + TOPIC + ["tried", "said", "meant", "ruled", "stopped", "wrong", "no", "not"])
SEP = st.sampled_from([" ", "  ", ", ", ". ", "! ", "? ", "\t", "\u00a0", " - "])
CHAT = st.lists(st.tuples(WORD, SEP), min_size=1, max_size=16).map(lambda ws: "".join(w + s for w, s in ws))
ANY_TEXT = st.one_of(st.text(), st.text(alphabet=st.characters(), min_size=0, max_size=3000), CHAT)
HISTORY = st.lists(st.one_of(CHAT, st.text(max_size=80)), max_size=6)

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(ANY_TEXT, HISTORY)
def test_never_raises_and_is_deterministic(message, history):
    first = PACK.classify(message, history)
    again = PACK.classify(message, list(history))
    assert first == again
    assert first.kind in KINDS
    if first.kind == "skip":
        assert first.query is None
    elif first.kind == "follow_up" and first.anchor is not None:
        assert first.query == fill_template(PACK.settings.combine, anchor=first.anchor, message=message)
        assert first.anchor in history
    else:
        assert first.query == message and first.anchor is None
    if first.span is not None:
        assert message[first.span[0]:first.span[1]] == first.matched


@settings(max_examples=20, deadline=None)
@given(st.text(min_size=1, max_size=20).map(lambda s: s * 40000))
def test_huge_messages_do_not_raise(message):
    d = PACK.classify(message)
    assert d.kind in KINDS


@SETTINGS
@given(st.text())
def test_skip_iff_under_ten_visible_characters(message):
    """Skip on the message with format characters (Cf) removed and its ends stripped; never more than before."""
    d = PACK.classify(message)
    visible = len("".join(c for c in message if unicodedata.category(c) != "Cf").strip())
    assert (d.kind == "skip") == (visible < 10)
    if len(message.strip()) < 10:
        assert d.kind == "skip"


def _variants(message: str):
    yield "  " + message.replace(" ", "   ") + " \n"
    yield message.replace(" ", "\u00a0")
    yield message.replace("'", "\u2019")
    yield message.replace("'", "\u2018")


@SETTINGS
@given(CHAT)
# the guard against a pronoun after a person read the message's words with straight apostrophes only: "don’t"
# was "don" and "t", and "don" is a word for a person
@example("a a a a a bunch a bunch a bunch don't got it ")
def test_case_space_and_apostrophe_variants_get_the_same_kind(message):
    """Spacing and apostrophes never change the kind; nor does case, between texts that show no capitals.

    Capitals as typed are read as names ("how did Aretha Franklin get her first
    record deal?" names its own subject), so a title-cased variant may rightly
    differ; a text in lower case and the same text in capitals throughout both
    show none.
    """
    assume(len(message.strip()) >= 10)
    kind = PACK.classify(message).kind
    for variant in _variants(message):
        if len(variant.strip()) >= 10:
            assert PACK.classify(variant).kind == kind, variant
    if sum(1 for w in message.split() if sum(ch.isalpha() for ch in w) >= 2) >= 2:
        assert PACK.classify(message.upper()).kind == PACK.classify(message.lower()).kind, message


def test_a_message_of_words_the_vocabulary_covers_without_a_head_is_classified():
    """Every word covered, none heading (filler): the late patterns count topic words with spans of their own."""
    kinds = {PACK.classify(m).kind for m in ["just just a ", "  just   just   a  \n", "JUST JUST A "]}
    assert len(kinds) == 1


def test_known_variants():
    base = "We've tried that one already."
    for variant in ["WE'VE TRIED THAT ONE ALREADY.", "we\u2019ve   tried that one already", "We\u2019ve tried THAT one already!"]:
        assert PACK.classify(variant).kind == PACK.classify(base).kind == "correction"
