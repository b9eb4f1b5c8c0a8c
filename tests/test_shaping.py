"""A follow-up's query from its parts: templates, provenance, and the switch that turns referents off."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from cleo_rules import load_pack
from cleo_rules.decision import Part
from cleo_rules.shaping import fill_template

PACK = load_pack()
QUOTES = ["Compare the two van insurance quotes",
          {"role": "assistant", "content": "Hadley quotes 2,140 a year with a 250 excess; Cresswell quotes 1,865."}]


def test_render_leaves_out_lines_whose_parts_are_empty():
    t = "{anchor}\n{referent}\n{message}"
    assert fill_template(t, anchor="A", referent="", message="M") == "A\nM"
    assert fill_template(t, anchor="", referent="R", message="M") == "R\nM"
    assert fill_template("{anchor} -- {message}", anchor="A", message="M") == "A -- M"
    assert fill_template(t, anchor="{x}", referent="", message="{y}") == "{x}\n{y}"  # values are not templates


def test_a_resolved_follow_up_keeps_the_subject_and_adds_its_referent():
    d = PACK.classify("Yes, go with the second one.", QUOTES)
    assert d.kind == "follow_up" and d.query == f"{QUOTES[0]}\nCresswell quotes 1,865\nYes, go with the second one."
    assert d.referent == "Cresswell quotes 1,865" and d.anchor == QUOTES[0]
    anchor, ref, msg = d.parts  # no reply: the option chosen carries the choice, the other would pull towards it
    assert (anchor.name, anchor.source, anchor.turn) == ("anchor", "user", 1)
    assert (ref.name, ref.source, ref.turn, ref.index, ref.rule) == ("referent", "assistant", 1, 1, "referent.position")
    assert QUOTES[1]["content"][ref.span[0]:ref.span[1]] == "Cresswell quotes 1,865"
    assert (msg.name, msg.source, msg.text) == ("message", "message", "Yes, go with the second one.")


def test_an_unresolved_follow_up_in_an_information_seeking_conversation_carries_the_reply():
    d = PACK.classify("Tell me more.", QUOTES)
    anchor, msg, reply = d.parts
    assert (anchor.name, anchor.source, anchor.turn, anchor.text) == ("anchor", "user", 1, QUOTES[0])
    assert (reply.name, reply.source, reply.rule, reply.text) == ("reply", "assistant", None, QUOTES[1]["content"])
    assert d.query == f"{QUOTES[0]}\nTell me more.\n{QUOTES[1]['content']}"


TASK = ["I need a plumber in Leeds for tomorrow.",
        {"role": "assistant", "content": "Do you want a big firm or a local one?"},
        "A local one, please.",
        {"role": "assistant", "content": "Pipeline Plumbing and Leeds Drains can both come tomorrow."}]


def test_in_a_task_conversation_the_referent_qualifies_the_subject_and_no_reply_is_added():
    from cleo_rules.shaping import information_seeking
    from cleo_rules.history import read_history

    assert not information_seeking(read_history(TASK), PACK.settings)  # the assistant asked
    d = PACK.classify("Yes, the second one.", TASK)
    # the anchor ("A local one, please.") names nothing: only its request words, which are left out
    assert d.kind == "follow_up" and d.query == "Leeds Drains\nYes, the second one."
    assert [p.name for p in d.parts] == ["referent", "message"]


def test_an_unresolved_follow_up_in_a_task_conversation_carries_the_replys_opening_words():
    d = PACK.classify("Tell me more.", TASK)
    anchor, ref, _ = d.parts
    assert (anchor.name, anchor.source) == ("anchor", "user") and anchor.text in TASK
    assert ref.rule is None and ref.source == "assistant" and TASK[3]["content"].startswith(ref.text)
    assert len(ref.text.split()) == PACK.settings.reply_words or ref.text == TASK[3]["content"]
    assert d.query == f"{anchor.text}\n{ref.text}\nTell me more."


def test_the_reply_part_is_capped_at_reply_max_words(pack_copy):
    pack_copy.replace("pack.yaml", "reply_max_words: 100", "reply_max_words: 4")
    capped = load_pack(pack_copy.dir)
    d = capped.classify("Tell me more.", QUOTES)
    assert [p.text for p in d.parts if p.name == "reply"] == ["Hadley quotes 2,140 a"]
    pack_copy.replace("pack.yaml", "reply_max_words: 4", "reply_max_words: 0")
    assert "reply" not in [p.name for p in load_pack(pack_copy.dir).classify("Tell me more.", QUOTES).parts]


PASSAGE = ("Heat pumps move heat rather than make it: a ground source heat pump draws warmth from pipes buried in "
           "the garden, where the soil stays near ten degrees all year, and a compressor raises it to the temperature "
           "the radiators need. For every unit of electricity it uses it delivers three to four units of heat, which "
           "is why running costs can fall below those of a gas boiler once the system is sized for the house.")


def test_a_passage_restates_its_subject_so_the_anchor_is_left_out(pack_copy):
    history = ["How do heat pumps work?", {"role": "assistant", "content": PASSAGE}]
    assert len(PASSAGE.split()) >= PACK.settings.long_reply_words > 0
    d = PACK.classify("What makes it so efficient?", history)
    assert d.kind == "follow_up" and [p.name for p in d.parts if p.name in ("anchor", "topic")] == []
    assert [p.name for p in d.parts][-2:] == ["message", "reply"]
    short = ["How do heat pumps work?", {"role": "assistant", "content": " ".join(PASSAGE.split()[:30])}]
    assert "anchor" in [p.name for p in PACK.classify("What makes it so efficient?", short).parts]
    pack_copy.replace("pack.yaml", "long_reply_words: 40", "long_reply_words: 0")
    kept = load_pack(pack_copy.dir).classify("What makes it so efficient?", history)
    assert [p.name for p in kept.parts][0] == "anchor"


def test_the_passage_measured_is_the_reply_the_query_carries():
    # an empty last assistant turn is passed over by both: the reply part and the passage are the turn before it
    history = ["How do heat pumps work?", {"role": "assistant", "content": PASSAGE}, {"role": "assistant", "content": " "}]
    d = PACK.classify("What makes it so efficient?", history)
    assert [p.name for p in d.parts] == ["message", "reply"] and d.parts[1].index == 1


def test_a_passage_does_not_drop_the_subject_of_a_task_conversation():
    history = ["I need a heat pump fitter for next week.", {"role": "assistant", "content": PASSAGE + " Shall I book one?"}]
    d = PACK.classify("What makes it so efficient?", history)
    assert d.kind == "follow_up" and "reply" not in [p.name for p in d.parts]
    assert d.anchor == history[0] and d.parts[0].name == "anchor"


LOVELACE = ["What was the Analytical Engine?",
            {"role": "assistant", "content": "A mechanical computer designed by Charles Babbage in 1837."},
            "Was it built?",
            {"role": "assistant", "content": "It was never finished, and only parts were built by Charles Babbage."}]


def test_the_topic_a_conversation_keeps_naming_stands_for_a_stale_anchor():
    d = PACK.classify("Tell me more.", LOVELACE)
    assert d.kind == "follow_up" and [p.name for p in d.parts] == ["topic", "message", "reply"]
    topic, _, reply = d.parts
    assert (topic.text, topic.source) == ("Charles Babbage", "assistant")  # named in two turns, not in the anchor
    assert LOVELACE[topic.index]["content"][topic.span[0]:topic.span[1]] == "Charles Babbage"
    assert reply.text == LOVELACE[3]["content"]


def test_a_name_the_anchor_or_the_message_says_is_no_topic():
    d = PACK.classify("Tell me more about Charles Babbage.", LOVELACE)
    assert "topic" not in [p.name for p in d.parts]


NOTES = ["What did Ada Lovelace write about the engine?",
         {"role": "assistant", "content": "Ada Lovelace wrote notes on the engine Charles Babbage designed, in 1843."},
         "Were they published?",
         {"role": "assistant", "content": "Yes, the notes by Ada Lovelace were printed, and Charles Babbage praised them."}]


def test_an_anchor_naming_what_the_conversation_keeps_naming_is_not_stale():
    # Ada Lovelace is named in three turns, the anchor among them; Charles Babbage in two, not in the anchor
    d = PACK.classify("Tell me more.", NOTES)
    assert d.kind == "follow_up" and [p.name for p in d.parts] == ["anchor", "message", "reply"]
    assert d.anchor == NOTES[0] and "Charles Babbage\n" not in (d.query or "")
    # the same conversation with the anchor moved on to another subject: the name it keeps saying stands in
    moved = [*NOTES, "Which London journals printed papers on geology in 1843?",
             {"role": "assistant", "content": "Mostly papers on geology, and Ada Lovelace's notes."}]
    d = PACK.classify("Tell me more.", moved)
    assert [p.name for p in d.parts] == ["topic", "message", "reply"] and d.parts[0].text == "Ada Lovelace"


SURVEY = ["The surveyors in Harrogate want to book the meeting room again.",
          {"role": "assistant", "content": "Good news. Do they want the same layout as before?"},
          "Yes, the same layout.",
          {"role": "assistant", "content": "Then it is the long table for twelve with the projector."}]


def test_a_referent_found_in_the_anchor_itself_keeps_the_anchor_in_a_task_conversation():
    d = PACK.classify("What did we charge them last time?", SURVEY)
    assert d.kind == "follow_up" and [p.name for p in d.parts] == ["anchor", "referent", "message"]
    anchor, ref, _ = d.parts
    assert anchor.text == SURVEY[0] and (ref.source, ref.index, ref.text) == ("user", 0, "Harrogate")
    # one the assistant offered qualifies what the request names (test above)
    d = PACK.classify("Yes, the second one.", TASK)
    assert [p.name for p in d.parts] == ["referent", "message"]


@given(st.sampled_from(["Yes, the second one.", "Tell me more.", "What is its excess?", "Go on."]),
       st.sampled_from([QUOTES, TASK, LOVELACE]))
@settings(max_examples=20, deadline=None)
def test_the_query_is_the_template_the_decision_used_over_its_parts(message, history):
    from cleo_rules.shaping import template_for

    d = PACK.classify(message, history)
    if d.kind == "follow_up" and len(d.parts) > 1:
        assert d.query == fill_template(template_for(PACK.settings, d.parts), **{p.name: p.text for p in d.parts})
        assert [p.name for p in d.parts] == sorted((p.name for p in d.parts),
                                                   key=["anchor", "topic", "referent", "message", "reply"].index)


def test_a_sentence_initial_word_is_no_name_and_can_i_is_none_either():
    from cleo_rules.history import read_history

    d = PACK.classify("What is its excess?", ["Which van insurer should we pick?",
                                              {"role": "assistant", "content": "Noted, Cresswell it is."}])
    assert d.referent == "Cresswell"
    names = [n.text for n in PACK.matcher.referents.names("Can I get the address of the Missing Sock?")]
    assert "Can I" not in names and "Can" not in names
    assert read_history(["x"])  # the history reader is untouched by the name reader


def test_with_plain_strings_the_query_is_the_anchor_and_the_message():
    d = PACK.classify("Yes, go with the second one.", [QUOTES[0]])
    assert d.query == f"{QUOTES[0]}\nYes, go with the second one." and [p.name for p in d.parts] == ["anchor", "message"]


def test_corrections_are_never_combined_even_with_a_reply_to_point_at():
    d = PACK.classify("We tried that one already.", QUOTES)
    assert d.kind == "correction" and d.query == "We tried that one already." and d.referent is None


def test_skip_is_unchanged_and_has_no_parts():
    d = PACK.classify("Thanks!", QUOTES)
    assert d.kind == "skip" and d.query is None and d.parts == ()


def test_referents_can_be_turned_off_in_the_pack(pack_copy):
    pack_copy.replace("pack.yaml", "referents: true", "referents: false")
    off = load_pack(pack_copy.dir)
    d = off.classify("Yes, go with the second one.", QUOTES)
    assert d.query == f"{QUOTES[0]}\nYes, go with the second one." and d.referent is None
    assert [p.name for p in d.parts] == ["anchor", "message"]  # no topic, no reply either


def test_parts_are_in_the_decisions_json():
    parts = PACK.classify("Yes, go with the second one.", QUOTES).to_dict()["parts"][1:]
    assert parts[0] == {"name": "referent", "text": "Cresswell quotes 1,865", "source": "assistant", "turn": 1,
                        "index": 1, "span": [parts[0]["span"][0], parts[0]["span"][0] + 22],
                        "rule": "referent.position"}


# -- as_follow_up: what combining would search for any message ------------------------------------------


def test_a_correction_shaped_as_a_follow_up_is_combined_as_one_would_be():
    from cleo_rules.shaping import NOTHING_TO_COMBINE, as_follow_up

    message = "We tried that one already."
    assert PACK.classify(message, [QUOTES[0]]).query == message  # never combined as itself
    query, parts, note = as_follow_up(PACK, message, [QUOTES[0]])
    assert query == f"{QUOTES[0]}\n{message}" and note is None
    assert [(p.name, p.text, p.source) for p in parts] == [("anchor", QUOTES[0], "user"),
                                                           ("message", message, "message")]
    query, parts, note = as_follow_up(PACK, message, QUOTES)  # the reply's referent, as for a follow-up
    assert [p.name for p in parts] == [p.name for p in PACK.classify("Tell me more.", QUOTES).parts]
    assert as_follow_up(PACK, message, ["Thanks!"]) == (message, (Part("message", message, "message"),),
                                                        NOTHING_TO_COMBINE)


USER_TURNS = ["Compare the two van insurance quotes", "Which engineer fixed the office boiler?", "Thanks!",
              "Yes.", "We tried that one already.", "Book the van for Friday"]
REPLIES = ["Hadley quotes 2,140 a year with a 250 excess; Cresswell quotes 1,865.",
           "Either the Leeds office or the York one; the first is nearer.", "You're welcome.", ""]
FOLLOW_UPS = ["Yes, go with the second one.", "Tell me more.", "What about the other one?", "Sounds good.",
              "Try that one.", "The first one, please."]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FOLLOW_UPS), st.lists(st.one_of(
    st.sampled_from(USER_TURNS), st.sampled_from(REPLIES).map(lambda r: {"role": "assistant", "content": r})),
    max_size=6))
def test_a_follow_up_shaped_again_is_what_classify_shaped(message, history):
    from cleo_rules.shaping import as_follow_up

    d = PACK.classify(message, history)
    if d.kind == "follow_up":
        query, parts, note = as_follow_up(PACK, message, history)
        assert (query, parts) == (d.query, d.parts)
        assert note == d.note


# -- corrections: never combined with what they reject ------------------------------------------------

OFFER = ["Which van insurer covers tools left in the van overnight?",
         {"role": "assistant", "content": "Two do: Brightline Commercial at 2,140 a year and Zego Van at 1,865."}]


def test_a_correction_that_picks_its_replacement_from_the_offer_searches_the_subject_with_it():
    d = PACK.classify("Not that one, the cheaper one.", OFFER)
    assert d.kind == "correction"
    assert d.query == f"{OFFER[0]}\nZego Van at 1,865" and [p.name for p in d.parts] == ["anchor", "referent"]
    assert "Brightline" not in d.query


def test_a_correction_that_brings_its_own_replacement_searches_the_subject_with_the_message():
    d = PACK.classify("Neither of those suits, try Thursday instead.", OFFER)
    assert d.kind == "correction" and d.query == f"{OFFER[0]}\nNeither of those suits, try Thursday instead."


def test_a_correction_with_no_replacement_or_no_offer_is_searched_as_typed():
    assert PACK.classify("We tried that one already.", OFFER).query == "We tried that one already."
    d = PACK.classify("Not that one, the cheaper one.", [OFFER[0]])
    assert d.kind == "correction" and d.query == "Not that one, the cheaper one."


NAMES = st.sampled_from(["Brightline", "Zego", "Hadley", "Cresswell", "Tillotson", "Marsh Lane", "Pennine Supplies",
                         "Dalton Heating", "Northgate", "Ashworth"])
CORRECTIONS = st.sampled_from(["Not that one, the cheaper one.", "No, not that one.", "Not that one, the second one.",
                               "Neither of those suits, try Thursday instead.", "Wrong one, sorry.",
                               "Not that one, the last one.", "We tried that one already.",
                               "None of them works, try Leeds instead.", "Not that one, the bigger one."])


@given(st.lists(NAMES, min_size=2, max_size=3, unique=True), CORRECTIONS,
       st.sampled_from(["Which supplier should we use?", "Compare the quotes for the van", ""]),
       st.lists(st.integers(100, 9999), min_size=3, max_size=3, unique=True))
@settings(max_examples=60, deadline=None)
def test_a_correction_never_carries_an_option_it_rejects(options, message, request, figures):
    """Whatever the offer, the query of a correction holds no offered option but the replacement it picked."""
    offer = ", ".join(f"{o} at {f}" for o, f in zip(options[:-1], figures)) + f" or {options[-1]} at {figures[-1]}"
    history = ([request] if request else []) + [{"role": "assistant", "content": f"You could use {offer}."}]
    d = PACK.classify(message, history)
    if d.kind != "correction":
        return
    chosen = d.referent or ""
    assert not chosen or any(chosen.startswith(o) for o in options)
    for option in options:
        if chosen.startswith(option):
            continue
        assert all(option.lower() not in p.text.lower() for p in d.parts), (d.query, d.parts)
        assert d.query is None or option.lower() not in d.query.lower()


# -- a choice that names what it picks ------------------------------------------------------------------

BOILER = ["Can you book the boiler service for next week?",
          {"role": "assistant", "content": "I can do Tuesday at 9 am, Wednesday at 2 pm or Thursday at 11 am."}]


def test_a_message_naming_one_offered_option_is_a_choice_of_it():
    for message, history, option in [("Brightline, please.", OFFER, "Brightline Commercial at 2,140 a year"),
                                     ("Thursday works for me.", BOILER, "Thursday at 11 am"),
                                     ("I will take the Wednesday slot.", BOILER, "Wednesday at 2 pm")]:
        d = PACK.classify(message, history)
        assert (d.kind, d.rule, d.referent) == ("follow_up", "vocab.choice", option), message
        assert [p.name for p in d.parts] == ["anchor", "referent", "message"]  # the subject, the option; no reply
        ref = d.parts[1]
        assert history[1]["content"][ref.span[0]:ref.span[1]] == option
        assert message[d.span[0]:d.span[1]] == d.matched and d.matched.lower() in option.lower()


def test_naming_an_option_is_no_choice_when_the_message_says_more_or_asks():
    for message in ["Brightline Commercial covers tools left overnight?", "Is Brightline cheaper than Zego?",
                    "Who owns Brightline", "Brightline Commercial insured our other van in 2019"]:
        assert PACK.classify(message, OFFER).kind == "substantive", message
    assert PACK.classify("Brightline, please.", [OFFER[0]]).kind == "substantive"  # no offer: nothing to pick


def test_explain_says_why_a_named_option_is_a_choice():
    ex = PACK.explain("Brightline, please.", OFFER)
    notes = [a.note for a in ex.attempts if a.stage == "referent" and a.rule == "vocab.choice" and a.fired]
    assert len(notes) == 1 and "names an option of the last offer" in notes[0] and "Brightline Commercial" in notes[0]
    assert ex.decision == PACK.classify("Brightline, please.", OFFER)


# -- corrections of an offered value ---------------------------------------------------------------------

TRAIN = ["Book me a train to York on Friday", {"role": "assistant", "content": "There is one at 8:10 or 8:40."}]


def test_a_correction_naming_an_offered_time_searches_the_subject_and_never_the_rejected_time():
    from cleo_rules.history import read_history
    from cleo_rules.shaping import shape_correction
    from cleo_rules.text import normalize

    message = "not that one, the 8:40"
    query, parts, _ = shape_correction(PACK.matcher, message, normalize(message), read_history(TRAIN))
    assert query == f"{TRAIN[0]}\n{message}" and "8:10" not in query


def test_a_follow_up_never_carries_an_option_the_message_turns_down():
    flights = ["Show me flights to Lisbon on Monday",
               {"role": "assistant", "content": "TAP at 9:10 for 140 EUR and easyJet at 13:25 for 95 EUR."}]
    for message, history, refused in [("Not TAP, what else?", flights, "TAP at"), ("ok, not the 8:10", TRAIN, "8:10")]:
        d = PACK.classify(message, history)
        assert d.kind == "follow_up"
        assert all(refused not in p.text for p in d.parts if p.name != "message"), d.parts


# -- the business register's plain cases ----------------------------------------------------------------------

FLIGHTS = ["Show me flights to Lisbon on Monday",
           {"role": "assistant", "content": "TAP at 9:10 for 140 EUR and easyJet at 13:25 for 95 EUR."}]
PANELS = ["Which supplier did we use for the shop's LED panels?",
          {"role": "assistant", "content": "LightCo, 14 panels at 38 pounds each, delivered in March."}]
SERVICED = ["Book the van in for its service.",
            {"role": "assistant", "content": "Booked for Wednesday at 9 am at Kwik Fit."}]


def test_a_follow_up_about_flights_searches_lisbon_and_never_a_currency_code():
    for message in ["Do it again but cheaper", "Cheaper one isn't it", "Go with the cheaper one"]:
        d = PACK.classify(message, FLIGHTS)
        assert d.kind == "follow_up" and "Lisbon" in d.query, (message, d.query)
        assert d.referent != "EUR" and "EUR\n" not in d.query.split("easyJet")[0], (message, d.query)
    d = PACK.classify("Go with the cheaper one", FLIGHTS)
    assert d.referent == "easyJet at 13:25 for 95 EUR" and "TAP" not in d.query


def test_requests_and_questions_whose_object_points_back_at_the_reply_are_follow_ups():
    for message in ["Could you forward those to Mark?", "Can we get those cheaper elsewhere?",
                    "Remind me to pay it on Friday.", "Does that include VAT?", "Email them to the accountant."]:
        d = PACK.classify(message, PANELS)
        assert d.kind == "follow_up" and "LED panels" in d.query, (message, d.query)
    # a demonstrative before its own noun points inside the message
    assert PACK.classify("Is that new accountant any good at payroll?", PANELS).kind == "substantive"


def test_a_correction_of_what_the_assistant_did_searches_the_request_and_never_the_reply():
    d = PACK.classify("Wrong day, I said Thursday.", SERVICED)
    assert d.kind == "correction"
    assert d.query == "Book the van in for its service.\nWrong day, I said Thursday."
    assert [p.name for p in d.parts] == ["anchor", "message"] and "Wednesday" not in d.query
    # with no request before it, the correction is searched as typed
    assert PACK.classify("Wrong day, I said Thursday.", SERVICED[1:]).query == "Wrong day, I said Thursday."
