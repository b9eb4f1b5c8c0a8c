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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .decision import Decision
from .text import original_span

__all__ = ["Attempt", "Explanation", "Recorder"]

PREFILTERED = "not tried: its required words/strings are absent (prefilter)"


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
class Explanation:
    """A decision and every rule's part in it (see :class:`Attempt`).

    ``normalized`` is the text the patterns saw and ``words`` its words;
    both are empty for a message skipped for its length.
    """

    decision: Decision
    normalized: str
    words: tuple[str, ...]
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)

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
        for i, lane in enumerate(self._lanes):
            self._first.append(len(self._stages))
            for j, rule in enumerate(lane.rules):
                self._owner[rule.id] = i
                if lane.per_rule:
                    self._slot[rule.id] = len(self._stages) + j
            self._stages += [lane.stage] * lane.slots
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

    # -- what the walk reports ------------------------------------------

    def skipped(self, stripped: int) -> None:
        """The message is under ``min_chars`` visible characters: nothing else runs."""
        self._length = self._length_attempt(stripped, True)

    def scanned(self, scanned: str, stripped: int, text: str, tokens, candidates) -> None:
        """The text the patterns see (``text``, normalised from ``scanned``), and the prefilter's candidates."""
        self._length = self._length_attempt(stripped, False)
        self._scanned, self._text, self._tokens = scanned, text, tuple(tokens)

    def searched(self, rule, match) -> None:
        """``rule``'s pattern was searched (a rule with an attempt of its own); ``match`` or None."""
        slot = self._slot[rule.id]
        self._last = slot
        if match is None:
            self._attempts[slot] = Attempt(self._stages[slot], rule.id, False, note="no match")
            return
        start, end = match.span()
        span = original_span(self._scanned, start, end, self._text)
        self._attempts[slot] = Attempt(self._stages[slot], rule.id, True, span, self._scanned[span[0]:span[1]])

    def judged(self, rule, ok: bool, note: str) -> None:
        """``rule``'s match (the last :meth:`searched`) was then judged: it stands (``ok``) or not, and why."""
        slot = self._slot[rule.id]
        self._judged.add(slot)
        a = self._attempts[slot]
        self._attempts[slot] = Attempt(a.stage, a.rule, ok, a.span, a.matched, note)

    def attempt(self, lane, slot: int, attempt: Attempt) -> None:
        """``lane`` (one of the matcher's) reports its attempt at ``slot`` (0 for a lane with one test)."""
        self._attempts[self._first[self._lane_of[id(lane)]] + slot] = attempt

    def referent_tried(self, rule, match, found, note: str = "") -> None:
        """Referent rule ``rule`` was tried on the message: its ``match`` (or None) and what it ``found``."""
        if match is None:
            self._referents.append(Attempt("referent", rule.id, False, note=note or "no match"))
            return
        start, end = match.span()
        span = original_span(self._scanned, start, end, self._text)
        if found is None:
            note = f"matched, but its selector ({rule.select}) found nothing in the conversation"
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
        else:
            why = f"{words} words; follow-ups have at most {s.max_follow_up_words}"
        self._end = (self._gate, why)

    def timed_out(self, rule_id: str) -> None:
        """A search ran out of time twice; the message is searched as typed."""
        self._timed_out = rule_id
        limit = f"timed out twice (limit {self._settings.timeout_ms:g} ms); the message is searched as typed"
        why = f"{rule_id} timed out; the message is searched as typed"
        slot = self._slot.get(rule_id)
        if slot is not None:  # a rule with an attempt of its own
            self._attempts[slot] = Attempt(self._stages[slot], rule_id, False, note=limit)
            self._end = (slot + 1, why)
            return
        # a rule searched inside a lane's one test (a vocabulary token pattern): in that test, or
        # counting the topic words around a match
        lane = self._owner.get(rule_id)
        if lane is not None:
            self._attempts[self._first[lane]] = Attempt(self._lanes[lane].stage, rule_id, False, note=limit)
        last = self._last
        if last is not None and last not in self._judged and self._attempts[last].fired:
            a = self._attempts[last]
            self._attempts[last] = Attempt(a.stage, a.rule, False, a.span, a.matched,
                                           f"matched, but its topic words could not be counted: {why}")
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
        for i, lane in enumerate(self._lanes):
            for j in range(lane.slots):
                slot = self._first[i] + j
                a = self._attempts.get(slot)
                if a is None:
                    a = lane.untried(j, f"not tried: {end[1]}" if end is not None and slot >= end[0]
                                     else self._passed.get(i, lane.untried_note))
                elif a.fired and a.span is None:  # a lane's one test decided: the decision's span is its
                    a = Attempt(a.stage, a.rule, True, decision.span, decision.matched, a.note)
                attempts.append(a)
        attempts += self._referents
        return Explanation(decision, self._text, self._tokens, tuple(attempts))

    def _length_attempt(self, stripped: int, fired: bool) -> Attempt:
        min_chars = self._settings.min_chars
        return Attempt("length", None, fired,
                       note=f"{stripped} visible characters (format characters removed, ends stripped); "
                       f"under {min_chars} is skipped")
