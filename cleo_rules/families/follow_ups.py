"""The follow-up patterns family: a ``follow_ups`` file's rules, in two lanes around the vocabulary test.

A follow-up pattern ("what about the other one", "is it cheaper?") makes a
short message a ``follow_up``, searched with the conversation it follows. The
patterns are tried after the corrections, in file order, those marked
``after_vocabulary`` after the vocabulary test (two lanes). A match stands
only if the message has at most the rule's ``max_words`` (or the pack's
``max_follow_up_words``), if its guards pass (no name where the rule forbids
one, a head word in the lexicon, an antecedent in the conversation) and if
the topic words around it (words the vocabulary does not cover) are within
its bounds.
"""

from __future__ import annotations

import re

from ..history import ASSISTANT
from ..kinds import DecisionKind, FileKind, RuleKind
from ..text import WORD, normalize, original_span
from ..walk import LaneOrder
from .base import Tally
from .patterns import PatternFamily, PatternLane, PatternRule, no_match, short_of_follow_up

__all__ = ["FOLLOW_UPS", "FollowUpLane", "FollowUps", "topic_bound", "topic_note", "topic_ok"]

#: Words that make a description definite: a rare word after one is read as a noun.
_DEFINITE = frozenset({"the", "this", "that", "these", "those"})

_TOPIC_NOTE = re.compile(r"(?P<outside>\d+) topic word\(s\) outside the match.*?(?:, (?P<before>\d+) before it)?$")


def topic_ok(rule: PatternRule, outside: int, before: int) -> bool:
    """Whether ``rule``'s bounds allow that many topic words around its match.

    ``min/max_content_words`` bound those outside the match;
    ``max_content_before`` those before it (an anaphor follows its
    antecedent: a referring word after topic words may point inside the
    message rather than back at an earlier turn).
    """
    return outside >= rule.min_content_words and \
        (rule.max_content_words is None or outside <= rule.max_content_words) and \
        (rule.max_content_before is None or before <= rule.max_content_before)


def topic_bound(rule: PatternRule, outside: int, before: int) -> str | None:
    """The first of ``rule``'s topic-word bounds that refuses that many topic words around its match, or None."""
    if outside < rule.min_content_words:
        return "min_content_words"
    if rule.max_content_words is not None and outside > rule.max_content_words:
        return "max_content_words"
    if rule.max_content_before is not None and before > rule.max_content_before:
        return "max_content_before"
    return None


def topic_note(rule: PatternRule, outside: int, before: int) -> str:
    """The topic words counted around a match, and the rule's bounds, in words (``explain``'s note)."""
    bounds = [f"at least {rule.min_content_words}"] if rule.min_content_words else []
    if rule.max_content_words is not None:
        bounds.append(f"at most {rule.max_content_words}")
    note = f"{outside} topic word(s) outside the match ({', '.join(bounds) or 'no bound'})"
    if rule.max_content_before is not None:
        note += f", {before} before it (at most {rule.max_content_before})"
    return note


