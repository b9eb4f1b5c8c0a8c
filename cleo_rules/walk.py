"""The parts of the matching walk that the matcher and the rule families share.

The matcher (:mod:`cleo_rules.matcher`) takes a message through an ordered
list of **lanes**. A lane is one stage of the walk, made by a rule family
(:mod:`cleo_rules.families`) from its rules: the corrections, the follow-up
patterns tried before the vocabulary test, the vocabulary test, those tried
after it. Each lane is asked in turn; the first that takes the message
decides its kind (:attr:`Lane.decides`), and a message no lane takes is
``substantive``.

What a lane reads of the message is one :class:`Walk`: the text as typed, the
normalised text the patterns see, its words, the history, the recorder that
``explain`` listens with, and what is worked out only when a lane asks (the
vocabulary's cover of the words, the words' spans). The walk's outcome is a
:class:`WalkResult`, a frozen value that the matcher turns into a
:class:`~cleo_rules.decision.Decision` and that ``explain`` and the query's
shaping read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from . import timed
from .explain import PREFILTERED, Attempt
from .kinds import DecisionKind

__all__ = ["Ask", "Lane", "LaneContext", "LaneOrder", "RuleTimeout", "Walk", "WalkResult", "limited", "retried"]


class RuleTimeout(Exception):
    """A search ran out of time twice; ``rule_id`` names the rule. The message is then searched as typed."""

    def __init__(self, rule_id: str):
        super().__init__(rule_id)
        self.rule_id = rule_id


def limited(rule_id: str, method, text: str, timeout: float):
    """``method(text)`` under the pack's time limit; :class:`RuleTimeout` names the rule.

    The limit counts the whole process's CPU time, so a fast pattern can
    run out of it while other threads work; a timed-out search is run
    again (:func:`retried`): a slow pattern costs at most twice the limit,
    and inside a gate only a reproducible timeout counts.
    """
    try:
        return method(text, timeout=timeout)
    except TimeoutError:
        pass
    return retried(rule_id, method, text, timeout)


def retried(rule_id: str, method, text: str, timeout: float):
    """``method(text)`` once more after it ran out of time (:func:`cleo_rules.timed.again`); :class:`RuleTimeout`
    names the rule when it runs out again. A lane that makes the first search itself calls this on its timeout."""
    try:
        return timed.again(method, text, timeout)
    except TimeoutError:
        raise RuleTimeout(rule_id) from None


@dataclass(frozen=True)
class LaneContext:
    """What every lane of one pack may read besides its own rules.

    ``settings`` are the pack's; ``lexicon`` its word sets by name;
    ``function_words`` the words of its filler vocabulary sets; ``referents``
    the :class:`~cleo_rules.referent_finder.ReferentFinder` of its referent rules
    (names and mentions in a text); ``vocabulary`` the cover of a message's
    words by the vocabulary sets (:class:`cleo_rules.families.vocabulary.Vocabulary`),
    from which topic words are counted; ``choice_rule`` the id of the rule
    that decides a message naming one option of the assistant's last offer
    (:mod:`cleo_rules.choices`; the vocabulary set of role ``choice``), None
    when the pack has none.
    """

    settings: Any
    lexicon: Mapping[str, frozenset[str]]
    function_words: frozenset[str]
    referents: Any
    vocabulary: Any
    choice_rule: str | None = None

    @property
    def timeout(self) -> float:
        """The time limit of one search, in seconds."""
        return self.settings.timeout_ms / 1000.0


class Walk:
    """One message on its way through the lanes: what every lane reads, each part worked out once.

    ``message`` is the text as typed, ``text`` the normalised text the
    patterns see (the first ``max_scan_chars`` characters), ``words`` the
    word pattern for that text and ``tokens`` its words; ``history`` the
    conversation before it (:class:`~cleo_rules.history.Said` items),
    ``recorder`` the :class:`~cleo_rules.explain.Recorder` or None. ``cover`` (the
    vocabulary's cover of the words, see :meth:`topic_counts`) and ``spans``
    (each word's span) are filled in by the first lane that needs them.
    ``history_read`` says whether a lane read :attr:`history`: a walk that did
    not has the outcome the message has on its own, with no history.
    """

    __slots__ = ("message", "text", "words", "tokens", "_history", "history_read", "recorder", "vocabulary", "cover",
                 "spans")

    def __init__(self, message: str, text: str, words, tokens: list[str], history, recorder, vocabulary):
        self.message = message
        self.text = text
        self.words = words
        self.tokens = tokens
        self._history = history
        self.history_read = False
        self.recorder = recorder
        self.vocabulary = vocabulary
        self.cover = None
        self.spans: list[tuple[int, int]] | None = None

    @property
    def history(self):
        """The conversation before the message; a lane that reads it sets :attr:`history_read`."""
        self.history_read = True
        return self._history

    def word_spans(self) -> list[tuple[int, int]]:
        """Each word's ``(start, end)`` in :attr:`text`."""
        if self.spans is None:
            self.spans = [w.span() for w in self.words.finditer(self.text)]
        return self.spans

    def topic_counts(self, start: int, end: int) -> tuple[int, int]:
        """Topic words (words the vocabulary does not cover) outside ``start:end`` of the text, and before it."""
        cover, spans = self.cover, self.spans
        if cover is None:
            cover = self.cover = self.vocabulary.cover(self.tokens)
        if spans is None:
            spans = self.word_spans()
        outside = before = 0
        for (s, e), c in zip(spans, cover[1]):
            if not c:
                if e <= start:
                    before += 1
                    outside += 1
                elif s >= end:
                    outside += 1
        return outside, before


@dataclass(frozen=True, slots=True)
class WalkResult:
    """The outcome of one walk: what the matcher makes a :class:`~cleo_rules.decision.Decision` of.

    ``kind`` and ``rule`` (the id of the rule that decided, or None);
    ``span``, the rule's match in ``text``, the normalised text the patterns
    saw (None for a message skipped for its length); ``note`` (why the
    message is searched as typed, after a time limit ran out); ``referents``,
    the indices of the referent rules whose requirements the text meets (the
    only ones a follow-up's shaping searches); ``lane``, the index in
    :attr:`Matcher.lanes <cleo_rules.matcher.Matcher.lanes>` of the lane that
    decided, or None.
    """

    kind: DecisionKind
    rule: str | None = None
    span: tuple[int, int] | None = None
    text: str | None = None
    note: str | None = None
    referents: tuple[int, ...] = ()
    lane: int | None = None


#: What the matcher asks a lane with (:meth:`Lane.bind`): ``ask(walk, candidates)``, answered as :meth:`Lane.search`.
Ask = Callable[["Walk", Sequence[int]], "tuple[str, tuple[int, int]] | None"]


class LaneOrder(IntEnum):
    """Where the bundled lanes stand in the walk (:attr:`Lane.order`, lowest tried first). A family's own lane
    takes a place between two of them: ``(LaneOrder.CORRECTIONS + LaneOrder.FOLLOW_UPS) / 2`` is after the
    corrections and before the follow-up patterns; ``LAST``, a lane's default, after every bundled one."""

    CORRECTIONS = 10
    FOLLOW_UPS = 20
    VOCABULARY = 30
    AFTER_VOCABULARY = 40  # the follow-up patterns marked ``after_vocabulary``
    LAST = 50


class Lane:
    """One stage of the walk: some of a family's rules, tried on the message in order.

    A lane says what it decides (``decides``), which rules it holds
    (``rules``, in the order tried) and which of them the prefilter indexes
    (``patterns``: rules searched by their compiled ``pattern``, so that the
    one scan of the message names those it can match; all of ``rules`` or
    none). ``longest`` is the most words a message it can take may have
    (it is passed over for a longer one); a lane with ``longest = None`` is
    tried on a message of any length, and the walk stops at the first lane
    with a bound when the message is longer than every such lane takes (or
    longer than ``max_scan_chars`` characters). ``order`` places the lane among the others
    (:class:`LaneOrder` names the bundled lanes' places).

    ``explain`` lists one attempt per rule (``per_rule``), or one for the
    lane's whole test; ``stage`` names the lane in each, and ``untried_note``
    says why an attempt the walk did not report was not tried.
    """

    stage: str = ""
    decides: DecisionKind = DecisionKind.FOLLOW_UP
    order: float = LaneOrder.LAST
    rules: tuple = ()
    patterns: tuple = ()
    longest: int | None = None
    per_rule: bool = True
    untried_note: str = PREFILTERED

    @property
    def slots(self) -> int:
        """How many attempts ``explain`` lists for this lane."""
        return len(self.rules) if self.per_rule else 1

    def untried(self, slot: int, note: str) -> Attempt:
        """The attempt ``explain`` lists at ``slot`` of this lane when the walk did not try it, and why."""
        rule = self.rules[slot].id if self.per_rule else None
        return Attempt(self.stage, rule, False, note=note, tried=False)

    def word_cap(self, rule) -> int | None:
        """The most words a message may have for ``rule`` (one of :attr:`patterns`) to take it, or None for no
        bound of its own: the prefilter does not name a rule with no required words for a longer message."""
        return None

    def passed_note(self, words: int) -> str:
        """What ``explain`` says of this lane's attempts when it was passed over for a message of ``words`` words."""
        return f"not tried: the message has {words} words, over the {self.longest} this lane takes"

    def search(self, walk: Walk, candidates: Sequence[int]) -> tuple[str, tuple[int, int]] | None:
        """``(rule id, span in walk.text)`` of the rule of this lane that takes the message, or None.

        ``candidates`` are the indices into :attr:`patterns` of the patterns
        whose requirements the text meets, ascending (any other cannot
        match); a lane of patterns is asked only when there is one. A search
        over the time limit raises :class:`RuleTimeout`
        (see :func:`limited`); ``walk.recorder``, when set, is told each
        step (:class:`~cleo_rules.explain.Recorder`).
        """
        raise NotImplementedError

    def bind(self, start: int) -> Ask:
        """What the matcher asks this lane with, made once when the matcher is built: ``ask(walk, candidates)``.

        ``candidates`` are numbered as the matcher's prefilter numbers every
        lane's patterns, this lane's from ``start`` (a lane without patterns
        gets none); ``ask`` answers as :meth:`search` does. This one numbers
        them from 0 and calls :meth:`search`; a lane may return one that does
        the same work with less per message, which must decide as
        :meth:`search` does and tell the recorder the same.
        """
        search = self.search
        if not start or not self.patterns:
            return search

        def ask(walk: Walk, candidates: Sequence[int]):
            return search(walk, [c - start for c in candidates])

        return ask
