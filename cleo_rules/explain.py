"""What the matcher did with one message, rule by rule: ``explain``.

A :class:`Recorder` is handed to the matcher's one walk
(:meth:`cleo_rules.matcher.Matcher.classify`), which tells it each step as
it takes it: the length test, the prefilter's candidates, every search and
its match, topic-word counts, the vocabulary test, a time limit run out.
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

    ``stage`` is ``"length"``, ``"correction"``, ``"follow_up"``,
    ``"vocabulary"`` or ``"referent"`` (a referent rule, tried on a follow-up
    with assistant turns in its history). ``tried`` says whether the walk ran the rule;
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


def _topic_note(rule, outside: int, before: int) -> str:
    bounds = [f"at least {rule.min_content_words}"] if rule.min_content_words else []
    if rule.max_content_words is not None:
        bounds.append(f"at most {rule.max_content_words}")
    note = f"{outside} topic word(s) outside the match ({', '.join(bounds) or 'no bound'})"
    if rule.max_content_before is not None:
        note += f", {before} before it (at most {rule.max_content_before})"
    return note


class Recorder:
    """Listens to one walk of ``matcher`` and builds its :class:`Explanation`.

    ``matcher`` is the :class:`~cleo_rules.matcher.Matcher` whose walk is
    recorded (its rules and settings name and word what it reports). The
    matcher calls the methods below, in walk order, only when a recorder is
    given; one recorder serves one message.
    """

    def __init__(self, matcher):
        self._matcher = matcher
        self._stages = ["correction"] * len(matcher.corrections) + ["follow_up"] * len(matcher.follow_ups)
        self._rules = matcher.corrections + matcher.follow_ups
        self._index = {rule.id: i for i, rule in enumerate(self._rules)}
        self._length: Attempt | None = None
        self._scanned = self._text = ""
        self._tokens: tuple[str, ...] = ()
        self._candidates: frozenset[int] = frozenset()
        self._searched: dict[int, Attempt] = {}
        self._last: int | None = None       # the pattern searched last
        self._topic: set[int] = set()       # patterns whose topic words were counted
        self._end: tuple[int, str] | None = None  # patterns from this index on were not tried, and why
        self._vocabulary: Attempt | None = None
        self._timed_out: str | None = None
        self._referents: list[Attempt] = []
        self._refused: dict[int, str] = {}  # patterns whose match a guard or word cap refused, and why

    # -- what the walk reports ------------------------------------------

    def skipped(self, stripped: int) -> None:
        """The message is under ``min_chars`` visible characters: nothing else runs."""
        self._length = self._length_attempt(stripped, True)

    def scanned(self, scanned: str, stripped: int, text: str, tokens, candidates) -> None:
        """The text the patterns see (``text``, normalised from ``scanned``), and the prefilter's candidates."""
        self._length = self._length_attempt(stripped, False)
        self._scanned, self._text, self._tokens = scanned, text, tuple(tokens)
        self._candidates = frozenset(candidates)

    def searched(self, index: int, match) -> None:
        """Pattern ``index`` (corrections, then follow-ups) was searched; ``match`` or None."""
        rule = self._rules[index]
        self._last = index
        if match is None:
            self._searched[index] = Attempt(self._stages[index], rule.id, False, note="no match")
            return
        start, end = match.span()
        span = original_span(self._scanned, start, end, self._text)
        self._searched[index] = Attempt(self._stages[index], rule.id, True, span,
                                        self._scanned[span[0]:span[1]])

    def topic(self, rule, outside: int, before: int, ok: bool) -> None:
        """The topic words around the last match were counted; ``ok``: the rule's bounds allow them."""
        index = self._index[rule.id]
        self._topic.add(index)
        a = self._searched[index]
        self._searched[index] = Attempt(a.stage, a.rule, ok, a.span, a.matched, _topic_note(rule, outside, before))

    def too_long(self, rule, words: int) -> None:
        """A follow-up pattern matched a message with more words than the rule takes."""
        cap = rule.max_words if rule.max_words is not None else self._matcher.settings.max_follow_up_words
        self._refuse(rule, f"matched, but the message has {words} words and this rule takes at most {cap}")

    def guard(self, rule, why: str) -> None:
        """A guarded follow-up pattern matched, and its guard refused the match."""
        self._refuse(rule, f"matched, but {why}")

    def _refuse(self, rule, note: str) -> None:
        index = self._index[rule.id]
        a = self._searched[index]
        self._searched[index] = Attempt(a.stage, a.rule, False, a.span, a.matched, note)

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

    def referent(self, part) -> None:
        """The query's referent part (found by a rule, or the last reply's opening words)."""
        if part.rule is None:
            self._referents.append(Attempt("referent", None, True, note=(
                f"no referent rule found one: the last reply's opening words, from {part.where}")))

    def stopped(self, words: int, length: int) -> None:
        """After the corrections, the message is too long for a follow-up."""
        s = self._matcher.settings
        if length > s.max_scan_chars:
            why = f"the message is over {s.max_scan_chars} characters; only corrections are looked for"
        else:
            why = f"{words} words; follow-ups have at most {s.max_follow_up_words}"
        self._end = (len(self._matcher.corrections), why)

    def vocabulary(self, head, covered, gap: int | None) -> None:
        """The vocabulary test: ``head`` as :meth:`Matcher._cover` gives it (None: failed).

        ``covered`` has one boolean per word; ``gap``, when the test stopped at
        the first word no entry covers, is that word's index.
        """
        if head is not None:
            rule = self._matcher.vocab_sets[head[0]].id
            self._vocabulary = Attempt("vocabulary", rule, True, note="every word is in the vocabulary")
            return
        content = [self._tokens[gap]] if gap is not None else \
            [t for t, c in zip(self._tokens, covered) if not c]
        if gap is not None:
            note = f"word not in the vocabulary: {content[0]} (the test stops at the first)"
        elif content:
            note = f"words not in the vocabulary: {', '.join(content)}"
        else:
            note = "only filler words"
        self._vocabulary = Attempt("vocabulary", None, False, note=note)

    def timed_out(self, rule_id: str) -> None:
        """A search ran out of time twice; the message is searched as typed."""
        self._timed_out = rule_id
        limit = f"timed out twice (limit {self._matcher.settings.timeout_ms:g} ms); the message is searched as typed"
        why = f"{rule_id} timed out; the message is searched as typed"
        index = self._index.get(rule_id)
        if index is not None:  # a pattern
            self._searched[index] = Attempt(self._stages[index], rule_id, False, note=limit)
            self._end = (index + 1, why)
            return
        # a vocabulary token pattern: in the vocabulary test, or counting the
        # topic words around a follow-up's match
        self._vocabulary = Attempt("vocabulary", rule_id, False, note=limit)
        last = self._last
        if last is not None and self._stages[last] == "follow_up" and last not in self._topic \
                and self._searched[last].fired:
            a = self._searched[last]
            self._searched[last] = Attempt(a.stage, a.rule, False, a.span, a.matched,
                                           f"matched, but its topic words could not be counted: {why}")
            self._end = (last + 1, why)

    # -- the result ------------------------------------------------------

    def explanation(self, decision: Decision) -> Explanation:
        """Every rule's attempt, in the order they are applied, for ``decision`` (the walk's own)."""
        assert self._length is not None, "the walk reported nothing"
        if self._length.fired:
            return Explanation(decision, "", (), (self._length,))
        end = self._end
        late = self._matcher._late  # follow-up patterns from here on come after the vocabulary test
        if end is None and self._timed_out is None:
            if decision.rule in self._index:
                end = (self._index[decision.rule] + 1, f"{decision.rule} decided first")
            elif decision.rule is not None:  # the vocabulary test decided
                end = (late, f"{decision.rule} decided first")
        vocabulary = self._vocabulary
        if vocabulary is None:
            why = end[1] if end is not None and end[0] <= late else "the walk stopped before it"
            vocabulary = Attempt("vocabulary", None, False, note=f"not tried: {why}", tried=False)
        elif vocabulary.fired:
            vocabulary = Attempt(vocabulary.stage, vocabulary.rule, True, decision.span, decision.matched,
                                 vocabulary.note)
        attempts = [self._length]
        for index, rule in enumerate(self._rules):
            if index == late:
                attempts.append(vocabulary)
            if index in self._searched:
                attempts.append(self._searched[index])
            elif end is not None and index >= end[0]:
                attempts.append(Attempt(self._stages[index], rule.id, False, note=f"not tried: {end[1]}", tried=False))
            else:
                attempts.append(Attempt(self._stages[index], rule.id, False, note=PREFILTERED, tried=False))
        if late >= len(self._rules):
            attempts.append(vocabulary)
        attempts += self._referents
        return Explanation(decision, self._text, self._tokens, tuple(attempts))

    def _length_attempt(self, stripped: int, fired: bool) -> Attempt:
        min_chars = self._matcher.settings.min_chars
        return Attempt("length", None, fired,
                       note=f"{stripped} visible characters (format characters removed, ends stripped); "
                       f"under {min_chars} is skipped")

