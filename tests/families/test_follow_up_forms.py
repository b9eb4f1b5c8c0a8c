"""Follow-up forms the bundled pack recognises, and a look-alike it leaves alone.

* Ellipsis that asks for the last request again with one thing changed
  ("same for Bradford", "could you do the same for electricians?",
  "electricians too, please") is a follow-up searched with that request.
* A nod with an interjection ("lol yes please") is a nod.
* A request for news ("is there any news about the rugby?") names its own
  topic: it is searched as typed, with or without a conversation before it.

Each case states the kind, the rule and the query's parts (``Decision.parts``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from cleo_rules import load_pack
from cleo_rules.text import WORD, normalize

PACK = load_pack()
# an information-seeking conversation: the user asked, the assistant answered
ANSWERED = ["Which van insurer covers tools left in the van overnight?",
            {"role": "assistant", "content": "Two do: Brightline Commercial at 2,140 a year and Zego Van at 1,865."}]
# a task: the user asked for something to be done
REQUEST = ["Find me a plumber in Leeds.",
           {"role": "assistant", "content": "Aire Plumbing can come on Tuesday and Kirkstall Pipes on Friday."}]


def names(decision) -> list[str]:
    return [p.name for p in decision.parts]


@pytest.mark.parametrize("message, rule", [
    ("Same for Bradford.", "follow_up.same-for"),
    ("Same thing but in York.", "follow_up.same-for"),
    ("lol yes please", "vocab.nod"),
    ("haha ok cool", "vocab.nod"),
])
def test_after_an_answer_ellipsis_and_nods_are_searched_with_the_question_and_the_answer(message, rule):
    d = PACK.classify(message, ANSWERED)
    assert (d.kind, d.rule) == ("follow_up", rule)
    assert names(d) == ["anchor", "message", "reply"]
    anchor, said, reply = d.parts
    assert (anchor.text, anchor.source, anchor.turn) == (ANSWERED[0], "user", 1)
    assert (said.text, said.source) == (message, "message")
    assert (reply.text, reply.source, reply.rule) == (ANSWERED[1]["content"], "assistant", None)
    assert d.query == f"{ANSWERED[0]}\n{message}\n{ANSWERED[1]['content']}"


@pytest.mark.parametrize("message, rule", [
    ("Same thing but in York.", "follow_up.same-for"),
    ("Could you do the same for electricians?", "follow_up.same-for"),
    ("Does the same go for York?", "follow_up.same-for"),
    ("Same as last time, please.", "follow_up.same-for"),
    ("Electricians too, please.", "follow_up.too"),
    ("What about electricians?", "follow_up.what-about"),
    ("lol yes please", "vocab.nod"),
])
def test_after_a_request_ellipsis_is_searched_with_the_request(message, rule):
    d = PACK.classify(message, REQUEST)
    assert (d.kind, d.rule) == ("follow_up", rule)
    assert names(d) == ["anchor", "referent", "message"]
    anchor, referent, said = d.parts
    assert (anchor.text, anchor.source, anchor.turn) == (REQUEST[0], "user", 1)
    # no referent rule points anywhere: the referent is the reply's opening words
    assert referent.rule is None and referent.source == "assistant"
    assert REQUEST[1]["content"].startswith(referent.text)
    assert (said.text, said.source) == (message, "message")
    assert d.query is not None and d.query.startswith(REQUEST[0] + "\n") and d.query.endswith("\n" + message)


@pytest.mark.parametrize("history", [ANSWERED, REQUEST, []], ids=["answered", "request", "no-history"])
@pytest.mark.parametrize("message", [
    "The same rules apply for Bradford council tax appeals filed after April",
    "Is there any news about the rugby?",
    "Any update on the rail strike?",
    "What's the latest on the election?",
])
def test_a_self_contained_message_is_searched_as_typed(message, history):
    d = PACK.classify(message, history)
    assert (d.kind, d.rule) == ("substantive", None)
    assert names(d) == ["message"] and d.query == message


def test_a_news_question_fires_neither_the_definite_nor_the_existential_rule():
    """The two rules that took it before: each still matches a description or "is there any", not this."""
    for history in (ANSWERED, []):
        ex = PACK.explain("Is there any news about the rugby?", history)
        mine = {a.rule: a for a in ex.attempts if a.rule in ("follow_up.definite", "follow_up.any-there")}
        assert set(mine) == {"follow_up.definite", "follow_up.any-there"}
        assert not any(a.fired for a in mine.values())
        assert all(a.span is None for a in mine.values())  # no match at all, not a match a bound refused


@pytest.mark.parametrize("message, rule", [
    ("Is there any news about it?", "follow_up.reference"),
    ("Are there any updates?", "follow_up.any-there"),
    ("Any news on the second one?", "follow_up.reference"),
])
def test_news_about_something_already_named_still_points_back(message, rule):
    d = PACK.classify(message, ANSWERED)
    assert (d.kind, d.rule) == ("follow_up", rule)
    assert names(d)[0] == "anchor" and "message" in names(d)


def test_laughter_alone_is_still_no_follow_up():
    d = PACK.classify("hahahahaha", ANSWERED)
    assert (d.kind, d.rule, names(d)) == ("substantive", None, ["message"])


def _vocabulary_only(word: str) -> bool:
    tokens = WORD.findall(normalize(word))
    return all(PACK.matcher.context.vocabulary.cover(tokens)[1])


# nouns of the pack's lexicon that are no vocabulary word and do not point back by themselves
# (a pronoun read as a noun, "alternatives": "any news about the alternatives?" asks about those offered)
NOUNS = sorted(w for w in PACK.lexicon["nouns"]
               if not _vocabulary_only(w) and w not in {"his", "hers", "its", "alternatives", "alternative"})
PLACES = sorted(w.title() for w in PACK.lexicon["proper"] if not _vocabulary_only(w))
TRADES = sorted(w for w in PACK.lexicon["people"] if not _vocabulary_only(w) and not _vocabulary_only(w + "s"))


@settings(max_examples=150, deadline=None)
@given(noun=st.sampled_from(NOUNS),
       form=st.sampled_from(["Is there any news about the {}?", "Any update on the {}?", "Is there any word on the {}?",
                             "What's the latest on the {}?", "Are there any updates about the {}?"]),
       history=st.sampled_from([ANSWERED, REQUEST, []]))
def test_news_about_any_topic_is_searched_as_typed(noun, form, history):
    message = form.format(noun)
    d = PACK.classify(message, history)
    assert (d.kind, d.query) == ("substantive", message)


@settings(max_examples=150, deadline=None)
@given(place=st.sampled_from(PLACES),
       form=st.sampled_from(["Same for {}.", "Same thing but in {}.", "The same again for {}, please.",
                             "Does the same go for {}?", "{} too, please.", "{} as well?"]))
def test_the_last_request_again_for_any_place_is_searched_with_it(place, form):
    message = form.format(place)
    d = PACK.classify(message, REQUEST)
    assert d.kind == "follow_up" and d.rule in ("follow_up.same-for", "follow_up.too")
    assert d.anchor == REQUEST[0] and names(d) == ["anchor", "referent", "message"]


@settings(max_examples=150, deadline=None)
@given(trade=st.sampled_from(TRADES),
       form=st.sampled_from(["Could you do the same for {}s?", "Can you do the same for {}s, please?",
                             "{}s too, please.", "What about {}s?"]))
def test_the_last_request_again_for_other_people_is_searched_with_it(trade, form):
    message = form.format(trade)
    message = message[0].upper() + message[1:]
    d = PACK.classify(message, REQUEST)
    assert d.kind == "follow_up" and d.anchor == REQUEST[0]
    assert names(d) == ["anchor", "referent", "message"]


FLAT = ["Find me a two-bed flat to rent in Ripon",
        {"role": "assistant", "content": "Marlowe House has a two-bed flat at 950 a month."}]


@pytest.mark.parametrize("message", ["Could you send me the floorplan?", "What is the floorplan like?",
                                     "Can I see the inventory, please?", "What would the price be?",
                                     "And the gazebo?"])
def test_a_description_of_a_part_of_what_the_assistant_named_is_a_follow_up_about_it(message):
    d = PACK.classify(message, FLAT)
    assert d.kind == "follow_up"
    assert "Marlowe House" in [p.text for p in d.parts if p.name == "referent"]


@pytest.mark.parametrize("message, history", [
    ("What is the floorplan?", []),                                        # nothing before it
    ("Why does the gazebo leak whenever we get storms?", FLAT),            # a topic of its own besides
    ("What happened after the relocated?", FLAT),                          # a verb's form, not a noun
])
def test_a_rare_word_is_read_as_a_noun_only_when_the_description_is_all_the_message_says(message, history):
    d = PACK.classify(message, history)
    assert d.rule != "follow_up.definite"


GRANT = ["Has the council answered about the shopfront grant?",
         {"role": "assistant", "content": "Not yet. Decisions usually take six weeks from the application."}]


@pytest.mark.parametrize("message,rule", [
    ("When did we send it off?", None),  # "it": another rule's
    ("Why did we wait?", "follow_up.bare-question"),
    ("What if we withdraw?", "follow_up.bare-question"),
    ("Does the rebate count towards it?", "follow_up.pronoun-object"),
])
def test_questions_with_nothing_to_act_on_are_follow_ups_about_the_request(message, rule):
    d = PACK.classify(message, GRANT)
    assert d.kind == "follow_up" and (rule is None or d.rule == rule)
    assert d.anchor == GRANT[0] and d.parts[-2].name == "message" and d.parts[-1].name == "reply"


@pytest.mark.parametrize("message", ["Why did we wait for the council's planning letter?", "How do I renew a lease?",
                                     "Does the rebate count towards the total price of the shopfront work?"])
def test_the_same_questions_saying_what_they_act_on_are_searched_as_typed(message):
    d = PACK.classify(message, GRANT)
    assert d.kind == "substantive" and d.query == message


# a task conversation: the assistant asked what to do next
MAILING = ["What should go in this month's mailing?",
           {"role": "assistant", "content": "The open studio dates and the winter class list. Shall I draft it?"}]


@pytest.mark.parametrize("message, rule", [
    ("Could we hold the pottery sale upstairs like last time?", "follow_up.as-before"),
    ("Order the same clay bags as before.", "follow_up.as-before"),
    ("We can leave the workshop prices for the next one.", "follow_up.next-one"),
    ("Let's describe the new glaze range in the next one.", "follow_up.next-one"),
])
def test_a_request_pointing_at_an_earlier_occasion_or_the_next_of_a_series_is_a_follow_up(message, rule):
    d = PACK.classify(message, MAILING)
    assert (d.kind, d.rule) == ("follow_up", rule)
    assert "message" in names(d) and len(d.parts) > 1  # searched with the conversation, not as typed


@pytest.mark.parametrize("message", [
    # more topic than a back-reference carries, or a name of its own: the message says what it is about
    "Could we hold the pottery sale with the Leeds craft guild in the church hall like last time?",
    "Let's describe the new glaze range and the Harlow studio opening times in the next one.",
    "Put the Harlow invoice in the next one.",
    "We have never sold mugs online before.",
    "When does the next one leave for York?",
])
def test_the_same_endings_with_a_subject_of_their_own_are_searched_as_typed(message):
    d = PACK.classify(message, MAILING)
    assert d.rule not in ("follow_up.as-before", "follow_up.next-one")
