"""Whether a name names a person, read from the name and the words around it.

"He", "she", "him" and "her" point at a person. The referent finder
(:mod:`cleo_rules.referent_finder`) asks :func:`name_kind` of every name a turn
holds, and a person's pronoun ("he", "her") or word ("the landlord") never
takes a name its text marks as a place's or a thing's; an adjective typed
with a capital (``QUALITY``: "Indian") is no referent of anything. A name of
unknown kind may still be taken by either (most names carry no mark). Plain
English says which kind a name is:

* **a place** (``PLACE``): a street word ends it ("Clifton Way"), a house
  number stands before it ("12 Mill Road"), or "in" does ("in Harrogate");
* **not a person** (``THING``): a word of the name marks an organisation, a
  place, a work or an event (:data:`THING_WORDS`: "Ltd", "Services",
  "Lettings", "College", "Hall", "Street", "Records", "Festival"), or the name
  is one letter ("D", "F");
* **a person** (``PERSON``): its first word is a given name (the pack's lexicon
  set ``given_names``: "Carole King"), or its last of two or three (a family
  name written first: "Okafor Daniel"), or a title or a person word stands right
  before it ("Mr Hale", "Dr. Okafor", "the inspector, Mark Dunn", "his
  landlord Baxter", "written by Oakes") or right after it ("Hale, the landlord"), or a person verb
  follows it ("Hale wrote back", "Grace has asked"), or a pronoun that points
  back at a sentence's subject ("his", "her", "himself") comes later in the
  sentence a name opens, not as a possessor ("Bennett made his debut", not
  "Alaska's voting age played a role in his decision");
* **unknown** (``""``), otherwise.

Each test reads a bounded window beside the name (:data:`WINDOW` characters,
or the rest of its sentence up to that many), so a text is read in time linear
in its length.
"""

from __future__ import annotations

import re

__all__ = ["ADJECTIVAL", "PERSON", "PLACE", "QUALITY", "THING", "THING_WORDS", "TITLES", "NAMED_UNITS", "WINDOW", "exclaimed",
           "name_kind"]

PERSON = "person"
THING = "thing"
PLACE = "place"
QUALITY = "quality"  # an adjective typed as a name ("Indian", "Caribbean"): the referent finder sets it
#: Units typed with a capital ("Fahrenheit"): values, not things.
NAMED_UNITS = frozenset({"fahrenheit", "celsius", "centigrade", "kelvin"})
#: How a people's or a quality's adjective ends ("Indian", "Caribbean", "Japanese", "Scottish", "Islamic").
ADJECTIVAL = ("an", "ese", "ish", "ic", "ical")
#: Words that end a street's name: a name holding one is an address.
STREET_WORDS = frozenset({"street", "st", "road", "rd", "lane", "avenue", "ave", "way", "drive", "close", "crescent",
                          "terrace", "row", "boulevard", "blvd", "square", "highway", "parkway"})
#: How far beside a name its context is read, in characters.
WINDOW = 160

#: Words that make a name an organisation's, a place's, a work's or an event's: a person's name holds none.
THING_WORDS = frozenset("""
ltd limited inc plc llc llp co corp corporation company companies group holdings partners partnership associates
services service supplies supply solutions systems lettings estates properties homes builders building buildings
construction contractors electrical electrics plumbing heating roofing joinery glazing scaffolding engineering
motors garage autos cars cabs taxis bikes cycles tyres foods food bakery bakehouse butchers kitchen kitchens cafe
coffee restaurant bistro brasserie grill bar pub inn tavern diner pizzeria hotel hotels hostel lodge apartments
studio studios gallery salon spa clinic surgery pharmacy dental hospital practice centre center store stores shop
shops market markets mart supermarket wholesale direct online digital media marketing design designs print
printing press records productions pictures films entertainment network networks radio tv television channel
insurance bank banking finance capital trust fund foundation association society council club union league
team fc united rangers athletic athletics academy college university school institute museum theatre theater
cinema church cathedral chapel abbey temple mosque castle palace tower towers house hall halls court manor
park gardens garden square street st road rd lane avenue ave way drive close crescent place row terrace
station airport port harbour harbor bridge river lake sea ocean bay beach island islands valley mountain
mountains hill hills city town village county state province republic kingdom empire nation nations
department ministry office agency bureau commission committee board party army navy force forces
festival awards award prize cup championship championships tournament games olympics series show live
magazine journal times news gazette review herald post tribune chronicle album song single book novel film
movie museum zoo farm farms estate industries industrial works mills mill laboratories labs technologies
software tech electronics airlines airways railway railways rail lines express logistics couriers freight
""".split())
#: Titles that stand before a person's name.
TITLES = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "sir", "dame", "lady", "lord", "prof", "professor",
                    "rev", "reverend", "uncle", "aunt", "auntie", "cllr"})