class FollowUpLane(PatternLane):
    """Follow-up patterns, tried in order: a match stands when the word cap, the guards and the topic bounds allow."""

    def __init__(self, rules, context, *, order: float, longest: int):
        super().__init__(rules, stage="follow_up", decides=DecisionKind.FOLLOW_UP, order=order,
                         timeout=context.timeout, longest=longest)
        self.context = context
        self.settings = context.settings
        self.lexicon = context.lexicon
        self._known_words: frozenset | None = None
        # by the rule object's identity (the lane keeps its rules alive): another rule of the same id is checked afresh
        self._checks = {id(rule): self._check(rule) for rule in self.rules}

    def accept(self, rule, match, walk) -> bool:
        recorder = walk.recorder
        words = len(walk.tokens)
        cap, guarded, antecedent, bounded = self._checks.get(id(rule)) or self._check(rule)
        if words > cap:
            if recorder is not None:
                recorder.judged(rule, False, f"matched, but the message has {words} words and this rule takes at "
                                             f"most {cap}", "word_cap",
                                "max_words" if rule.max_words is not None else "max_follow_up_words")
            return False
        if guarded and not self._guards_pass(rule, match, walk):
            return False
        if antecedent and not self._antecedent(rule, match, walk.history, recorder):
            return False
        if not bounded:
            return True
        outside, before = walk.topic_counts(*match.span())
        ok = topic_ok(rule, outside, before)
        if recorder is not None:
            recorder.judged(rule, ok, topic_note(rule, outside, before), "topic_words",
                            topic_bound(rule, outside, before))
        return ok

    def _check(self, rule) -> tuple[int, bool, bool, bool]:
        """What :meth:`accept` checks of ``rule``'s match: its word cap, whether it is guarded, whether it
        requires an antecedent, whether it bounds the topic words (looked up once per rule, :attr:`_checks`)."""
        cap = rule.max_words if rule.max_words is not None else self.settings.max_follow_up_words
        return cap, rule.guarded, rule.requires_antecedent, rule.topic_bounded

    def word_cap(self, rule) -> int | None:
        return rule.max_words

    def unjudged(self, rule) -> int:
        # a rule with no guard, no antecedent to find and no topic bound: any match stands within the word cap
        cap, guarded, antecedent, bounded = self._check(rule)
        return -1 if guarded or antecedent or bounded else cap

    @staticmethod
    def _refuse(recorder, rule, why: str, setting: str, reason: str = "guard") -> bool:
        """Refuse ``rule``'s match for ``why`` (a guard, named by ``setting``, unless ``reason`` says otherwise)."""
        if recorder is not None:
            recorder.judged(rule, False, f"matched, but {why}", reason, setting)
        return False

    def _guards_pass(self, rule, m, walk) -> bool:
        """Whether a match of a guarded rule stands: lexicon head, and no name where the rule forbids one.

        Names are read in the message as typed (:mod:`cleo_rules.proper_names`); the
        match's start is mapped back from the normalised text.
        """
        if rule.head_in is not None:
            # the match ends on a head: its last word is in the set, and no plain
            # noun follows it (that would make a compound: "the boiler service")
            if self._head(rule, m, walk.text) is None and not self._bare_rare_head(m, walk):
                return self._refuse(walk.recorder, rule, f"it does not end on a word of the lexicon's {rule.head_in}",
                                    "head_in")
        if rule.unless_name or rule.unless_name_before:
            scanned = walk.message[: self.settings.max_scan_chars]
            if rule.unless_name:
                found = self.context.referents.names(scanned)
                if found:
                    return self._refuse(walk.recorder, rule, f"the message names {found[0].text!r}", "unless_name")
            else:
                start = original_span(scanned, m.start(), m.end(), walk.text)[0]
                why = self._antecedent_before(scanned, start)
                if why:
                    return self._refuse(walk.recorder, rule, why, "unless_name_before")
        return True

    def _head(self, rule, m, text: str) -> str | None:
        """The head word of the phrase a ``head_in`` rule matched, or None.

        The head is the last word of the match that is in the rule's lexicon
        set and not followed by a plain noun (which would make a compound
        that names its own thing: "the boiler service"); a match's last word
        may be a verb the pattern took in ("the album released": "album").
        """
        heads = self.lexicon.get(rule.head_in, frozenset())
        plain = self.lexicon.get("plain_nouns", frozenset())
        found = [(w.group(), w.end()) for w in WORD.finditer(m.group())]
        for i in range(len(found) - 1, max(len(found) - 3, 0), -1):
            word, end = found[i]
            if word not in heads:
                continue
            after = WORD.match(text, m.start() + end + 1) if text[m.start() + end:m.start() + end + 1] == " " else None
            if after is None or after.group() not in plain:
                return word
            return None
        return None

    def _bare_rare_head(self, m, walk) -> bool:
        """Whether the match ends on a word the lexicon does not know and is all the message says.

        The lexicon's noun set holds frequent words; a rare word ("the
        postcode", "the turnstiles") is read as a noun too, since rare words
        are mostly nouns, but only when the description is the whole of the
        message's topic (no topic word outside the match: "what is the
        postcode?", not "why are the amplifiers important?"), not a word
        formed as a verb's past or an adverb ("the relocated"), and only in a
        definite description (the match holds "the", "this", "that", "these"
        or "those"): a bare word ("hahaha", "Thai food") gets no such reading.
        """
        last = None
        definite = False
        for last in WORD.finditer(m.group()):
            definite = definite or last.group() in _DEFINITE
        if last is None or last.end() != len(m.group()) or not definite:
            return False
        word = last.group()
        if len(word) < 3 or not word.isalpha() or word.endswith(("ed", "ly")) or word in self._known():
            return False
        return walk.topic_counts(*m.span())[0] == 0

    def _known(self) -> frozenset:
        """Every word of the lexicon's sets."""
        known = self._known_words
        if known is None:
            known = self._known_words = frozenset().union(*self.lexicon.values())
        return known

    def _antecedent(self, rule, m, history, recorder) -> bool:
        """Whether a recent turn mentions what the match's head names ("the band" after "... the band ..."); for a
        rule with no ``head_in``, whether a recent turn of the assistant's says anything.

        A definite description points back only at something already
        mentioned ("the band" after "... the band ...") or at a part of a thing
        the assistant named ("the address" after "Golden Wok is ..."); with
        neither ("what is wrong with the printer?" out of the blue) it names a
        thing of the speaker's own. The last ``antecedent_reach`` turns, user
        and assistant, are read; the head matches in the singular or the
        plural.
        """
        recent = (history or ())[-self.settings.antecedent_reach:]
        if rule.head_in is None:
            # no head to look for: what the match points at is in the assistant's recent replies
            if any(said.role == ASSISTANT and said.content[: self.settings.max_scan_chars].strip() for said in recent):
                return True
            return self._refuse(recorder, rule, "no recent turn of the assistant's says anything it could point at"
                                if history else "there is no conversation before it", "requires_antecedent",
                                "no_antecedent")
        words = WORD.findall(m.group())
        nouns = self.lexicon.get(rule.head_in, frozenset())
        heads = [w for w in words[1:] if w in nouns] or words[-1:]  # "the band tour": band, or tour
        head = heads[-1] if heads else ""
        forms = set()
        for h in heads:
            forms |= {h, h + "s", h + "es", h.removesuffix("s"), h.removesuffix("es"),
                      h[:-1] + "ies" if h.endswith("y") else h, h[:-3] + "y" if h.endswith("ies") else h}
        forms.discard("")
        for said in recent:  # each read as far as a message is
            if forms & set(WORD.findall(normalize(said.content[: self.settings.max_scan_chars]))):
                return True
        # a thing the assistant named may own it ("the address" after "Golden Wok is ...")
        for said in recent:
            if said.role == ASSISTANT and self.context.referents.mentions(said):
                return True
        return self._refuse(recorder, rule, f"no recent turn mentions {head!r}" if history
                            else "there is no conversation before it", "requires_antecedent", "no_antecedent")

    def _antecedent_before(self, scanned: str, start: int) -> str:
        """What before ``start`` of the message (as typed) a reference there may point at, or ``""``.

        A name; a word for a person (the lexicon's ``people``: "my mom ... her");
        or a noun in an earlier sentence of the same message ("I'd like a cheap
        restaurant. It should be in the north.").
        """
        before = scanned[:start]
        found = [n for n in self.context.referents.names(scanned) if n.end <= start]
        if found:
            return f"the message names {found[0].text!r} before the match"
        people = self.lexicon.get("people", frozenset())
        nouns = self.lexicon.get("nouns", frozenset())
        # words are read as the rules read them, in normalised text ("don’t" is one word, as "don't" is);
        # sentences end where the message as typed has a stop and white space
        for w in WORD.findall(normalize(before)):
            if w in people:
                return f"{w!r}, a person, comes before the match"
        ends = [m.start() for m in re.finditer(r"[.?!]\s", before)]
        cut = ends[-1] if ends else -1
        if cut >= 0:
            for w in WORD.findall(normalize(before[:cut])):
                if w in nouns and w not in self.context.function_words:
                    return f"an earlier sentence of the message names {w!r}"
        return ""


