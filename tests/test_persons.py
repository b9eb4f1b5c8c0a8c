"""A referent is of the kind its words point at when the text says which kind a name is: 'he' and 'the landlord'
never take a company, a work or a place; nothing takes a unit, an adjective typed as a name or an interjection; a
position picks only from a listed offer; a passage's referent opens it or is named more than once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from cleo_rules import load_pack
from cleo_rules.history import read_history
from cleo_rules.persons import PERSON, PLACE, THING, WINDOW, name_kind
from cleo_rules.text import normalize

PACK = load_pack()
FINDER = PACK.matcher.referents
GIVEN = PACK.lexicon.get("given_names", frozenset())
PEOPLE = PACK.lexicon["people"]


def find(message, history):
    return FINDER.find(normalize(message), message, read_history(history))


def reply(text):
    return {"role": "assistant", "content": text}


@pytest.mark.parametrize("message, history", [
    # a pronoun for a person never takes an organisation, a work or a place
    ("Has she replied yet?", [reply("The Harbour Hotel holds the room until Friday.")]),
    ("Has he replied?", [reply("The lease is with Pennine Lettings Ltd until June.")]),
    ("Where does she live now?", [reply("The parcel went to 14 Orchard Close on Tuesday.")]),
    # a unit or an adjective typed with a capital is no thing a pronoun points at
    ("Will it be very windy?", [reply("It will be about 60 degrees Fahrenheit.")]),
    ("Is it open late?", [reply("Would you like Caribbean or Peruvian?")]),
    # an interjection that opens a user's turn names nothing
    ("Is it covered by the warranty?", ["Heck, the boiler is leaking again.",
                                        reply("i can book a plumber for tomorrow morning.")]),
])
def test_a_referent_of_the_wrong_kind_is_not_found(message, history):
    assert find(message, history) is None


def test_a_person_word_takes_a_person_not_the_firm_beside_it():
    technician = find("When does the technician arrive?",
                      [reply("Dalton Heating is sending Dave Collins, who starts at eight.")])
    assert technician is not None and technician.text == "Dave Collins"


def test_a_person_pronoun_takes_a_name_a_person_verb_marks_and_no_company():
    said = find("Did she send the figures?", [reply("Okafor said on Monday that she wants the spring figures first.")])
    assert said is not None and said.text == "Okafor"
    assert find("Did she call back?", [reply("Okafor Foods sent the spring figures on Monday.")]) is None


def test_a_passage_names_its_referent_at_its_opening_or_more_than_once():
    filler = " ".join(["the soil holds water through the dry months and drains in the wet ones"] * 6)
    once = reply(f"Raised beds help. {filler}. Brightwater Growers sell kits. {filler}.")
    assert find("How do I build it?", [once]) is None
    twice = reply(f"Raised beds help. {filler}. Brightwater Growers sell kits. {filler}. Brightwater Growers deliver.")
    assert find("How do I build it?", [twice]).text == "Brightwater Growers"


def test_a_position_picks_from_a_listed_offer_only():
    passage = reply("Kestrel Mills made cloth until 1920. Harwood Dyeworks took over the site in 1931. Marsden "
                    "Looms bought the machines later.")
    assert find("Tell me about the second one.", [passage]) is None
    listed = reply("Three firms quote for the job:\n- Kestrel Mills at 900\n- Harwood Dyeworks at 750\n"
                   "- Marsden Looms at 820")
    second = find("Tell me about the second one.", [listed])
    assert second is not None and second.text.startswith("Harwood Dyeworks")


def test_them_alone_is_not_every_option():
    offer = reply("You could ask Brightwell, Marsh Lane or Tillotson for a quote.")
    assert find("Which of them is cheaper?", [offer]).rule == "referent.all"
    sent = find("Send them the signed contract.", [offer])
    assert sent is None or sent.rule != "referent.all"


@pytest.mark.parametrize("text, name, kind", [
    ("Carole King wrote it in 1971.", "Carole King", PERSON),
    ("We met Mr Hale on site.", "Hale", PERSON),
    ("The inspector, Dunmore, called.", "Dunmore", PERSON),
    ("Okafor said she would call.", "Okafor", PERSON),
    ("Pennine Supplies Ltd sent the invoice.", "Pennine Supplies Ltd", THING),
    ("The van is at 12 Mill Road today.", "Mill Road", PLACE),
    ("There is a depot in Harrogate.", "Harrogate", PLACE),
    ("Brightwater opens at nine.", "Brightwater", ""),
])
def test_a_name_kind_is_read_from_the_name_and_the_words_beside_it(text, name, kind):
    start = text.index(name)
    assert name_kind(text, start, start + len(name), GIVEN, PEOPLE) == kind


@given(st.text(alphabet="abc .,!?\nHe said", max_size=400), st.text(alphabet="abc .,!?\nhis her", max_size=400))
@settings(max_examples=60, deadline=None)
def test_a_name_kind_reads_only_a_bounded_window_beside_the_name(far_before, far_after):
    core = "We asked Brightwater about it. Brightwater quoted nine hundred for the job."
    start = core.index("Brightwater quoted")
    expected = name_kind(core, start, start + len("Brightwater"), GIVEN, PEOPLE)
    pad = " " * WINDOW
    text = far_before + pad + core + pad + far_after
    at = len(far_before) + len(pad) + start
    assert name_kind(text, at, at + len("Brightwater"), GIVEN, PEOPLE) == expected
