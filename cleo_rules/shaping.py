"""A follow-up's query, built from parts of the conversation.

A follow-up is searched as one of the pack's templates over five parts:

``anchor``    the user's last substantive message (earlier nods, follow-ups,
              corrections and skips are passed over): the subject;
``topic``     in an information-seeking conversation (below), the name the
              conversation keeps coming back to: the one named in the most
              turns (at least two), when the referent and the message do not
              name it already. When the anchor names it, the anchor is still
              the subject and there is no topic; otherwise the conversation
              has moved on from its anchor: the topic stands for the subject,
              in the anchor's place;
``referent``  what the follow-up points at, found in the conversation by the
              pack's referent rules (:mod:`cleo_rules.referent_finder`): "the second
              one" becomes the second option the assistant offered, as the
              reply phrases it ("Cresswell quotes 1,865 a year"); a referent is
              a thing, never a bare value (a price, a time, a currency code).
              It qualifies the subject, never replaces it: in an
              information-seeking conversation the anchor stays whole; in a
              task conversation (the assistant asks) the user's request was
              for options and the option found is an instance of what was
              asked for, so the anchor's request words and head noun ("show
              me flights", "a restaurant") would pull the search towards
              every reply to the request: the anchor part is then what the
              anchor names ("Show me flights to Lisbon on Monday": "Lisbon"),
              left out only when it names nothing the referent does not name
              already, or whole when the referent was found in the anchor
              itself. A
              ``person`` referent ("he", "her") that is not the conversation's
              topic gives way to the topic when there is one. When no rule
              finds one and the conversation is not information-seeking, the
              referent is the leading ``reply_words`` words of the assistant's
              last reply (what a nod or "tell me more" answers), unless
              ``reply_words`` is 0;
``message``   the message as typed;
``reply``     in an information-seeking conversation, the assistant's last
              reply, at most ``reply_max_words`` words: what the follow-up
              goes on from. Left out when the referent is an option chosen from
              an offer ("the second one": the option carries the choice, the
              others would pull the search towards them). A reply of at least
              ``long_reply_words`` words (a passage) restates its own subject:
              the anchor and the topic, which name an earlier one, are left
              out then.

A conversation is **information-seeking** when its first user turn (of the
last ``anchor_lookback``) asks a question and no turn of the assistant's has
asked one: the user asks, the assistant answers, and the answer's words are
what the next question is about. When the assistant asks (which one, what
time, shall I book it), the conversation is a task, and its replies are mostly
about what the assistant offers, not what the user is after.

Each template line whose parts are all empty is left out, so the default
template over a history of plain strings (user messages only, hence no topic,
referent or reply) is exactly ``"{anchor}\\n{message}"``. The pack setting
``referents: false`` leaves out the topic, the referent and the reply always.
With nothing to combine (no anchor, no other part) the message is searched as
typed. Every part is returned as a :class:`~cleo_rules.decision.Part` saying
where it came from. :func:`template_for` says which template a decision's parts
were rendered with (``combine_resolved`` when a referent rule found the
referent, ``combine`` otherwise). :func:`as_follow_up` shapes any message so:
what combining would have searched for a message the pack decided otherwise (a
correction is never combined).
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter

from .decision import Part
from .history import ASSISTANT, USER

__all__ = ["QUERY_PARTS", "as_follow_up", "information_seeking", "fill_template", "shape", "shape_correction",
           "template_for"]

NOTHING_TO_COMBINE = "no substantive message in history; searched as typed"
#: The parts a query template may use, in the order the default template puts them.
QUERY_PARTS = ("anchor", "topic", "referent", "message", "reply")
#: Referent rules that choose among the options of an offer (the others point back at something named).
CHOOSING = frozenset({"position", "least", "most", "other"})

_QUESTION = re.compile(r"\?\s*$|^\W*(?:what|who|whom|whose|when|where|why|how|which|is|are|was|were|did|does|do|"
                       r"has|have|had|compare|tell|explain|describe|list|summari[sz]e)\b", re.I)
_PERSON = re.compile(r"\b(?:he|she|him|his|her|hers|himself|herself)\b", re.I)
_WORD = re.compile(r"\w+")


def fill_template(template: str, **parts: str) -> str:
    """``template`` over ``parts``, leaving out every line whose fields are all empty."""
    lines = []
    values = _Parts(parts)
    for line, fields in _template_lines(template):
        if fields and not any(parts.get(f) for f in fields):
            continue
        lines.append(line.format_map(values))
    return "\n".join(lines)


@functools.lru_cache(maxsize=64)
def _template_lines(template: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each line of ``template`` with the fields it names: a pack's few templates, each parsed once."""
    formatter = string.Formatter()
    return tuple((line, tuple(f for _, f, _, _ in formatter.parse(line) if f is not None))
                 for line in template.split("\n"))


