"""Requests and questions that point back at what the assistant just said, in a business owner's words.

After a reply, "could you forward those to the bank?", "order the walnut one",
"recalculate with the new rate" or "vs last year?" are about the reply: each is
a follow-up, searched with it. The same words with no conversation before them,
or pointing at something the message itself names, are searched as typed.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from cleo_rules import load_pack
from cleo_rules.proper_names import names

PACK = load_pack()
REPLY = [{"role": "assistant", "content": "The shop buys its paper cups from Packwell at 6 pence each."}]
STATEMENTS = ["Which statements do we still need for the loan?",
              {"role": "assistant", "content": "The March and April statements for the savings account."}]
TABLES = ["Which console tables are in stock?",
          {"role": "assistant", "content": "An oak table at 240 and a walnut table at 310, both in stock."}]
LABOUR = [{"role": "assistant", "content": "Labour for the kitchen refit comes to 1,120 at 28 an hour."}]


@pytest.mark.parametrize("message, history, rule", [
    ("Could you forward those to the bank manager?", STATEMENTS, "follow_up.points-back"),
    ("Remind me to renew it in May.", REPLY, "follow_up.points-back"),
    ("Make a dozen of each for the christening on Sunday.", REPLY, "follow_up.points-back"),
    ("Order the walnut one for the hallway, the oak would look too heavy next to the stairs.", TABLES,
     "follow_up.one-anaphora"),
    ("Keep the rest for the Christmas market, they will sell then.", REPLY, "follow_up.one-anaphora"),
    ("Recalculate with the hourly rate at 32 instead of 28.", LABOUR, "follow_up.redo"),
    ("vs the Harrogate branch?", LABOUR, "follow_up.compared"),
    ("Take 30 boxes then, we ran short last Easter.",
     [{"role": "assistant", "content": "The farm has eggs at 2.40 a box, delivered on Tuesdays."}], "follow_up.quantity"),
    ("Can we swap the pine shelves for oak if the price is close?", LABOUR, "follow_up.swap"),
])
def test_after_a_reply_a_message_pointing_back_at_it_is_a_follow_up_searched_with_it(message, history, rule):
    d = PACK.classify(message, history)
    assert (d.kind, d.rule) == ("follow_up", rule), (message, d.rule)
    assert d.query != message and any(p.source == "assistant" for p in d.parts)  # searched with the reply


@pytest.mark.parametrize("message", [
    "Could you forward those to the bank manager?",
    "Order the walnut one for the hallway, the oak would look too heavy next to the stairs.",
    "Recalculate with the hourly rate at 32 instead of 28.",
    "vs the Harrogate branch?",
    "Take 30 boxes then, we ran short last Easter.",
    "Can we swap the pine shelves for oak if the price is close?",
])
def test_with_no_conversation_before_it_the_same_message_is_searched_as_typed(message):
    for history in ([], ["Which statements do we still need for the loan?"]):  # no reply of the assistant's
        d = PACK.classify(message, history)
        assert d.kind == "substantive" and d.query == message, (message, history, d.rule)


@pytest.mark.parametrize("message", [
    "Can you send that new price list to every stockist?",    # a demonstrative before its noun
    "Does the new dishwasher use more water than the old one?",  # "one" is the message's own noun
    "The one thing the bakery still needs before opening is a food hygiene licence.",  # a numeral
    "Compared to a limited company, what does a sole trader pay in tax?",  # both sides named
])
def test_a_pointer_whose_antecedent_is_in_the_message_itself_stays_substantive(message):
    assert PACK.classify(message, REPLY).kind == "substantive", message


@pytest.mark.parametrize("verb", ["Remind", "Forward", "Pencil", "Bump", "Grab", "Draft"])
@pytest.mark.parametrize("rest", ["me about it", "those to the office", "the order in", "that to fifty"])
def test_a_lone_word_opening_a_request_before_its_object_is_its_verb_not_a_name(verb, rest):
    assert names(f"{verb} {rest}.") == []


@pytest.mark.parametrize("text, name", [("Elbow played the main stage.", "Elbow"),
                                        ("Potclays sent the glaze.", "Potclays")])
def test_a_name_before_its_verb_or_after_one_stays_a_name(text, name):
    assert [n.text for n in names(text)] == [name]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["those", "them", "it", "that"]),
       st.sampled_from(["forward", "send", "pay", "cancel", "renew", "email"]),
       st.sampled_from(["to the office", "on Friday", "before the end of the month", "today please"]))
def test_a_pronoun_object_points_back_only_when_there_is_a_reply_to_point_at(pronoun, verb, tail):
    message = f"Could you {verb} {pronoun} {tail}?"
    assert PACK.classify(message, REPLY).kind == "follow_up", message
    alone = PACK.classify(message, [])
    assert alone.query == message  # nothing before it: searched as typed, whatever it is called


def test_a_choice_that_acts_on_the_option_it_names_may_say_why():
    offer = ["Which courier should take the big orders?",
             {"role": "assistant", "content": "Hadley quotes 2,140 a year and Cresswell quotes 1,865 a year."}]
    d = PACK.classify("Go with Cresswell, their drivers are friendlier and they collect on Saturdays.", offer)
    assert (d.kind, d.rule) == ("follow_up", "vocab.choice") and "Cresswell" in (d.referent or "")
    assert "Hadley" not in d.query
    # a question about an option, or a message naming both, picks nothing
    assert PACK.classify("Go with Cresswell or Hadley, whichever is cheaper?", offer).rule != "vocab.choice"
