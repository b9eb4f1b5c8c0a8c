"""Corrections that reject what the assistant just offered, answered or did, and their guards.

* ``after_assistant``: the rule fires only when the last turn is the
  assistant's ("wrong day, I said Thursday" after a booking is a correction;
  out of the blue, or after the user's own question, it is not).
* ``names_reply``: a negated statement is a correction only when every word
  it is about is in the assistant's last reply ("the back flat isn't ours"
  after a booking for the back flat), not when it is about something else.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from cleo_rules import load_pack

PACK = load_pack()
TRAIN = ["Book me a train to Carlisle on Friday",
         {"role": "assistant", "content": "There is one at 7:05 or 7:35."}]
BOOKED = [{"role": "assistant", "content": "Booked for Wednesday at 9 am at the tyre centre."}]


@pytest.mark.parametrize("message, history", [
    ("No, a later time please.", TRAIN),
    ("Not that one, the 7:35.", TRAIN),
    ("Wrong day, I said Thursday.", BOOKED),
    ("You've left out the valve check.", BOOKED),
    ("It's the rear tyres we need.", BOOKED),
])
def test_a_rejection_of_the_assistant_s_reply_is_a_correction(message, history):
    assert PACK.classify(message, history).kind == "correction"


@pytest.mark.parametrize("message, rule", [
    ("No, a later time please.", "correction.no-other-choice"),
    ("Wrong day, I said Thursday.", "correction.wrong-detail"),
    ("It's the rear tyres we need.", "correction.contrastive-cleft"),
    ("You've left out the valve check.", "correction.left-out"),
])
def test_the_same_words_after_the_user_s_own_turn_or_out_of_the_blue_are_no_correction(message, rule):
    for history in ([], ["Book me a train to Carlisle on Friday"]):
        d = PACK.classify(message, history)
        assert d.kind != "correction", (history, d.rule)
    assert PACK.classify(message, BOOKED + [{"role": "user", "content": "ok"},
                                            {"role": "assistant", "content": "Anything else?"}]).rule == rule


def test_a_negated_statement_is_a_correction_only_about_what_the_reply_named():
    reply = [{"role": "assistant", "content": "The glazier is booked for the back flat on Monday."}]
    assert PACK.classify("The back flat isn't ours.", reply).rule == "correction.negated-mention"
    other = [{"role": "assistant", "content": "The glazier is booked for the front flat on Monday."}]
    assert PACK.classify("The back flat isn't ours.", other).kind != "correction"
    # a possessive in the reply names the same thing
    owned = [{"role": "assistant", "content": "Mr Dale's check-up is on Thursday."}]
    assert PACK.classify("Mr Dale isn't due till June.", owned).rule == "correction.negated-mention"


def test_explain_says_which_guard_refused_the_match():
    ex = PACK.explain("Wrong day, I said Thursday.", ["When is the tyre fitting?"])
    mine = next(a for a in ex.attempts if a.rule == "correction.wrong-detail")
    assert mine.span is not None and not mine.fired
    assert "not the assistant's" in mine.note


GUARDED = {"No, the other one.": "correction.no-other-choice", "Wrong address.": "correction.wrong-detail",
           "I said two.": "correction.i-said", "That's not ours.": "correction.thats-not"}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(GUARDED)),
       st.lists(st.text(alphabet="abcdefgh ,.", min_size=1, max_size=30), min_size=1, max_size=3))
def test_a_guarded_rule_fires_after_the_assistant_s_reply_and_never_after_user_turns_only(message, said):
    assert PACK.classify(message, said).rule != GUARDED[message]
    replied = said + [{"role": "assistant", "content": "Done: sent to 4 Mill Row."}]
    assert PACK.classify(message, replied).rule == GUARDED[message]