@functools.lru_cache(maxsize=64)
def _template_fields(template: str) -> tuple[str, ...]:
    """The fields ``template`` names, in order (a pack's few templates, each parsed once)."""
    return tuple(f for _, f, _, _ in string.Formatter().parse(template) if f)


class _Parts(dict):
    def __missing__(self, key):
        return ""


def template_for(settings, parts) -> str:
    """The template a follow-up with ``parts`` is searched with: ``combine_resolved`` when a referent rule
    found its referent, else ``combine``."""
    resolved = any(p.name == "referent" and p.rule is not None for p in parts)
    return settings.combine_resolved if resolved else settings.combine


def information_seeking(history, settings) -> bool:
    """Whether the conversation is one where the user asks and the assistant answers: among the last
    ``anchor_lookback`` user turns, the first asks a question, and no turn of the assistant's asks one (each
    read to ``max_scan_chars``)."""
    lookback, cap = settings.anchor_lookback, settings.max_scan_chars
    first = None
    answered = False
    seen = 0
    for said in reversed(history):
        text = said.content[:cap]
        if said.role == ASSISTANT:
            if "?" in text:
                return False
            answered = True
        elif said.role == USER:
            seen += 1
            if seen > lookback:
                break
            first = text
    return answered and first is not None and _QUESTION.search(first.strip()) is not None


@functools.lru_cache(maxsize=8192)
def _key(text: str, function_words: frozenset) -> str:
    """``text`` in lower case without its function words: what two mentions of one name share."""
    return " ".join(w for w in _WORD.findall(text.lower()) if w not in function_words)


def _topic(finder, history, settings, named: str) -> Part | None:
    """The name said in the most turns of the last ``anchor_lookback`` user turns and the replies between them
    (at least two turns; the latest of equals), unless ``named`` (the other parts) names it already."""
    function = finder.function_words
    counts: Counter[str] = Counter()
    found: dict[str, tuple] = {}
    cap, seen = settings.max_scan_chars, 0
    for said in reversed(history):
        if said.role == USER:
            seen += 1
            if seen > settings.anchor_lookback:
                break
        keys = set()
        for name in finder.names(said.content[:cap]):
            key = _key(name.text, function)
            if key and key not in keys:
                keys.add(key)
                counts[key] += 1
                if key not in found or len(name.text) > len(found[key][0].text):
                    found[key] = (name, said)
    known = _key(named, function)
    best = [k for k, n in counts.items() if n >= 2 and k not in known]
    if not best:
        return None
    top = max(best, key=lambda k: counts[k])  # counts in newest-first order: the latest of equals
    name, said = found[top]
    return Part("topic", name.text, said.role, said.turn, said.index, (name.start, name.end), None)


def _named_in(finder, name: str, text: str) -> bool:
    """Whether ``text`` names ``name`` (compared without case or function words)."""
    key = _key(name, finder.function_words)
    return bool(key) and key in _key(text, finder.function_words)


def _replied(history, max_chars: int):
    """``(said, text)``: the assistant's last reply that says anything in its first ``max_chars`` characters, and
    those characters (no reply is read further); ``(None, "")`` when there is none."""
    for said in reversed(history):
        if said.role == ASSISTANT:
            text = said.content[:max_chars]
            if text and not text.isspace():
                return said, text
    return None, ""


