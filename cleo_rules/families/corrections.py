"""The corrections family: a ``corrections`` file's rules, tried first on every message.

A correction ("no, I meant the blue one", "we tried that already") says the
last answer missed: the message is searched as typed, never combined with
the conversation. The first correction whose pattern matches, in file order,
takes a message of any length (its first ``max_scan_chars`` characters).
"""

from __future__ import annotations

from ..kinds import DecisionKind, FileKind, RuleKind
from ..walk import LaneOrder
from .base import Tally
from .patterns import PatternFamily, PatternLane, no_match

__all__ = ["CORRECTIONS", "Corrections"]


class Corrections(PatternFamily):
    """``kind: corrections``: :class:`~.patterns.PatternRule` of kind ``correction``, in one lane before all others."""

    kind = FileKind.CORRECTIONS
    rule_kind = RuleKind.CORRECTION
    decides = DecisionKind.CORRECTION
    listed = 0
    noun = "a correction"
    tally = Tally(0, "corrections", "corrections")

    def lanes(self, rules, context):
        return [PatternLane(rules, stage="correction", decides=self.decides, order=LaneOrder.CORRECTIONS,
                            timeout=context.timeout)]

    def miss(self, pack, rule, explanation, taken):
        mine = next((a for a in explanation.attempts if a.rule == rule.id), None)
        if mine is not None and mine.span is not None:
            return f"{taken} first; narrow {explanation.decision.rule} or move the example to it"
        return no_match(taken)


CORRECTIONS = Corrections()
