"""Names in text as typed: the words a writer capitalised because they name something.

Rules match normalised, case-folded text, where "Zappa" and "zappa" are one
word; whether a word names something is only visible in the text as typed.
Two stages read it there:

* the matcher's guards (``unless_name_before``, ``unless_name``): a pronoun
  after a name in the same message may point at that name ("How did Aretha
  Franklin get her first record deal?"), so it is not a reference back;
* the referent finder (:mod:`cleo_rules.referent_finder`): the things an
  assistant's reply names are what a later "they" or "the second one" points at.

A *name* is a run of capitalised words ("Northern Kilns", "Zappa and the
Mothers of Invention" is two), joined by a few lower-case connectors
("of", "de", "van", "and the" inside a run is not joined: "and" ends it).
A capitalised word that starts a sentence names something only when it is not
a common English word (the pack's lexicon set ``common``, built from wordfreq):
"Generally" and "Injuries" do not, "Potclays" does. Function words that only
look like names ("I", "I'm") never do, nor does a run of numbers spelled out
("Twenty would mean ...", "Forty-Two"): it counts or orders. A lone capitalised word opening a sentence right before an object
("Remind me", "Forward those", "Pencil the ...") is the verb of a request. Numbers with a unit and quoted titles
are read by the referent finder, not here. A text typed in capitals
throughout ("WHEN DID THE BAND FORM?") shows no capitalisation to read: only
the lexicon's proper nouns name something there.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["NameSpan", "before_time", "names", "number_word"]

# a capitalised word: an upper-case letter then letters, digits, inner
# apostrophes, hyphens or dots ("O'Brian", "Blink-182", "T.I."), or a word in
# capitals ("BBC"); a possessive "'s" is left outside
_CAP = (r"(?:[A-Z\u00c0-\u00d6\u00d8-\u00de][\w\u00c0-\u024f]*"
        r"(?:(?:[-.]|['\u2019](?![sS]\b))[A-Za-z\u00c0-\u024f0-9][\w\u00c0-\u024f]*)*"
        r"(?:(?<=\.[A-Z])\.)?)")
_CONNECT = r"(?:of|de|del|della|di|da|du|des|van|von|der|den|la|le|y|the|on|upon|&)"
_RUN = re.compile(rf"(?<![\w'\u2019-]){_CAP}(?:[ \t]+(?:{_CONNECT}[ \t]+)*{_CAP})*")
_NEVER = frozenset({"i", "i'm", "i'd", "i'll", "i've", "im", "ok", "okay", "mr", "mrs", "ms", "dr"})
_UNITS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
          "seventeen|eighteen|nineteen")
_ORDINAL_UNITS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
                  "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth")
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
#: a number spelled out, cardinal or ordinal ("twenty", "forty-two", "thirty-first", "hundred", "hundredth")
_NUMBER_WORD = re.compile(rf"(?:{_UNITS}|{_ORDINAL_UNITS}|(?:{_TENS})(?:-(?:{_UNITS}|{_ORDINAL_UNITS}))?|"
                          rf"(?:twentie|thirtie|fortie|fiftie|sixtie|seventie|eightie|ninetie)th|"
                          rf"(?:hundred|thousand|million|billion)(?:th)?|zero|dozen)")
#: what may end a sentence (or open a quotation, a bracket) before a word that then starts one
_SENTENCE_ENDS = frozenset(".!?:;\n\"\u201c([")


@dataclass(frozen=True, slots=True)
class NameSpan:
    """A name at ``start:end`` of the text; ``initial``: it starts a sentence."""

    text: str
    start: int
    end: int
    initial: bool


def _starts_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens the text or a sentence: only white space before it, or white space
    holding a line break, or one of :data:`_SENTENCE_ENDS` then white space.

    Reads back over the white space before ``start`` only, never the rest of the text: every name of a text
    is tested, so reading the whole prefix would make a long text cost the square of its length.
    """
    j = start
    while j > 0 and text[j - 1].isspace():
        j -= 1
    return j == 0 or text[j - 1] in _SENTENCE_ENDS or "\n" in text[j:start]


_CONTRACTION = re.compile(r"(?:n['\u2019]t|['\u2019](?:s|re|ll|d|ve|m))$")


def number_word(word: str) -> bool:
    """Whether ``word`` (lower case) is a number spelled out, cardinal or ordinal: "twenty", "forty-two",
    "second", "hundredth". Such a word counts or orders; it names nothing."""
    return _NUMBER_WORD.fullmatch(word) is not None


def _bare(word: str) -> str:
    """``word`` without a contraction's or possessive's tail: "that's" -> "that"."""
    return _CONTRACTION.sub("", word)


def _inflected(word: str, dictionary) -> bool:
    """Whether ``word`` is in ``dictionary`` or an inflection of a word there ("remaining", "noted", "specifically")."""
    if word in dictionary:
        return True
    for suffix, back in (("ly", ""), ("ally", "al"), ("ily", "y"), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"),
                         ("d", ""), ("s", ""), ("es", ""), ("ies", "y"), ("er", ""), ("est", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)] + back
            if stem in dictionary:
                return True
            if suffix in ("ing", "ed") and len(stem) >= 4 and stem[-1] == stem[-2] and stem[:-1] in dictionary:
                return True
    return False


#: What follows a verb that opens a request ("Remind me", "Forward those", "Pencil the Careys in"): a word alone
#: at the start of a sentence right before one of these is read as that verb, not a name ("Elbow played" stays one).
_IMPERATIVE_OBJECT = re.compile(r"[ \t]+(?:me|us|him|them|it|that|those|these|this|the|a|an|another|our|my|your|"
                                r"their|his|its|some|all|both|each|every|any)\b")