def _last_reply(history, words: int, max_chars: int, name: str = "reply"):
    """The leading ``words`` words of the assistant's last reply that says anything (:func:`_replied`), as the
    part ``name``."""
    said, text = _replied(history, max_chars)
    if said is None:
        return None
    kept = text.split()[:words]  # not empty: the text is not all white space
    start = text.index(kept[0])
    end = start
    for word in kept:
        end = text.index(word, end) + len(word)
    return Part(name, " ".join(kept), ASSISTANT, said.turn, said.index, (start, end), None)


def _referent(matcher, message, normalized, history, recorder, candidates, seeking, given=None):
    """``(referent part, chosen from an offer)``; ``given``, a :class:`~cleo_rules.choices.NamedChoice` with the
    id of the rule that took it, is the option the message names."""
    settings = matcher.settings
    if given is not None:
        choice, rule = given
        return Part("referent", choice.text, choice.said.role, choice.said.turn, choice.said.index, choice.span,
                    rule), True
    found = matcher.referents.find(normalized, message, history, recorder, candidates=candidates)
    if found is not None:
        rule = next((r for r in matcher.referents.rules if r.id == found.rule), None)
        part = Part("referent", found.text, found.said.role, found.said.turn, found.said.index, found.span,
                    found.rule)
        return part, rule is not None and rule.select in CHOOSING
    if not seeking and settings.reply_words and "{referent}" in settings.combine:
        return _last_reply(history, settings.reply_words, settings.max_scan_chars, "referent"), False
    return None, False


def shape(matcher, message: str, normalized: str, history, recorder=None, candidates=None, given=None):
    """``(query, parts, note)`` for a follow-up ``message`` given ``history`` (:class:`~cleo_rules.history.Said` items).

    ``candidates``, when given, are the indices of the referent rules the
    prefilter found the message can match; the others are not searched.
    ``given`` is ``(NamedChoice, rule id)`` for a message that picks an
    offered option by name (:mod:`cleo_rules.choices`): its referent.
    """
    settings = matcher.settings
    referent = topic = reply = None
    chosen = seeking = False
    if settings.referents and any(s.role == ASSISTANT for s in history):
        seeking = settings.reply_max_words > 0 and information_seeking(history, settings)
        referent, chosen = _referent(matcher, message, normalized, history, recorder, candidates, seeking, given)
        if referent is not None and recorder is not None:
            recorder.referent(referent)
    template = settings.combine_resolved if referent is not None and referent.rule else settings.combine
    fields = _template_fields(template)
    parts: list[Part] = []
    anchor = matcher.anchor(history) if "anchor" in fields else None
    # the reply the query would carry (_last_reply reads the same one) is a passage
    passage = (seeking and settings.long_reply_words > 0 and not chosen and "reply" in fields
               and len(_replied(history, settings.max_scan_chars)[1].split()) >= settings.long_reply_words)
    if passage:
        anchor = None  # a passage restates its own subject; the anchor asked about an earlier one
    if anchor is not None:
        if referent is None or referent.rule is None or seeking or referent.index == anchor.index:
            parts.append(_anchor_part(anchor))
        else:  # an option found in the reply qualifies what the anchor names; its request words are left out
            part = _subject(matcher.referents, anchor, referent.text)
            if part is not None:
                parts.append(part)
    if seeking and "topic" in fields and not passage:
        topic = _topic(matcher.referents, history, settings,
                       " ".join([referent.text if referent else "", normalized]))
        if topic is not None and referent is not None and referent.rule and _PERSON.search(normalized):
            # "he", "her": a person the conversation is about, before the last name said
            referent = Part("referent", topic.text, topic.source, topic.turn, topic.index, topic.span, referent.rule)
            topic = None
        elif topic is not None and anchor is not None and _named_in(matcher.referents, topic.text,
                                                                 anchor.content[: settings.max_scan_chars]):
            topic = None  # the anchor names what the conversation keeps coming back to: it is not stale
    if topic is not None:  # the conversation has moved on from the anchor to what it keeps naming
        parts = [p for p in parts if p.name != "anchor"]
        parts.append(topic)
    if referent is not None and "referent" in fields:
        parts.append(referent)
    if seeking and not chosen and "reply" in fields:
        reply = _last_reply(history, settings.reply_max_words, settings.max_scan_chars)
    rejected = _rejected(matcher.referents, normalized, history) if parts or reply is not None else ()
    if rejected:  # "not the 8:10 one": no part that carries what the message turns down
        parts = [p for p in parts if not _names_any(p.text, rejected)]
        reply = None if reply is not None and _names_any(reply.text, rejected) else reply
    if not parts and reply is None:
        return message, (Part("message", message, "message"),), NOTHING_TO_COMBINE
    parts.append(Part("message", message, "message"))
    if reply is not None:
        parts.append(reply)
    query = fill_template(template, **{p.name: p.text for p in parts})
    order = {name: i for i, name in enumerate(fields)}
    return query, tuple(sorted(parts, key=lambda p: order.get(p.name, 99))), None


