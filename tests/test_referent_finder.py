"""What a follow-up points at: each selector, names as typed, and what is never a referent."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from cleo_rules import load_pack
from cleo_rules.history import read_history
from cleo_rules.proper_names import names, number_word
from cleo_rules.text import normalize

PACK = load_pack()
FINDER = PACK.matcher.referents
LEX = PACK.lexicon


def find(message, history):
    return FINDER.find(normalize(message), message, read_history(history))


def reply(text):
    return {"role": "assistant", "content": text}


KILNS = ["Which kiln should we buy?",
         reply("The Potclays 80 litre front-loader is 3,150 and the Northern Kilns 120 litre top-loader is 4,400.")]


@pytest.mark.parametrize("message, history, referent, rule", [
    ("The second one, please.", KILNS, "Northern Kilns 120 litre top-loader is 4,400", "referent.position"),
    ("Let's take the first one.", KILNS, "Potclays 80 litre front-loader is 3,150", "referent.position"),
    ("Option B sounds right.", ["Which courier?", reply("Options:\n- DPD at 9.80\n- Evri at 5.95")], "Evri at 5.95",
     "referent.position"),
    ("What does the cheaper one include?", KILNS, "Potclays 80 litre front-loader is 3,150", "referent.least"),
    ("How heavy is the bigger one?", KILNS, "Northern Kilns 120 litre top-loader is 4,400", "referent.most"),
    ("And the other one?", KILNS + ["Tell me about the Potclays kiln.", reply("Potclays runs on a 32 amp circuit.")],
     "Northern Kilns 120 litre top-loader is 4,400", "referent.other"),
    ("Did he sign the lease?", ["Has the landlord replied?", reply("Martin Hale wrote back on Tuesday.")],
     "Martin Hale", "referent.person"),
    ("What are their opening hours?", ["Any bakers nearby?", reply("Bettys is on Parliament Street.")],
     "Bettys", "referent.thing"),
    ("What is its address?", ["cheap food in the north", reply("golden wok is a cheap chinese place in the north.")],
     "golden wok", "referent.thing"),
])
def test_each_selector_finds_its_referent(message, history, referent, rule):
    found = find(message, history)
    assert found is not None and (found.text, found.rule) == (referent, rule)
    assert found.said.content[found.span[0]:found.span[1]] == referent


def test_an_ordinal_past_the_offer_finds_nothing_and_no_offer_finds_nothing():
    assert find("The fourth one.", KILNS) is None or find("The fourth one.", KILNS).rule != "referent.position"
    assert find("The second one.", ["Which kiln should we buy?"]) is None


def test_a_message_that_names_its_own_subject_gets_no_description_referent():
    found = find("Tell me more about the Potclays one.", KILNS)
    assert found is None or found.rule != "referent.description"


def test_times_are_never_referents():
    found = find("What happened to it?", ["When was it?", reply("It was on Monday in March.")])
    assert found is None


def test_the_most_recent_reply_outweighs_an_older_mention():
    history = ["Compare the insurers", reply("Hadley is cheapest."), "And the van?", reply("Cresswell covers vans.")]
    assert find("Is it any good?", history).text == "Cresswell"


@pytest.mark.parametrize("text, found", [
    ("The two were the Potclays front-loader and the Northern Kilns top-loader.", ["Potclays", "Northern Kilns"]),
    ("Injuries continued to bother Safin in 2006.", ["Safin"]),
    ("In 1832 the family moved to Covington, Indiana.", ["Covington", "Indiana"]),
    ("I think I'll go with Priya.", ["Priya"]),
    ("That's annoying, it broke again.", []),
    ("did the leeds office call back?", ["leeds"]),  # a proper noun, even in lower case
])
def test_names_as_typed(text, found):
    common, dictionary = LEX["common"], LEX["common"] | LEX["nouns"]
    assert [n.text for n in names(text, common, dictionary=dictionary, proper=LEX["proper"])] == found


def test_a_long_reply_is_read_but_not_remembered():
    long = reply("Hadley " + "word " * 1000)
    assert find("Is it cheaper?", ["Compare", long]) is not None or True  # reads without error
    assert long["content"] not in FINDER._cache


@pytest.mark.parametrize("adjective", ["Turkish", "Italian", "Korean", "Modern"])
def test_an_english_word_before_its_noun_is_no_name_but_the_name_it_describes_is(adjective):
    history = ["Where can I buy rye bread?", reply(f"There is a {adjective} bakery called Ozan Bakehouse nearby.")]
    assert find("What is their number?", history).text == "Ozan Bakehouse"
    # with nothing else named, the adjective is not taken for one
    assert find("What is their number?", [reply(f"There is a {adjective} bakery near the market.")]) is None


def test_a_name_whose_next_word_is_its_verb_stays_a_name():
    # "charges" is a noun too, but also a verb: "Ledger" is the name of what charges, not a modifier
    assert find("Do they do payroll?", [reply("For bookkeeping, Ledger charges 95 a month.")]).text == "Ledger"
    assert find("What did it cost?", [reply("The Psalms was released in March.")]).text == "Psalms"


@pytest.mark.parametrize("opening, name", [
    ("Marlowe boatyard is on the river", "Marlowe boatyard"),
    ("Ozan bakehouse serves Turkish bread", "Ozan bakehouse"),
    ("Tenby yard cafe is open late", "Tenby yard cafe"),
])
def test_a_name_typed_on_in_lower_case_is_read_whole_as_the_reply_opens_with_it(opening, name):
    assert find("Are they open on Sundays?", ["Where should we go?", reply(opening + ".")]).text == name


def test_an_opening_subject_with_a_clause_of_its_own_does_not_stretch_the_name():
    # the words after the name hold a function word: a clause ("Hendricks challenged what he thought was ...")
    history = [reply("Hendricks challenged what he thought was radical legislation.")]
    assert find("Why did it matter?", history).text == "Hendricks"
    assert find("Are they open?", [reply("Cresswell in York has the parts in stock.")]).text == "Cresswell"


_UNITS = ["one", "two", "three", "seven", "eleven", "fifteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "ninety"]
_ORDINALS = ["first", "third", "twelfth", "nineteenth", "twentieth", "hundredth"]
spelled_numbers = st.one_of(
    st.sampled_from(_UNITS + _TENS + _ORDINALS + ["hundred", "thousand", "million", "dozen"]),
    st.builds(lambda t, u: f"{t}-{u}", st.sampled_from(_TENS), st.sampled_from(_UNITS[:3] + ["first", "second"])))


@given(spelled_numbers, st.sampled_from([str.capitalize, str.upper, str.title]))
def test_a_number_spelled_out_is_never_a_name_nor_a_referent(number, case):
    word = case(number)
    assert number_word(number)
    for text in (f"{word} would mean a second trip.", f"We counted {word} Of Them."):
        assert all(not number_word(n.text.lower()) for n in names(text, LEX["common"], dictionary=LEX["common"]))
    assert find("Is it enough?", [reply(f"{word} would mean hiring a bigger van.")]) is None
    # the name beside it still is one
    assert find("Is it enough?", [reply(f"{word} would mean hiring Hadley's bigger van.")]).text == "Hadley"


@pytest.mark.parametrize("word", ["tenby", "someone", "often", "second-hand", "forty-something", "ones", "Elbow"])
def test_words_that_only_contain_or_resemble_a_number_are_no_number_words(word):
    assert not number_word(word.lower())


@pytest.mark.parametrize("verb", ["says", "shows", "notes"])
def test_an_opening_subject_that_runs_past_a_second_determiner_names_nothing(verb):
    # "says" is no clause verb of the pack: the phrase before "was" holds two noun phrases, not one name
    assert find("When was it thinned?", [reply(f"the glazebook {verb} the slip was thinned in may.")]) is None
    # one noun phrase before the verb is still read as the name it opens with
    assert find("When was it thinned?", [reply("glazewell slip was thinned in may.")]).text == "glazewell slip"


# -- a referent is a thing, never a bare value ---------------------------------------------------------

FLIGHTS = ["Show me flights to Lisbon on Monday",
           reply("TAP at 9:10 for 140 EUR and easyJet at 13:25 for 95 EUR.")]


@given(st.lists(st.sampled_from(["9:10", "140", "EUR", "GBP", "£38", "95", "kg", "litres", "Friday", "12 March",
                                 "7 am", "17th", "30 min", "-", "(", ")", ",", "USD"]), min_size=1, max_size=6))
def test_bare_value_text_is_never_a_referent(pieces):
    from cleo_rules.values import bare_value

    text = " ".join(pieces)
    assert bare_value(text)
    said = read_history([reply(f"Done: {text}.")])[0]
    assert all(not bare_value(m.text) for m in FINDER.mentions(said))
    found = find("Is it confirmed?", [reply(f"{text}.")])
    assert found is None or not bare_value(found.text)


def test_a_currency_code_is_not_what_it_points_at():
    for message in ("Do it again but cheaper", "Cheaper one isn't it"):
        d = PACK.classify(message, FLIGHTS)
        assert all(p.text != "EUR" for p in d.parts), d.parts
        assert "Lisbon" in d.query


def test_a_choice_by_price_is_the_option_with_it_as_the_reply_says_it():
    d = PACK.classify("Go with the cheaper one", FLIGHTS)
    assert d.referent == "easyJet at 13:25 for 95 EUR"
    assert "TAP" not in d.query and "Lisbon" in d.query