class FollowUps(PatternFamily):
    """``kind: follow_ups``: :class:`~.patterns.PatternRule` of kind ``follow_up``, in two lanes: those tried
    before the vocabulary test, then those marked ``after_vocabulary``."""

    kind = FileKind.FOLLOW_UPS
    rule_kind = RuleKind.FOLLOW_UP
    decides = DecisionKind.FOLLOW_UP
    listed = 2
    noun = "a follow-up pattern"
    tally = Tally(1, "follow_ups", "follow-up patterns")

    def finish(self, rules, build):
        return tuple(sorted(super().finish(rules, build), key=lambda r: r.after_vocabulary))  # in the order tried

    def lanes(self, rules, context):
        s = context.settings
        # the most words a follow-up pattern takes (the pack's cap, or a rule's own)
        longest = max([s.max_follow_up_words] + [r.max_words for r in rules if r.max_words is not None])
        return [FollowUpLane([r for r in rules if not r.after_vocabulary], context, order=LaneOrder.FOLLOW_UPS, longest=longest),
                FollowUpLane([r for r in rules if r.after_vocabulary], context, order=LaneOrder.AFTER_VOCABULARY, longest=longest)]

    def miss(self, pack, rule, explanation, taken):
        short = short_of_follow_up(pack, explanation, taken)
        if short is not None:
            return short
        d = explanation.decision
        mine = next((a for a in explanation.attempts if a.rule == rule.id), None)
        if mine is not None and not mine.tried and taken:
            return f"{taken} first; narrow {d.rule} or move the example to it"
        if mine is None or mine.span is None:
            return no_match(taken)
        if mine.fired:
            return f"{taken} first; narrow {d.rule} or move the example to it"
        m = _TOPIC_NOTE.match(mine.note)
        outside = int(m.group("outside")) if m else None
        before = int(m.group("before")) if m and m.group("before") else None
        bounds = []
        if outside is not None and outside < rule.min_content_words:
            bounds.append(f"min_content_words ({rule.min_content_words}) wants at least that many topic words "
                          f"outside the match, it has {outside}")
        if outside is not None and rule.max_content_words is not None and outside > rule.max_content_words:
            bounds.append(f"max_content_words ({rule.max_content_words}) allows at most that many topic words "
                          f"outside the match, it has {outside}")
        if before is not None and rule.max_content_before is not None and before > rule.max_content_before:
            bounds.append(f"max_content_before ({rule.max_content_before}) allows at most that many topic words "
                          f"before the match, it has {before}")
        why = "; ".join(bounds) or mine.note
        then = f", and {taken}" if taken else ""
        return (f"the pattern matches {mine.matched!r} but a bound stops it: {why}{then}; change the bound or the "
                f"example")


FOLLOW_UPS = FollowUps()
