"""What a follow-up points at, found in the conversation before it.

"Yes, go with the second one." names nothing; the second option is in the
assistant's last reply. "When did they disband?" points at the band the
assistant named two turns ago. This module reads the conversation (the
user's and the assistant's turns, as :class:`~cleo_rules.history.Said`) and
finds the **referent** of a follow-up, deterministically:

1. the pack's referent rules (a ``referents`` file) are tried in file order;
   a rule's pattern finds the referring words in the normalised message
   ("the second one", "they", "the band");
2. its *selector* picks what those words point at:

   ``position``  the n-th option the most recent reply that offers options
                 lists (first, second, third, last, the former, option B);
   ``least``, ``most``  the offered option with the smallest or largest figure
                 ("the cheaper one", "the bigger one");
   ``other``     the offered option that is not under discussion;
   ``thing``     the most salient thing named lately, the assistant's last
                 reply first ("it", "they", "that album");
   ``person``    the most salient name across the conversation ("he", "her");

3. the first rule that finds something wins; its referent is recorded with
   where it came from (which turn, which span of it, which rule).

A selector **abstains** on weak evidence: ``position``, ``other``, ``all``
pick only from a reply that lists its options (list items, names joined by
"and", "or", commas), not a passage's names; "he" and "the landlord" never take
a thing's or a place's name (:mod:`cleo_rules.persons`); nothing takes an
adjective typed with a capital, a unit or a user's interjection; a passage (over
:data:`PASSAGE_WORDS` words) gives only its opening or a repeated name.

*Options* of a reply are its list items (lines starting "-", "*", "•", "1.",
"a)") when it has at least two, else the things it names in order.
*Things named* (:class:`Mention`) are names as typed (:mod:`cleo_rules.proper_names`),
quoted titles, and, in a reply that names nothing in capitals, its opening
subject before one of the pack's ``clause_verbs`` ("vellino is an italian
restaurant": "vellino"), which catches names typed in lower case; a name the
opening subject goes on in lower case is read whole ("Harbour noodle bar
serves ...": "Harbour noodle bar", not "Harbour"). Names that only fix a time (the pack's
``time_words``: months, days) are never referents, nor is a one-word name that
is an English word right before a lower-case noun that is no verb (the lexicon's
``plain_nouns``): "an Italian restaurant", "Korean food" qualify a noun, they
name nothing.

*Salience* follows the centering idea that a recent subject is the likeliest
antecedent: each mention scores ``decay ** age`` (age: turns back from the
message), doubled for a sentence's subject, and a thing's score is the sum over
its mentions; ``thing`` decays fast (0.5: the last reply dominates),
``person`` slowly (0.8: a conversation's person persists). A thing the
message already names is not its referent.

Everything here is plain Python over short texts, and every text is read in
time linear in its length: a turn is read up to its first ``max_chars``
characters (the pack's ``max_scan_chars``, as the message is), and only the
first :data:`MAX_MENTIONS` things it names, and list items it holds, are
kept. What is read off a turn (its mentions and options) is remembered by
content, bounded (:data:`CACHE_ITEMS`), so a long conversation is read once,
not on every turn.
"""

from __future__ import annotations

import bisect
import re
from collections import OrderedDict
from dataclasses import dataclass
from threading import Lock

from . import timed
from .history import ASSISTANT, Said
from .listing import clip, list_items, words_before
from .proper_names import before_time, names, number_word
from .persons import ADJECTIVAL, PLACE, QUALITY, THING, NAMED_UNITS, exclaimed, name_kind
from .text import normalize
from .values import bare_value, comparing, coordinated, figure, first_value, same_kinds

__all__ = ["Mention", "Referent", "ReferentFinder", "SELECTORS"]

