"""The corrections family: a ``corrections`` file's rules, tried first on every message.

A correction ("no, I meant the blue one", "we tried that already") says the
last answer missed: the message is searched as typed, never combined with
the conversation. The first correction whose pattern matches, in file order,
takes a message of any length (its first ``max_scan_chars`` characters), unless
its guards refuse the match:

* ``after_assistant``: the last turn before the message is the assistant's.
  A form that rejects only what was just offered, answered or done ("wrong
  day, I said Thursday", "it's the blue ones we need") is a correction only
  as a reply to that turn; out of the blue it names its own topic.
* ``names_reply`` (which implies ``after_assistant``): every word of the
  match's first group (the whole match when it has none), other than the
  pack's function words, is in that reply, and there is one: a negated
  statement about a thing the reply named ("the Leeds flat isn't ours")
  contradicts it, one about anything else is news.
"""

from __future__ import annotations

from ..history import ASSISTANT
from ..kinds import DecisionKind, FileKind, RuleKind
from ..text import WORD, normalize
from ..walk import LaneOrder
from .base import Tally
from .patterns import PatternFamily, PatternLane, no_match

__all__ = ["CORRECTIONS", "CorrectionLane", "Corrections"]


class CorrectionLane(PatternLane):
    """Corrections, tried in order: a guarded rule's match stands only after, or about, the assistant's last reply."""

    def __init__(self, rules, context):
        super().__init__(rules, stage="correction", decides=DecisionKind.CORRECTION, order=LaneOrder.CORRECTIONS,
                         timeout=context.timeout)
        self.context = context

    def accept(self, rule, match, walk) -> bool:
        if not (rule.after_assistant or rule.names_reply):
            return True
        history, recorder = walk.history, walk.recorder
        last = history[-1] if history else None
        if last is None or last.role != ASSISTANT:
            return _refuse(recorder, rule, "the turn before it is not the assistant's" if last is not None
                           else "there is no conversation before it", "after_assistant")
        if not rule.names_reply:
            return True
        # the first group that took part (each pattern of a list is one alternative), else the whole match
        named = next((g for g in match.groups() if g is not None), None) or match.group()
        words = {_bare(w) for w in WORD.findall(named) if w not in self.context.function_words}
        reply = {_bare(w) for w in WORD.findall(normalize(last.content[: self.context.settings.max_scan_chars]))}
        unnamed = sorted(words - reply)
        if not words or unnamed:
            why = f"the assistant's last reply does not say {unnamed[0]!r}" if unnamed else \
                f"{named!r} holds only function words"
            return _refuse(recorder, rule, why, "names_reply")
        if recorder is not None:
            recorder.judged(rule, True, f"the assistant's last reply names {named!r}")
        return True

    def unjudged(self, rule) -> int:
        # an unguarded rule's match stands whatever the message's length
        return -1 if rule.after_assistant or rule.names_reply else super().unjudged(rule)


def _bare(word: str) -> str:
    """``word`` without a possessive ending ("reid's": "reid")."""
    return word[:-2] if word.endswith("'s") and len(word) > 2 else word


def _refuse(recorder, rule, why: str, setting: str) -> bool:
    if recorder is not None:
        recorder.judged(rule, False, f"matched, but {why}", "guard", setting)
    return False


class Corrections(PatternFamily):
    """``kind: corrections``: :class:`~.patterns.PatternRule` of kind ``correction``, in one lane before all others."""

    kind = FileKind.CORRECTIONS
    rule_kind = RuleKind.CORRECTION
    decides = DecisionKind.CORRECTION
    listed = 0
    noun = "a correction"
    tally = Tally(0, "corrections", "corrections")

    def lanes(self, rules, context):
        return [CorrectionLane(rules, context)]

    def miss(self, pack, rule, explanation, taken):
        mine = next((a for a in explanation.attempts if a.rule == rule.id), None)
        if mine is not None and mine.span is not None:
            if not mine.fired and not taken and (rule.after_assistant or rule.names_reply):
                return (f"the pattern matches {mine.matched!r} but a guard stops it: {mine.note}; write the "
                        f"example as {{message, history}} with the assistant's reply last")
            return f"{taken} first; narrow {explanation.decision.rule} or move the example to it"
        return no_match(taken)


CORRECTIONS = Corrections()