_LOWER_WORD = re.compile(r"(?<![\w'\u2019-])[a-z][a-z]+(?![\w'\u2019-])")
_CAPS_WORD = re.compile(r"[A-Z]{2,}")


def _shouted(text: str) -> bool:
    """Whether ``text`` is typed in capitals throughout: no lower-case letter, and more than one
    acronym's worth of capitals (a reply that is just "BBC" still names the BBC)."""
    return not any(ch.islower() for ch in text) and bool(_CAPS_WORD.search(text)) and \
        sum(ch.isalpha() for ch in text) > 4


def names(text: str, common: frozenset[str] | set[str] = frozenset(), function_words=frozenset(),
          dictionary: frozenset[str] | set[str] | None = None,
          proper: frozenset[str] | set[str] = frozenset(),
          nouns: frozenset[str] | set[str] = frozenset()) -> list[NameSpan]:
    """The names in ``text`` as typed, in order (see the module docstring).

    ``common`` are common English words (lower case): a sentence-initial
    capitalised word among them is not a name, and a run that starts with one
    loses it ("The Northern Kilns quote" gives "Northern Kilns"). ``function_words``
    (lower case) are never names on their own, wherever they stand. A
    capitalised word alone at the start of a sentence is a name only when it
    is not in ``dictionary`` (default: ``common``): with the lexicon's nouns
    there, "Injuries continued..." names nothing. A word typed in lower case is
    a name when it is in ``proper`` (the lexicon's proper nouns: "leeds"). A
    common word opening a sentence is dropped from the front of a name unless
    it is among ``nouns`` ("Martin Hale" stays whole; "Then Scarva" is "Scarva").
    """
    if _shouted(text):
        lowered = text.lower()
        if not proper or len(lowered) != len(text):
            return []
        return [NameSpan(text[m.start():m.end()], m.start(), m.end(), _starts_sentence(text, m.start()))
                for m in _LOWER_WORD.finditer(lowered) if m.group() in proper]
    out: list[NameSpan] = []
    for m in _RUN.finditer(text):
        words = m.group().split()
        start = m.start()
        initial = _starts_sentence(text, start)
        # drop leading words that are not names: "The", "In", a common word
        # starting a sentence, "I"
        while words:
            w = words[0]
            low = w.lower().rstrip(".")
            low = _bare(low)
            # a common word that can be a noun ("Martin", "Golden") may be the first part of a name
            opener = initial and low in common and (len(words) == 1 or low not in nouns)
            if low in _NEVER or low in function_words or opener or (low in ("the", "a", "an") and len(words) > 1):
                start = text.index(w, start) + len(w)
                while start < len(text) and text[start].isspace():  # not text[start:]: no copy of the rest
                    start += 1
                words = words[1:]
                initial = False
                continue
            break
        # "I" ends no name ("Can I", "Yes I")
        while words and _bare(words[-1].lower()) in _NEVER:
            words = words[:-1]
        # trailing connectors belong to nothing; a particle does only in lower case ("Zego Van" keeps "Van")
        while words and (words[-1].lower() in ("of", "the", "on", "upon", "&")
                         or words[-1] in ("de", "del", "della", "di", "da", "du", "des", "van", "von", "der", "den",
                                          "la", "le", "y")):
            words = words[:-1]
        if not words or all(number_word(_bare(w.lower())) for w in words):
            continue  # "Twenty would mean ...", "Forty-Two": a count, not a name
        if len(words) == 1 and initial and _inflected(_bare(words[0].lower().rstrip(".")), dictionary or common):
            continue
        if len(words) == 1 and initial and start == m.start() and _IMPERATIVE_OBJECT.match(text, m.end()):
            continue  # "Remind me ...", "Forward those ...": a verb opening a request, not a name
        joined = " ".join(words)
        end = start + len(joined) if text.startswith(joined, start) else m.end()
        if not text.startswith(words[0], start, end):
            # inner white space was not single spaces: find the words' own end
            end = text.index(words[-1], start) + len(words[-1])
        out.append(NameSpan(text[start:end], start, end, initial))
    if proper:
        # the runs found above are in order and do not overlap: a word is inside one only if it is inside
        # the last that starts at or before it
        starts = [n.start for n in out]
        runs = out[:]
        for m in _LOWER_WORD.finditer(text):
            if m.group() not in proper:
                continue
            at = bisect.bisect_right(starts, m.start()) - 1
            if at < 0 or m.start() >= runs[at].end:
                out.append(NameSpan(m.group(), m.start(), m.end(), _starts_sentence(text, m.start())))
        out.sort(key=lambda n: n.start)
    return out


_TIME_TAIL = re.compile(r"\s+(?:on|of|upon)\s+\S+$")


def before_time(name, time_words):
    """``name`` (a :class:`~cleo_rules.proper_names.NameSpan`) cut before a connector and a time word that end it ("Lisbon
    on Monday": "Lisbon"), or None when nothing but the time is left."""
    tail = _TIME_TAIL.search(name.text)
    if tail is None:
        return None
    head = name.text[: tail.start()]
    words = re.findall(r"[\w'\u2019-]+", head.lower())
    if not words or words[-1].replace("\u2019", "'").removesuffix("'s") in time_words:
        return None
    return type(name)(head, name.start, name.start + len(head), name.initial)