SELECTORS = ("position", "least", "most", "other", "all", "thing", "person")
PREFILTERED_NOTE = "not tried: its required words/strings are absent (prefilter)"
DEFAULT_REACH = {"person": 12}
#: How the text between two options of one offer ends: a comma, "and", "or", a semicolon, a new line
#: ("Hadley at 2,140 and Cresswell", "Brightwell, Marsh Lane or Tillotson"), then "the" at most.
_COORDINATED = re.compile(r"(?:[,;\n]|\b(?:and|or))\s*(?:the\s+)?$", re.I)
REACH = 6
#: A turn longer than this many words is a passage: a thing it names once, past its opening, is no referent.
PASSAGE_WORDS = 60
#: Turns whose reading is remembered (by content), per finder.
CACHE_ITEMS = 8192
CACHE_CHARS = 2000  # a longer turn is read on each call rather than kept
#: The things one turn is read to name, and the list items it is read to offer: the first so many, in order.
#: Options and salience compare mentions pairwise, so this bounds that work to a constant per turn.
MAX_MENTIONS = 64
#: How much of a turn is read when the finder is given no ``max_chars`` (the pack's default ``max_scan_chars``).
DEFAULT_TURN_CHARS = 4000

_QUOTED = re.compile(r"[\"\u201c]([^\"\u201d\n]{2,60})[\"\u201d]")
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
_ORDINALS = {"first": 0, "1st": 0, "former": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3,
             "fifth": 4, "5th": 4, "sixth": 5, "6th": 5, "last": -1, "latter": -1, "final": -1}
#: Words that open a noun phrase: one inside the reply's opening subject means it ran on past a verb.
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "my", "our", "your", "their", "its"})
_NEXT_WORD = re.compile(r"[ \t]+([a-z]+)\b")
_LETTER = re.compile(r"\b(?:option|number|no\.?|choice|#)\s*([a-h]|\d{1,2})\b")


class Mention:
    """A thing a turn names: ``text`` at ``start:end`` of the turn's content.

    ``key`` (its last word, lower case), ``low`` (its text, lower case) and
    ``words`` (its words without articles) are worked out once, when the
    turn is read, since salience compares them on every later turn.
    """

    __slots__ = ("text", "start", "end", "subject", "key", "low", "words", "kind")

    def __init__(self, text: str, start: int, end: int, subject: bool = False, kind: str = ""):
        self.text, self.start, self.end, self.subject, self.kind = text, start, end, subject, kind
        self.low = text.lower()
        self.key = _key(text)
        self.words = _words(text)

    def __repr__(self) -> str:
        return f"Mention({self.text!r}, {self.start}, {self.end}, subject={self.subject})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Mention) and (self.text, self.start, self.end, self.subject) == \
            (other.text, other.start, other.end, other.subject)

    def __hash__(self) -> int:
        return hash((self.text, self.start, self.end, self.subject))


@dataclass(frozen=True, slots=True)
class Referent:
    """What a follow-up points at, and where it was found."""

    text: str
    rule: str
    said: Said            # the turn it came from
    span: tuple[int, int]  # in ``said.content``


def _words(text: str) -> frozenset[str]:
    """A mention's words, lower case, without articles and possessive endings."""
    out = set()
    for w in re.findall(r"[\w'\u2019-]+", text.lower()):
        w = w.replace("\u2019", "'").removesuffix("'s")
        if w not in ("the", "a", "an", "of", "and", "&"):
            out.add(w)
    return frozenset(out)


def _same(a: Mention, b: Mention) -> bool:
    """Whether two mentions name the same thing: one's words are all among the other's ("Northern", "the Northern Kilns")."""
    wa, wb = a.words, b.words
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


def _key(text: str) -> str:
    """What identifies a thing across its mentions: its last word, lower case ("the Northern Kilns" -> "kilns")."""
    words = re.findall(r"[\w'\u2019-]+", text.lower())
    return words[-1].replace("\u2019", "'").removesuffix("'s") if words else ""


@dataclass(frozen=True, slots=True)
class _Reading:
    mentions: tuple[Mention, ...]
    options: tuple[Mention, ...]
    offered: bool = False  # the options are list items or coordinated phrases, not just the things named in order


