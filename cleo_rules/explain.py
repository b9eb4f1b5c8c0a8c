"""What the matcher did with one message, rule by rule: ``explain``.

A :class:`Recorder` is handed to the matcher's one walk
(:meth:`cleo_rules.matcher.Matcher.classify`), which tells it each step as
it takes it: the length test, the prefilter's candidates, every search and
its match, what a lane then judged of it (topic-word counts, a guard), a
lane's own test (the vocabulary test), a time limit run out.
The recorder only listens; the decision is the one ``classify`` makes
without it, with the same prefilter and the same time limits. From what it
heard it builds an :class:`Explanation`: one :class:`Attempt` per rule, in
the order the rules are applied, spans in the user's own text. A rule the
walk did not search says why: the prefilter ruled it out, or an earlier
rule decided, or the walk stopped before it.

The explanation also names its **near misses** (:class:`NearMiss`): the
rules whose prefilter requirements the message meets (their words are in
it) and which did not take it, each with what stopped it, one of
:data:`REASONS`: the pattern does not match, the message has more words than
the rule takes, a guard, no antecedent or no referent in the conversation,
the topic words around the match, the message's length, a time limit. A
lane's whole test that ran and did not take the message (the vocabulary
test) is one too. This is what ``cleo-rules explain`` shows by default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .decision import Decision
from .near_misses import needs_and_lacks
from .text import original_span

__all__ = ["REASONS", "Attempt", "Explanation", "NearMiss", "Recorder"]

PREFILTERED = "not tried: its required words/strings are absent (prefilter)"
NO_MATCH = "the pattern does not match"

#: What stopped a near miss (:attr:`NearMiss.reason`), and what each means; ``setting`` names the rule's
#: key or the pack's setting at work where one is.
REASONS = {
    "no_match": "the prefilter's words are in the message, but the pattern does not match it",
    "word_cap": "the pattern matches, but the message has more words than the rule takes (setting: max_words, "
                "or the pack's max_follow_up_words)",
    "guard": "the pattern matches, but a guard refuses it (setting: head_in, unless_name or unless_name_before; "
             "for a correction, after_assistant or names_reply)",
    "no_antecedent": "the pattern matches, but no recent turn mentions what it names (setting: "
                     "requires_antecedent)",
    "topic_words": "the pattern matches, but the topic words around the match are outside a bound (setting: "
                   "min_content_words, max_content_words or max_content_before)",
    "no_referent": "a referent rule's pattern matches, but its selector finds nothing in the conversation "
                   "(setting: select)",
    "too_long": "not tried: the message is longer than the rule's stage takes (setting: max_follow_up_words or "
                "the pack's max_scan_chars)",
    "timeout": "its search ran out of time twice (setting: timeout_ms)",
    "test": "a stage's whole test (the vocabulary test) ran and did not take the message",
    "refused": "the pattern matches, but its stage refuses it for a reason of its own",
}


@dataclass(frozen=True)
class Attempt:
    """One rule in an :class:`Explanation`.

    ``stage`` is ``"length"``, the stage of a lane of the walk
    (:attr:`Lane.stage <cleo_rules.walk.Lane.stage>`: with the bundled
    families ``"correction"``, ``"follow_up"`` or ``"vocabulary"``), or
    ``"referent"`` (a referent rule, tried on a follow-up with assistant turns
    in its history). ``tried`` says whether the walk ran the rule;
    ``fired`` whether it took the message. ``span`` is ``(start, end)`` of
    the rule's match in the user's own text (as :attr:`Decision.span`) and
    ``matched`` that text; for a match that a topic-word bound refused they
    are set and ``fired`` is false. ``note`` says why, in words.
    """

    stage: str
    rule: str | None
    fired: bool
    span: tuple[int, int] | None = None
    matched: str | None = None
    note: str = ""
    tried: bool = True


@dataclass(frozen=True)
class NearMiss:
    """A rule the prefilter named for the message that did not take it, and what stopped it.

    ``rule`` is its id (None for a stage's whole test that names no rule),
    ``stage`` its stage (as :attr:`Attempt.stage`), ``reason`` one of
    :data:`REASONS`, ``setting`` the rule's key or the pack's setting at
    work (``"head_in"``, ``"max_words"``, ``"max_follow_up_words"``...) or
    None, ``detail`` the walk's own words for it. ``span`` and ``matched``
    are the rule's match in the user's text when the pattern matched: the
    span the rule tested. ``needs`` and ``lacks`` say the same in a
    designer's words: what the rule needs, and what the message lacks
    (:func:`cleo_rules.near_misses.needs_and_lacks`).
    """

    rule: str | None
    stage: str
    reason: str
    detail: str
    setting: str | None = None
    span: tuple[int, int] | None = None
    matched: str | None = None
    needs: str = ""
    lacks: str = ""

    def to_dict(self) -> dict:
        return {"rule": self.rule, "stage": self.stage, "reason": self.reason, "setting": self.setting,
                "detail": self.detail, "span": list(self.span) if self.span else None, "matched": self.matched,
                "needs": self.needs, "lacks": self.lacks}


@dataclass(frozen=True)
class Explanation:
    """A decision and every rule's part in it (see :class:`Attempt`).

    ``normalized`` is the text the patterns saw and ``words`` its words;
    both are empty for a message skipped for its length. ``near_misses``
    are the rules the prefilter named that did not take the message, in the
    order tried, the referent rules last (see :class:`NearMiss`).
    """

    decision: Decision
    normalized: str
    words: tuple[str, ...]
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)
    near_misses: tuple[NearMiss, ...] = field(default_factory=tuple)

    @property
    def parts(self):
        """The query's parts (:attr:`Decision.parts`), each with where it came from."""
        return self.decision.parts

    def to_dict(self) -> dict:
        return {
            "decision": self.decision.to_dict(),
            "normalized": self.normalized,
            "words": list(self.words),
            "attempts": [
                {"stage": a.stage, "rule": a.rule, "fired": a.fired, "tried": a.tried,
                 "span": list(a.span) if a.span else None, "matched": a.matched, "note": a.note}
                for a in self.attempts
            ],
            "parts": [p.to_dict() for p in self.decision.parts],
            "near_misses": [n.to_dict() for n in self.near_misses],
        }


class Recorder:
    """Listens to one walk of ``matcher`` and builds its :class:`Explanation`.

    ``matcher`` is the :class:`~cleo_rules.matcher.Matcher` whose walk is
    recorded: its public ``lanes`` say which attempts are listed and in
    which order (one per rule of a lane that lists its rules, one for a
    lane's whole test otherwise: see :class:`~cleo_rules.walk.Lane`), its
    ``settings`` word the limits. The matcher and its lanes call the methods
    below, in walk order, only when a recorder is given; one recorder serves
    one message.
    """

    def __init__(self, matcher):
        self._settings = matcher.settings
        self._lanes = tuple(matcher.lanes)
        self._first: list[int] = []        # each lane's first slot
        self._stages: list[str] = []       # each slot's stage
        self._slot: dict[str, int] = {}    # rules with an attempt of their own: their slot
        self._owner: dict[str, int] = {}   # every rule of a lane: the lane's index
        self._lane_of = {id(lane): i for i, lane in enumerate(self._lanes)}
        self._pattern_slots: list[int] = []  # the prefilter's pattern numbers (every lane's, in order): their slot
        self._unnamed: dict[int, int | None] = {}  # slots of rules with no required words: their word cap
        for i, lane in enumerate(self._lanes):
            first = len(self._stages)
            self._first.append(first)
            for j, rule in enumerate(lane.rules):
                self._owner[rule.id] = i
                if lane.per_rule:
                    self._slot[rule.id] = first + j
            start = len(self._pattern_slots)
            self._pattern_slots += [first + j if lane.per_rule else first for j in range(len(lane.patterns))]
            if lane.per_rule:
                for j in range(len(lane.patterns)):
                    if start + j in matcher.unconditional:
                        self._unnamed[first + j] = matcher.word_caps[start + j]
            self._stages += [lane.stage] * lane.slots
        self._capped: dict[int, str] = {}  # slots the prefilter left out for the message's length: why
        # the walk's length gate stands before the first lane with a bound
        self._gate = next((self._first[i] for i, lane in enumerate(self._lanes) if lane.longest is not None),
                          len(self._stages))
        self._length: Attempt | None = None
        self._scanned = self._text = ""
        self._tokens: tuple[str, ...] = ()
        self._attempts: dict[int, Attempt] = {}
        self._last: int | None = None       # the slot searched last
        self._judged: set[int] = set()      # slots whose match a lane then judged (a guard, a word cap, topic words)
        self._end: tuple[int, str] | None = None  # slots from this one on were not tried, and why
        self._timed_out: str | None = None
        self._passed: dict[int, str] = {}   # lanes passed over for the message's length: why
        self._referents: list[Attempt] = []
        self._candidates: frozenset[int] = frozenset()  # the slots of the patterns the prefilter named
        self._why: dict[int, tuple[str, str | None]] = {}  # a slot that did not take the message: reason, setting
        self._stop: str | None = None       # the setting that stopped the walk for the message's length
        self._referent_misses: list[NearMiss] = []
        self._referent_rules = tuple(r.id for r in getattr(getattr(matcher, "referents", None), "rules", ()))
        self._named_referents: frozenset[str] = frozenset()  # the referent rules the prefilter named
        self._length_chars = 0

    # -- what the walk reports ------------------------------------------

    def skipped(self, stripped: int) -> None:
        """The message is under ``min_chars`` visible characters: nothing else runs."""
        self._length = self._length_attempt(stripped, True)

    def scanned(self, scanned: str, stripped: int, text: str, tokens, candidates, referents=()) -> None:
        """The text the patterns see (``text``, normalised from ``scanned``), and the prefilter's candidates:
        the lanes' pattern numbers (``candidates``) and the referent rules' (``referents``, numbered from 0)."""
        self._length = self._length_attempt(stripped, False)
        ids = self._referent_rules
        self._named_referents = frozenset(ids[i] for i in referents if i < len(ids))
        self._scanned, self._text, self._tokens = scanned, text, tuple(tokens)
        slots = self._pattern_slots
        self._candidates = frozenset(slots[c] for c in candidates if c < len(slots))
        n = len(self._tokens)
        self._capped = {slot: f"not tried: the message has {n} words and this rule takes at most {cap} (prefilter)"
                        for slot, cap in self._unnamed.items() if cap is not None and n > cap}

    def searched(self, rule, match) -> None:
        """``rule``'s pattern was searched (a rule with an attempt of its own); ``match`` or None."""
        slot = self._slot[rule.id]
        self._last = slot
        if match is None:
            self._attempts[slot] = Attempt(self._stages[slot], rule.id, False, note="no match")
            self._why[slot] = ("no_match", None)
            return
        start, end = match.span()
        span = original_span(self._scanned, start, end, self._text)
        self._attempts[slot] = Attempt(self._stages[slot], rule.id, True, span, self._scanned[span[0]:span[1]])

    def judged(self, rule, ok: bool, note: str, reason: str | None = None, setting: str | None = None) -> None:
        """``rule``'s match (the last :meth:`searched`) was then judged: it stands (``ok``) or not, and why:
        ``note`` in words; for a match refused, ``reason`` (one of :data:`REASONS`, ``"refused"`` when not
        given) and the rule's key or pack setting at work (``setting``)."""
        slot = self._slot[rule.id]
        self._judged.add(slot)
        a = self._attempts[slot]
        self._attempts[slot] = Attempt(a.stage, a.rule, ok, a.span, a.matched, note)
        if not ok:
            self._why[slot] = (reason or "refused", setting)

    def attempt(self, lane, slot: int, attempt: Attempt) -> None:
        """``lane`` (one of the matcher's) reports its attempt at ``slot`` (0 for a lane with one test)."""
        self._attempts[self._first[self._lane_of[id(lane)]] + slot] = attempt

    def referent_tried(self, rule, match, found, note: str = "") -> None:
        """Referent rule ``rule`` was tried on the message: its ``match`` (or None) and what it ``found``.

        A rule passed over without a match says why in ``note``: the
        prefilter (:data:`PREFILTERED`), or a guard (a rule with
        ``unless_name``); with no note its pattern did not match.
        """
        # only a rule the prefilter named is a near miss (a correction after an offer searches every choosing
        # rule for its replacement, named or not)
        named = rule.id in self._named_referents
        if match is None:
            self._referents.append(Attempt("referent", rule.id, False, note=note or "no match"))
            if note != PREFILTERED and named:
                reason, setting = (("no_match", None) if not note else
                                   ("guard", "unless_name") if getattr(rule, "unless_name", False) else
                                   ("refused", None))
                self._referent_misses.append(self._miss(rule, rule.id, "referent", reason, note or NO_MATCH,
                                                        setting))
            return
        start, end = match.span()
        span = original_span(self._scanned, start, end, self._text)
        if found is None:
            note = f"matched, but its selector ({rule.select}) found nothing in the conversation"
            self._referent_misses.append(self._miss(rule, rule.id, "referent", "no_referent", note, "select", span,
                                                    self._scanned[span[0]:span[1]]))
        else:
            note = (f"{rule.select}: {found.text!r} from {found.said.where}, "
                    f"{found.span[0]}..{found.span[1]} of that turn")
        self._referents.append(Attempt("referent", rule.id, found is not None, span,
                                       self._scanned[span[0]:span[1]], note))

    def named_choice(self, rule_id: str, choice) -> None:
        """No rule took the message, but it names one option of the last offer: a choice by ``rule_id``."""
        self._referents.append(Attempt("referent", rule_id, True, note=(
            f"names an option of the last offer: {choice.text!r} from {choice.said.where}, "
            f"{choice.span[0]}..{choice.span[1]} of that turn; the rest of the message is in the vocabulary")))

    def referent(self, part) -> None:
        """The query's referent part (found by a rule, or the last reply's opening words)."""
        if part.rule is None:
            self._referents.append(Attempt("referent", None, True, note=(
                f"no referent rule found one: the last reply's opening words, from {part.where}")))

    def passed(self, lane, words: int) -> None:
        """``lane`` was passed over: the message has more words than it takes."""
        self._passed[self._lane_of[id(lane)]] = lane.passed_note(words)

    def stopped(self, words: int, length: int) -> None:
        """The message is too long for a follow-up (over ``max_scan_chars`` characters, or over
        ``max_follow_up_words`` words and what any pattern takes): every lane from the first with a word bound
        on was not tried, or refused it."""
        s = self._settings
        if length > s.max_scan_chars:
            why = f"the message is over {s.max_scan_chars} characters; only corrections are looked for"
            self._stop = "max_scan_chars"
            self._length_chars = length
        else:
            why = f"{words} words; follow-ups have at most {s.max_follow_up_words}"
            self._stop = "max_follow_up_words"
        self._end = (self._gate, why)

    def timed_out(self, rule_id: str) -> None:
        """A search ran out of time twice; the message is searched as typed."""
        self._timed_out = rule_id
        limit = f"timed out twice (limit {self._settings.timeout_ms:g} ms); the message is searched as typed"
        why = f"{rule_id} timed out; the message is searched as typed"
        slot = self._slot.get(rule_id)
        if slot is not None:  # a rule with an attempt of its own
            self._attempts[slot] = Attempt(self._stages[slot], rule_id, False, note=limit)
            self._why[slot] = ("timeout", "timeout_ms")
            self._end = (slot + 1, why)
            return
        # a rule searched inside a lane's one test (a vocabulary token pattern): in that test, or
        # counting the topic words around a match
        lane = self._owner.get(rule_id)
        if lane is not None:
            self._attempts[self._first[lane]] = Attempt(self._lanes[lane].stage, rule_id, False, note=limit)
            self._why[self._first[lane]] = ("timeout", "timeout_ms")
        last = self._last
        if last is not None and last not in self._judged and self._attempts[last].fired:
            a = self._attempts[last]
            self._attempts[last] = Attempt(a.stage, a.rule, False, a.span, a.matched,
                                           f"matched, but its topic words could not be counted: {why}")
            self._why[last] = ("timeout", "timeout_ms")
            self._end = (last + 1, why)

    # -- the result ------------------------------------------------------

    def explanation(self, decision: Decision) -> Explanation:
        """Every rule's attempt, in the order they are applied, for ``decision`` (the walk's own)."""
        assert self._length is not None, "the walk reported nothing"
        if self._length.fired:
            return Explanation(decision, "", (), (self._length,))
        end = self._end
        if end is None and self._timed_out is None and decision.rule is not None:
            slot = self._slot.get(decision.rule)
            if slot is None and decision.rule in self._owner:
                slot = self._first[self._owner[decision.rule]]
            if slot is not None:
                end = (slot + 1, f"{decision.rule} decided first")
        attempts = [self._length]
        misses: list[NearMiss] = []
        for i, lane in enumerate(self._lanes):
            for j in range(lane.slots):
                slot = self._first[i] + j
                a = self._attempts.get(slot)
                if a is None:
                    why = f"not tried: {end[1]}" if end is not None and slot >= end[0] else None
                    stopped = why is not None
                    a = lane.untried(j, why if why is not None else
                                     self._passed.get(i, self._capped.get(slot, lane.untried_note)))
                    # a rule the prefilter named, not tried for the message's length (a walk stopped for a
                    # time limit or by the rule that decided has no near misses after it)
                    if slot in self._candidates and (self._stop is not None if stopped else i in self._passed):
                        misses.append(self._miss(self._rule_of(lane, j), a.rule, a.stage, "too_long", a.note,
                                                 self._stop if stopped else None))
                elif a.fired and a.span is None:  # a lane's one test decided: the decision's span is its
                    a = Attempt(a.stage, a.rule, True, decision.span, decision.matched, a.note)
                elif not a.fired:
                    miss = self._near_miss(slot, a, lane)
                    if miss is not None:
                        misses.append(miss)
                attempts.append(a)
        attempts += self._referents
        referents = self._referent_misses
        if decision.kind == "correction":
            # a correction asks the referent rules only whether it picks its replacement from an offer: one whose
            # pattern does not match says the message picks none, which is no near miss
            referents = [n for n in referents if n.reason != "no_match"]
        return Explanation(decision, self._text, self._tokens, tuple(attempts), tuple(misses + referents))

    def _near_miss(self, slot: int, a: Attempt, lane) -> NearMiss | None:
        """The near miss of an attempt that ran and did not take the message, or None: a rule of a lane without
        patterns, or a rule with no required words (the prefilter names neither), that did not match is no near
        miss."""
        why = self._why.get(slot)
        if a.span is None and slot in self._unnamed and (why is None or why[0] == "no_match"):
            return None  # a rule with no required words: the prefilter names it for every message
        if why is None:
            if not lane.per_rule:
                why = ("test", None)
            elif a.span is not None:
                why = ("refused", None)
            elif lane.patterns:
                why = ("no_match", None)
            else:
                return None
        reason, setting = why
        return self._miss(self._rule_of(lane, slot - self._first[self._lane_of[id(lane)]]), a.rule, a.stage, reason,
                          NO_MATCH if reason == "no_match" else a.note, setting, a.span, a.matched)

    @staticmethod
    def _rule_of(lane, j: int):
        """The rule at ``j`` of a lane that lists its rules, else None (a lane's whole test)."""
        return lane.rules[j] if lane.per_rule and j < len(lane.rules) else None

    def _miss(self, rule, rule_id, stage, reason, detail, setting=None, span=None, matched=None) -> NearMiss:
        """A :class:`NearMiss`, with what ``rule`` needs and what the message lacks in a designer's words."""
        needs, lacks = needs_and_lacks(reason, setting, detail.removeprefix("matched, but "), rule,
                                       matched=matched, span=span, words=len(self._tokens),
                                       length=self._length_chars, settings=self._settings)
        return NearMiss(rule_id, stage, reason, detail, setting, span, matched, needs, lacks)

    def _length_attempt(self, stripped: int, fired: bool) -> Attempt:
        min_chars = self._settings.min_chars
        return Attempt("length", None, fired,
                       note=f"{stripped} visible characters (format characters removed, ends stripped); "
                       f"under {min_chars} is skipped")