def _anchor_part(anchor) -> Part:
    """The whole anchor, a user turn, as the part ``anchor``."""
    return Part("anchor", anchor.content, anchor.role, anchor.turn, anchor.index, (0, len(anchor.content)), None)


def _subject(finder, anchor, referent: str) -> Part | None:
    """The part of a task conversation's anchor that says what the user asked about, beside an option found in
    the reply: the things it names ("Show me flights to Lisbon on Monday": "Lisbon"), not its request words nor
    its head noun, which would pull the search towards every reply to the request (the option found is an
    instance of what was asked for: "a Vietnamese restaurant" is "Thanh Binh"); None when it names nothing the
    ``referent`` does not name already."""
    from .values import bare_value

    found = [n for n in finder.mentions(anchor)
             if not bare_value(n.text, finder.time_words) and not _named_in(finder, n.text, referent)]
    if not found:
        return None
    return Part("anchor", " ".join(n.text for n in found), anchor.role, anchor.turn, anchor.index,
                (found[0].start, found[-1].end), None)


def _names_any(text: str, names) -> bool:
    low = text.lower()
    return any(re.search(r"(?<!\w)" + re.escape(n.lower()) + r"(?!\w)", low) for n in names)


def _brings_its_own(matcher, normalized: str, span) -> bool:
    """Whether the correction says more than its rule matched: a word outside ``span`` the vocabulary does not cover."""
    rest = normalized if span is None else normalized[: span[0]] + " " + normalized[span[1]:]
    tokens = _WORD.findall(rest)
    if not tokens:
        return False
    _, covered, _ = matcher.context.vocabulary.cover(tokens)
    return not all(covered)


_VALUE_TOKEN = re.compile(r"\d{1,2}[:.]\d{2}|[£$€]?\d[\d,]*(?:\.\d+)?|[^\W\d_]+")


def _option_tokens(text: str, function_words) -> set[str]:
    return {t for t in _VALUE_TOKEN.findall(text.lower()) if t not in function_words}


def _named_by(finder, options, said: set[str]) -> list:
    """The ``options`` that ``said`` (words and values) names by a word or value no other option has."""
    keys = [_option_tokens(o.text, finder.function_words) for o in options]
    return [options[i] for i, own in enumerate(keys)
            if (own - set().union(*(k for j, k in enumerate(keys) if j != i))) & said]


def _named_option(finder, normalized: str, options):
    """The one offered option the message names by a word or value no other option has ("the 8:40", "the
    Thursday one"), or None."""
    named = _named_by(finder, options, _option_tokens(normalized, finder.function_words))
    return named[0] if len(named) == 1 else None


_NEGATION = re.compile(r"\b(?:not|no|never|except|without|instead of|rather than|other than|anything but)\s+(?:the\s+|that\s+)?"
                       r"([^\s,;.!?]+)")