#: Verbs whose subject is a person, right after the name (an auxiliary may stand between).
_PERSON_VERB = re.compile(
    r"(?:['\u2019]s|[ \t]+(?:has|had|is|was|will|would|has just|had just|just|also))?[ \t]+"
    r"(?:said|says|wrote back|writes back|got back|asked|asks|told|tells|replied|replies|emailed|rang|phoned|texted|messaged|"
    r"agreed|agrees|thinks|thought|wants|wanted|feels|felt|prefers|preferred|married|died|retired|resigned|"
    r"promised|complained|mentioned|explained|suggested|lives|lived|grew up|studied|was born)\b")
#: A pronoun that points back at its own sentence's subject ("Bennett made his debut"); "he" or "she" would be
#: the subject itself ("At Cibona he scored"), so they tell nothing about an earlier name.
#: A creative verb's agent: "written by", "painted by" (the name after it is the one who did it).
_AUTHOR = re.compile(r"\b(?:written|composed|directed|painted|sung|narrated|illustrated|authored|drawn|"
                     r"photographed|sculpted|choreographed)[ \t]+by[ \t]+$", re.I)
#: Before a place's name: "in", or a house number ("12 Mill Road", "451 ...").
_LOCATED = re.compile(r"(?:\bin|\d+[A-Za-z]?,?)[ \t]+$")
_PRONOUN = re.compile(r"\b(?:his|her|him|himself|herself)\b", re.I)
_SENTENCE_END = re.compile(r"[.!?;\n]")
_WORD_BEFORE = re.compile(r"([A-Za-z]+)\.?,?[ \t]+$")
_ROLE_AFTER = re.compile(r",?[ \t]+(?:the|our|your|my|their|his|her|a|an)[ \t]+([a-z]+)\b")


def name_kind(text: str, start: int, end: int, given=frozenset(), people=frozenset()) -> str:
    """:data:`PERSON`, :data:`THING` or ``""`` (unknown) for the name ``text[start:end]``.

    ``given`` are given names and ``people`` nouns that name a person
    ("landlord", "inspector"), both lower case.
    """
    name = text[start:end]
    words = [w.lower().strip(".,'\u2019").removesuffix("'s").removesuffix("\u2019s") for w in name.split()]
    words = [w for w in words if w]
    if not words or (len(words) == 1 and len(words[0]) == 1):
        return THING
    before = text[max(0, start - 40):start]
    if (len(words) > 1 and words[-1] in STREET_WORDS) or _LOCATED.search(before):
        return PLACE  # "Clifton Way", "12 Mill Road", "in Harrogate"
    if any(w in THING_WORDS for w in words):
        return THING
    if words[0] in given or words[0] in TITLES or (1 < len(words) <= 3 and words[-1] in given):
        return PERSON  # "Carole King", "Sir Hale", "Okafor Daniel" (family name first)
    m = _WORD_BEFORE.search(before)
    if m is not None:
        word = m.group(1).lower()
        if word in TITLES or word in people:
            return PERSON  # "Dr Okafor", "the inspector, Mark Dunn"
    if _AUTHOR.search(before):
        return PERSON  # "written by Tom Oakes"
    after = text[end:end + WINDOW]
    m = _ROLE_AFTER.match(after)
    if m is not None and m.group(1) in people:
        return PERSON  # "Hale, the landlord"
    if _PERSON_VERB.match(after):
        return PERSON  # "Hale wrote back"
    stop = _SENTENCE_END.search(after)
    opens = not before.strip() or before.rstrip()[-1] in ".!?;:\n\"("  # the name opens its sentence: its subject
    if opens and not after.startswith(("'s", "\u2019s")) and _PRONOUN.search(after[: stop.start() if stop else len(after)]):
        return PERSON  # "Bennett made his debut"
    return ""


def exclaimed(text: str, name) -> bool:
    """Whether a one-word name opens a sentence and ends it or a phrase at once ("Heck, ...", "Bummer!"): an
    interjection typed with a capital, not a name."""
    return name.initial and " " not in name.text and (name.end == len(text) or text[name.end] in ",!?.")