class ReferentFinder:
    """Finds referents with one pack's referent rules; thread-safe, immutable but for its cache."""

    def __init__(self, rules, *, common=frozenset(), dictionary=frozenset(), function_words=frozenset(),
                 proper=frozenset(), nouns=frozenset(), qualifiers=frozenset(), plain_nouns=frozenset(),
                 time_words=(), clause_verbs=(), given_names=frozenset(), people=frozenset(), max_words: int = 12,
                 timeout: float = 0.05, max_chars: int = DEFAULT_TURN_CHARS):
        self.rules = tuple(rules)
        self.max_chars = max_chars
        self._common = frozenset(common)
        self._proper = frozenset(proper)
        self._nouns = frozenset(nouns)
        self._dictionary = frozenset(dictionary) | self._common
        self._modifiers = self._dictionary | frozenset(qualifiers)  # English words that may qualify a noun
        self._plain = frozenset(plain_nouns)  # nouns that are no verb: "restaurant", not "charges"
        self._function = frozenset(function_words)
        self._given, self._people = frozenset(given_names), frozenset(people)
        self._time = frozenset(w.lower() for w in time_words)
        verbs = sorted({v.lower() for v in clause_verbs}, key=len, reverse=True)
        self._verbs = re.compile(r"\s(?:" + "|".join(map(re.escape, verbs)) + r")\b", re.I) if verbs else None
        self._max_words = max_words
        self._timeout = timeout
        self._cache: OrderedDict[str, _Reading] = OrderedDict()
        self._names: OrderedDict[str, tuple] = OrderedDict()
        self._lock = Lock()

    @property
    def plain_nouns(self) -> frozenset[str]:
        """The pack's nouns that are no verb (lower case): "flights", "restaurant", "panels"."""
        return self._plain

    @property
    def function_words(self) -> frozenset[str]:
        """The pack's function words (lower case): words that name nothing."""
        return self._function

    @property
    def time_words(self) -> frozenset[str]:
        """The pack's ``time_words`` (lower case): names that only fix a time."""
        return self._time

    def names(self, text: str) -> tuple:
        """The names in ``text`` as typed (:func:`cleo_rules.proper_names.names` with the pack's lexicon), remembered for short texts."""
        if len(text) > CACHE_CHARS:
            return tuple(names(text, self._common, self._function, self._dictionary, self._proper, self._nouns))
        with self._lock:
            hit = self._names.get(text)
        if hit is None:
            hit = tuple(names(text, self._common, self._function, self._dictionary, self._proper, self._nouns))
            with self._lock:
                self._names[text] = hit
                if len(self._names) > CACHE_ITEMS:
                    self._names.popitem(last=False)
        return hit

    # -- reading one turn -----------------------------------------------

    def _read(self, said: Said) -> _Reading:
        text = said.content[: self.max_chars]
        if len(text) <= CACHE_CHARS:
            with self._lock:
                hit = self._cache.get(text)
                if hit is not None:
                    self._cache.move_to_end(text)
                    return hit
        reading = self._read_text(text, said.role == ASSISTANT)
        if len(text) <= CACHE_CHARS:
            with self._lock:
                self._cache[text] = reading
                if len(self._cache) > CACHE_ITEMS:
                    self._cache.popitem(last=False)
        return reading

    def _read_text(self, text: str, reply: bool) -> _Reading:
        found: list[Mention] = []
        for n in self.names(text):  # the names a guard or the topic may have read off this text already
            key = _key(n.text)
            if key in self._time or key.removesuffix("s") in self._time or n.text.lower() in self._time:
                n = before_time(n, self._time)  # "Lisbon on Monday": the place, not the day
                if n is None:
                    continue
            if self._modifier(text, n) or bare_value(n.text, self._time) or (not reply and exclaimed(text, n)) or \
                    key in NAMED_UNITS:
                continue  # "Italian food" qualifies a noun; "EUR", "9:10", "Friday" name no thing; "Heck, ..."
            # "Indian or Italian?" offers two options, but "it" or "the address" never points at an adjective
            kind = QUALITY if self._adjective(key) else name_kind(text, n.start, n.end, self._given, self._people)
            found.append(Mention(n.text, n.start, n.end, subject=n.initial, kind=kind))
            if len(found) == MAX_MENTIONS:
                break  # names come in order: no later one is among the first MAX_MENTIONS things named
        # names come in order and do not overlap: a quotation starts inside one only if it starts inside
        # the last name that starts at or before it
        starts = [f.start for f in found]
        named = found[:]
        for m in _QUOTED.finditer(text):
            at = bisect.bisect_right(starts, m.start(1)) - 1
            if at < 0 or m.start(1) >= named[at].end:
                found.append(Mention(m.group(1), m.start(1), m.end(1)))
        if reply and self._verbs is not None:  # a reply typed in lower case, or its opening name cut short
            subject = self._opening_subject(text)
            if subject is not None:
                overlapping = [f for f in found if f.start <= subject.start < f.end or subject.start <= f.start < subject.end]
                if not overlapping:
                    if not found:
                        found.append(subject)
                elif len(overlapping) == 1 and self._cut_short(overlapping[0], subject):
                    found[found.index(overlapping[0])] = subject  # "Lan anh is ...": the name as the subject says it
        found.sort(key=lambda m: m.start)
        del found[MAX_MENTIONS:]
        items = list_items(text, MAX_MENTIONS)
        offered = True
        if len(items) >= 2:
            options = tuple(Mention(clip(item), start, start + len(clip(item))) for start, item in items)
        else:
            options = self._coordinated_options(text, found) if reply else ()
            if len(options) < 2:
                distinct: list[Mention] = []
                for m in found:
                    if not any(_same(m, o) for o in distinct):
                        distinct.append(m)
                options = tuple(distinct)
                # names joined by "and", "or", commas ("X and Y can both come") are offered; a passage's are not
                offered = all(_COORDINATED.search(text[a.end:b.start]) for a, b in zip(options, options[1:]))
        return _Reading(tuple(found), options, offered)

    def _coordinated_options(self, text: str, found: list[Mention]) -> tuple[Mention, ...]:
        """The options of the first sentence of ``text`` whose coordinated phrases each name a thing or hold a
        value (a time, a day, a price, a figure), the same kinds in each: "TAP at 9:10 for 140 EUR", "easyJet at 13:25 for 95 EUR";
        "8:10", "8:40". The first phrase starts at its first thing named, else at its first value (past its
        lead-in: "There is one at") but for as many words as the last phrase has before its own ("TAP at 9:10"
        beside "easyJet at 13:25"). When every phrase but the last is only its thing's name, the last is cut
        to its name too ("Brightwell, Marsh Lane or Tillotson for a quote")."""
        starts = [m.start for m in found]
        for sentence in coordinated(text, MAX_MENTIONS):
            if not same_kinds(text, sentence):
                continue  # "bricks at 0.98 each and delivery Wednesday": phrases of different makes, no offer
            named: list[Mention | None] = []
            spans = []
            for a, b in sentence:
                at = bisect.bisect_left(starts, a)
                name = found[at] if at < len(found) and found[at].start < b else None
                lead = name.start if name is not None else first_value(text, a, b)
                if lead is None:
                    break
                named.append(name)
                spans.append((lead if not spans else a, b))
            else:
                if named[0] is None:  # as many words before its value as the last phrase has ("TAP at 9:10")
                    spans[0] = (words_before(text, sentence[0][0], spans[0][0],
                                              len(text[sentence[-1][0]:first_value(text, *sentence[-1])].split())),
                                spans[0][1])
                last = named[-1]
                if last is not None and all(m is not None and m.end >= b for m, (_, b) in zip(named[:-1], spans)):
                    spans[-1] = (last.start, min(last.end, spans[-1][1]))
                return tuple(_option(text, a, b, m) for (a, b), m in zip(spans, named))
        return ()

    def _cut_short(self, name: Mention, subject: Mention) -> bool:
        """Whether the reply's opening subject is ``name`` typed on in lower case ("Harbour noodle bar is ..."):
        it starts where the name does and goes on with at most three lower-case words, each a noun or a word the
        lexicon does not know ("Cresswell it is" is a name, then a pronoun)."""
        if name.start != subject.start or name.end >= subject.end:
            return False
        rest = subject.text[name.end - subject.start:].split()
        return 1 <= len(rest) <= 3 and all(w.isalpha() and w.islower() and w not in self._function and
                                           (w in self._nouns or w not in self._dictionary) for w in rest)

    def _adjective(self, key: str) -> bool:
        """Whether a name's last word is an English adjective of a people or a quality ("Indian", "Caribbean",
        "Islamic") rather than a given name: what it qualifies is left unsaid ("Mexican will be fine")."""
        return key.endswith(ADJECTIVAL) and key not in self._given and (key in self._modifiers or key in self._proper)

    def _modifier(self, text: str, name) -> bool:
        """Whether a one-word name is an English word qualifying the lower-case noun right after it ("an
        Italian restaurant", "Korean food"; a noun that is no verb, so "Ledger charges" is a name and its
        verb): an adjective before its noun, not a name."""
        word = name.text.lower()
        if " " in word or word not in self._modifiers:
            return False
        after = _NEXT_WORD.match(text, name.end)
        if after is None or after.group(1) not in self._plain or after.group(1) in self._function:
            return False
        return self._verbs is None or self._verbs.match(after.group()) is None  # "Psalms was": a verb, not a noun

    def _opening_subject(self, text: str) -> Mention | None:
        """The noun phrase that opens the reply, before its first clause verb, when it names something.

        "vellino is an italian restaurant" names "vellino", "marlowe restaurant
        is in the centre" names "marlowe restaurant". It may follow a short
        opening ("Yes, ", "Of course, "), but nothing else: the phrase's first
        word (after "the") must not be a common English word nor a number
        spelled out, it holds no figure, and no second determiner (a verb the
        pack does not list ran on into another phrase), so "Then the fallback
        ...", "once the shelving ...", "285 it is" and "the recipe book says
        the glaze was ..." name nothing.
        """
        first = _SENTENCE.match(text)
        if first is None or self._verbs is None:
            return None
        sentence = first.group()
        v = self._verbs.search(sentence)
        if v is None:
            return None
        head = sentence[: v.start()]
        cut = head.rfind(",")
        if cut >= 0 and len(head[:cut].split()) > 2:
            return None  # more than a short opening before the comma
        phrase = head[cut + 1:].strip()
        words = phrase.split()
        if words and words[0].lower() in ("the", "a", "an"):
            words = words[1:]
        if not 1 <= len(words) <= 5 or any(ch.isdigit() for ch in phrase) or ":" in head:
            return None
        lowered = [w.lower().strip("\"'") for w in words]
        if lowered[0] in self._common or lowered[0] in self._function or number_word(lowered[0]) or \
                all(w in self._dictionary or w in self._function for w in lowered):
            return None  # a pronoun, "the address", "then the ...", "twenty": not a name
        if any(w in _DETERMINERS for w in lowered[1:]):
            return None  # "the recipe book says the silica": a verb the pack does not list, then a second phrase
        start = first.start() + sentence.index(phrase)
        return Mention(phrase, start, start + len(phrase), subject=True)

    def mentions(self, said: Said) -> tuple[Mention, ...]:
        """The things ``said`` names (read once, then remembered)."""
        return self._read(said).mentions

    # -- selecting --------------------------------------------------------

    def find(self, normalized: str, message: str, history: tuple[Said, ...], recorder=None,
             chain: bool = True, candidates=None) -> Referent | None:
        """The referent of a follow-up ``message`` (``normalized``: as the rules see it), or None.

        ``chain=False`` leaves out the rules that read earlier turns'
        referents (``other``), as when those turns themselves are resolved.
        ``candidates`` (indices into the rules), when given, are the only rules
        whose patterns can match: the others are passed over unsearched.
        """
        if not history:
            return None
        low = message.lower()
        named = None
        for i, rule in enumerate(self.rules):
            if not chain and rule.select == "other":
                continue
            if candidates is not None and i not in candidates:
                if recorder is not None:
                    recorder.referent_tried(rule, None, None, note=PREFILTERED_NOTE)
                continue
            if rule.unless_name:
                if named is None:
                    named = bool(self.names(message[: self.max_chars]))
                if named:
                    if recorder is not None:
                        recorder.referent_tried(rule, None, None, note="the message names its own subject")
                    continue
            try:
                m = timed.search(rule.compiled.search, normalized, self._timeout)
            except TimeoutError:
                m = None
            if m is None:
                if recorder is not None:
                    recorder.referent_tried(rule, None, None)
                continue
            found = self._select(rule, m, low, history)
            if recorder is not None:
                recorder.referent_tried(rule, m, found)
            if found is not None:
                return found
        return None

    def _window(self, rule, history):
        reach = rule.reach or DEFAULT_REACH.get(rule.select, REACH)
        return history[-reach:]

    def _select(self, rule, match, message_low: str, history) -> Referent | None:
        window = self._window(rule, history)
        sel = rule.select
        if sel == "all":
            return self._all(rule, message_low, window)
        if sel in ("position", "least", "most", "other"):
            return self._option(rule, match, message_low, window)
        return self._salient(rule, match, message_low, window, decay=0.8 if sel == "person" else 0.5)

    def _offers(self, window, listed: bool = False):
        """Assistant turns offering two or more options, most recent first: ``(said, options)``; ``listed``: only
        turns whose options are list items or coordinated phrases ("X at 9:10 and Y at 13:25"), up to the first
        whose options are only a passage's names in order (what such a turn names is no offer to pick from)."""
        for said in reversed(window):
            if said.role == ASSISTANT:
                reading = self._read(said)
                if len(reading.options) >= 2:
                    if listed and not reading.offered:
                        return
                    yield said, reading.options

    def _option(self, rule, match, message_low, window) -> Referent | None:
        if rule.select == "other":
            return self._other(rule, message_low, window)
        # a position needs a listed offer; a figure picks among any things named, each with its own figure
        said, options = next(self._offers(window, listed=rule.select == "position"), (None, ()))
        if said is None:
            return None
        sel = rule.select
        chosen: Mention | None = None
        if sel == "position":
            words = match.group().lower()
            index = None
            letter = _LETTER.search(words)
            if letter:
                token = letter.group(1)
                index = int(token) - 1 if token.isdigit() else ord(token) - ord("a")
            else:
                for w in re.findall(r"\w+", words):
                    if w in _ORDINALS:
                        index = _ORDINALS[w]
                        break
            if index is None or not -len(options) <= index < len(options):
                return None
            chosen = options[index]
        else:  # least, most: the option with the smallest or largest figure of the kind compared
            text = said.content[: self.max_chars]  # the text the options were read from
            kind = comparing(match.group())
            figures = self._figures(text, options, kind)
            if figures is None and kind != "number":
                figures = self._figures(text, options, "number")
            if figures is None:
                return None
            best = (min if sel == "least" else max)(figures)
            if figures.count(best) != 1:
                return None
            chosen = options[figures.index(best)]
        return self._referent(chosen, rule, said)

    @staticmethod
    def _figures(text: str, options, kind: str) -> list[float] | None:
        """Each option's figure of ``kind`` (:func:`cleo_rules.values.figure`), read from the option to the next
        one's start; None when an option has none."""
        out = []
        for i, option in enumerate(options):
            end = options[i + 1].start if i + 1 < len(options) else len(text)
            value = figure(text[option.start:max(end, option.end)], kind)
            if value is None:
                return None
            out.append(value)
        return out

    def offer(self, history: tuple[Said, ...], reach: int = REACH) -> tuple[Said, tuple[Mention, ...]] | None:
        """The most recent assistant turn among the last ``reach`` offering two or more options, and its options."""
        return next(self._offers(history[-reach:]), None)

    def _all(self, rule, message_low, window) -> Referent | None:
        """Every option of the most recent offer ("compare them", "both"), unless the message names one."""
        offer = next(self._offers(window, listed=True), None)
        if offer is None:
            return None
        said, options = offer
        if any(o.key and o.key in message_low for o in options):
            return None
        content = said.content[: self.max_chars]
        gaps = (content[a.end:b.start] for a, b in zip(options, options[1:]))
        if not all(_COORDINATED.search(gap) for gap in gaps):
            return None  # "Pennine Supplies in Leeds": two names, one thing, no offer of two
        text = ", ".join(o.text for o in options[:-1]) + " and " + options[-1].text
        return Referent(text, rule.id, said, (options[0].start, options[-1].end))

    def _other(self, rule, message_low, window) -> Referent | None:
        """The one option of an offer that nothing since has named or pointed at (nor the message)."""
        for said, options in self._offers(window, listed=True):
            later = [s for s in window if s.index > said.index]
            named = [m for s in later for m in self._read(s).mentions]
            # what the user's turns since pointed at ("the bigger one") counts as named too
            for j, s in enumerate(window):
                if s.index > said.index and s.role != ASSISTANT:
                    text = s.content[: self.max_chars]
                    found = self.find(normalize(text), text, window[:j], chain=False)
                    if found is not None:
                        named.append(Mention(found.text, 0, 0))
            rest = [o for o in options if not any(_same(o, m) for m in named) and o.key not in message_low]
            if len(rest) == 1 and len(options) > 1:
                return self._referent(rest[0], rule, said)
        return None

    def _salient(self, rule, match, message_low, window, decay: float) -> Referent | None:
        scores: dict[str, float] = {}
        best: dict[str, tuple[Mention, Said]] = {}
        said_words = set(re.findall(r"[\w']+", message_low))
        head = match.group().split()[-1] if rule.select == "thing" else None
        # "he", "her", "the landlord" point at a person: never a name its text marks as an organisation's, a place's
        # or a work's; nothing points at an adjective typed with a capital ("Indian")
        person = rule.select == "person" or head in self._people
        for age, said in enumerate(reversed(window)):
            weight = decay ** age
            for m in self._read(said).mentions:
                k = m.key
                if not k or k in said_words or m.low in message_low or m.kind == QUALITY or \
                        (person and m.kind in (THING, PLACE)):
                    continue  # the message names it already, or it is not of the kind pointed at
                s = weight * (2.0 if m.subject else 1.0)
                if head and head in m.words:
                    s *= 3.0  # "the band" and "the Mothers of Invention band"
                scores[k] = scores.get(k, 0.0) + s
                if k not in best or len(m.text) > len(best[k][0].text):
                    best[k] = (m, said)
        if not scores:
            return None
        top = max(scores, key=lambda k: (scores[k], best[k][1].index))
        mention, said = best[top]
        if len(said.content[: self.max_chars].split()) > PASSAGE_WORDS and mention.start > 0 and \
                sum(m.key == top for m in self._read(said).mentions) < 2:
            return None  # a passage names many things once: only its opening subject or a repeated name stands out
        return self._referent(mention, rule, said)

    def _referent(self, mention: Mention, rule, said: Said) -> Referent | None:
        if bare_value(mention.text, self._time):
            return None  # "8:40", "95 EUR": a value, not a thing the message can point at
        words = mention.text.split()
        text = " ".join(words[: self._max_words])
        return Referent(text, rule.id, said, (mention.start, mention.start + len(text)))


def _option(text: str, start: int, end: int, name: Mention | None) -> Mention:
    """The option ``text[start:end]``, known by its thing's name (``name``, when it names one): its key is the
    name's."""
    option = Mention(text[start:end], start, end)
    if name is not None:
        option.key = name.key
    return option