def _rejected(finder, normalized: str, history) -> list[str]:
    """The options of the assistant's last offer that the message turns down: those it names right after a
    negation by a word or value no other option has ("not the 8:10", "anything but Hadley")."""
    refused = {w for m in _NEGATION.finditer(normalized) for w in _option_tokens(m.group(1), finder.function_words)}
    if not refused:
        return []  # no negation: no reply is read
    offer = finder.offer(history, reach=2)
    if offer is None:
        return []
    return [o.text for o in _named_by(finder, offer[1], refused)]


def shape_correction(matcher, message: str, normalized: str, history, recorder=None, span=None):
    """``(query, parts, note)`` for a correction: never combined with what it rejects.

    With no offer among the assistant's recent turns (two or more options), what
    it rejects is in the assistant's reply (what it answered or did), never in
    the user's own request: the correction is searched with the subject (the
    anchor) and the message, never with the reply. After an offer, what it rejects is every
    option but its replacement: a correction that picks its replacement from
    the offer ("not that one, the cheaper one") searches the subject (the
    anchor) with the replacement; one that brings its own ("neither suits, try
    Thursday instead": words beyond the correction's ``span``, in normalised
    text, that the pack's vocabulary does not cover) searches the subject with
    the message; one that does neither ("we tried that one already") is
    searched as typed. A part that names a rejected option is left out, so the
    query never holds one but in the user's own words (the message).
    """
    as_typed = (message, (Part("message", message, "message"),), None)
    settings = matcher.settings
    finder = matcher.referents
    if not settings.referents or not any(s.role == ASSISTANT for s in history):
        return as_typed
    offer = finder.offer(history)
    if offer is None:
        anchor = matcher.anchor(history)
        if anchor is None:
            return as_typed
        request = (_anchor_part(anchor), Part("message", message, "message"))
        return fill_template(settings.combine_correction, anchor=anchor.content, message=message), request, None
    said, options = offer
    choosing = frozenset(i for i, r in enumerate(finder.rules) if r.select in CHOOSING)
    found = finder.find(normalized, message, history, recorder, candidates=choosing) if choosing else None
    named = _named_option(finder, normalized, options) if found is None else None
    if found is None and named is None and not _brings_its_own(matcher, normalized, span):
        return as_typed
    chosen = found.text if found is not None else None
    if named is not None:
        chosen = named.text  # "not that one, the 8:40": the message names its replacement
    rejected = [o.text for o in options if chosen is None or (o.text not in chosen and chosen not in o.text)]
    parts: list[Part] = []
    anchor = matcher.anchor(history)
    if anchor is not None and not _names_any(anchor.content, rejected):
        parts.append(_anchor_part(anchor))
    if found is not None:
        parts.append(Part("referent", found.text, found.said.role, found.said.turn, found.said.index, found.span,
                          found.rule))
    else:
        parts.append(Part("message", message, "message"))
    if len(parts) == 1 and parts[0].name == "message":  # parts holds the referent or the message
        return as_typed
    query = fill_template(settings.combine_correction, **{p.name: p.text for p in parts})
    order = {name: i for i, name in enumerate(QUERY_PARTS)}
    return query, tuple(sorted(parts, key=lambda p: order[p.name])), None


def as_follow_up(pack, message: str, history=()):
    """``(query, parts, note)`` that ``message`` would be searched with were it a follow-up of ``history``.

    The same shaping a follow-up gets (:func:`shape`), from the same parts,
    whatever the pack decided the message is: what combining would have
    searched for a correction, which is never combined. With nothing to
    combine it is the message as typed, its only part, and a note saying so.
    ``pack`` is a compiled :class:`~cleo_rules.pack.model.Pack`; ``history``
    is read as :meth:`~cleo_rules.pack.model.Pack.classify` reads it (a
    malformed item raises :class:`~cleo_rules.history.HistoryError`).
    """
    from .history import read_history
    from .text import normalize

    matcher = pack.matcher
    return shape(matcher, message, normalize(message[: matcher.settings.max_scan_chars]), read_history(history))
