"""A pack's own examples, counterexamples and request forms, checked against the compiled pack.

Every example must fire its rule (a referent rule's: find its referent),
every counterexample must not, and no request form may be a correction (judged
with no conversation before it; one given with a ``history`` must be a
follow-up after it); each failure is a problem
placed at the example in its rule file (from the sources the pack keeps, so
nothing is read again), with help that says why it fails, from the same walk
``explain`` records (:func:`example_miss`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..decision import Decision
from ..errors import Problem
from ..families import family_of
from ..kinds import DecisionKind, RuleKind
from ..reading.load import pointer_join
from .model import Pack

__all__ = ["example_case", "example_miss", "find_example_problems", "rule_example_problems"]


def _order(pack: Pack, rule_id: str) -> int:
    """Where ``rule_id`` is tried: the rules with an attempt of their own (patterns), in the walk's order, then the
    rest (the vocabulary test)."""
    ids = [r.id for lane in pack.matcher.lanes if lane.per_rule for r in lane.rules]
    return ids.index(rule_id) if rule_id in ids else len(ids)


def _taker(pack: Pack, rule, other: str) -> str:
    """``other``, the rule that took a message, placed in the order relative to ``rule``."""
    taker = pack.rule(other)
    if taker.kind == RuleKind.VOCABULARY and rule.kind == RuleKind.VOCABULARY:
        return f"the vocabulary test, which names {other}"
    side = "earlier" if _order(pack, other) < _order(pack, rule.id) else "later"
    return f"{other} ({family_of(taker).noun}, {side} in the order)"


def example_miss(pack: Pack, rule, message: str, history=()) -> str:
    """Why ``message``, an example of ``rule``, does not fire it, and what to do: from :meth:`Pack.explain`.

    Names the rule that took the message (earlier or later in the order:
    corrections, follow-up patterns, the vocabulary test) or the bound that
    stopped it (``min_chars``, ``max_follow_up_words``,
    ``min/max_content_words``, ``max_content_before``); what is particular
    to the rule's family is its :meth:`~cleo_rules.families.Family.miss`.
    """
    ex = pack.explain(message, history)
    d = ex.decision
    s = pack.settings
    if d.kind == DecisionKind.SKIP:
        return (f"it is under min_chars ({s.min_chars}) characters, so it is skipped before any rule is tried; "
                f"lengthen the example or lower min_chars in pack.yaml")
    mine = next((a for a in ex.attempts if a.rule == rule.id), None)
    if mine is not None and mine.note == "timed out":
        return "this rule's pattern ran out of time on it; simplify the pattern (see E131) or shorten the example"
    taken = f"{_taker(pack, rule, d.rule)} takes it" if d.rule and d.rule != rule.id else ""
    return family_of(rule).miss(pack, rule, ex, taken)


def example_case(item) -> tuple[str, tuple]:
    """An example as ``(message, history)``: a string, or ``{message, history}`` for one that needs a conversation."""
    if isinstance(item, Mapping):
        return str(item.get("message", "")), tuple(item.get("history") or ())
    return item, ()


def find_example_problems(pack: Pack) -> list[Problem]:
    """Every example must fire its rule; counterexamples and request forms must not.

    A rule family that judges its rules' examples itself (referent rules:
    :meth:`~cleo_rules.families.Family.example_problems`) does so; the
    rules apart from those that classify (referent rules) are judged first,
    then the rules that classify. In a pack
    built on others, every rule's are judged against the composed pack, and
    each problem names the pack its rule comes from.
    """
    problems = []
    every, listed = pack.all_rules(), len(pack.rules)
    for rule in every[listed:] + every[:listed]:  # the rules apart from those that classify (referents) first
        problems += rule_example_problems(pack, rule)
    return pack.placed(problems)


def rule_example_problems(pack: Pack, rule) -> list[Problem]:
    """The problems of one rule's examples, counterexamples and request forms in ``pack`` (not placed)."""
    found = family_of(rule).example_problems(pack, rule)
    return found if found is not None else _rule_example_problems(pack, rule)


def _rule_example_problems(pack: Pack, rule) -> list[Problem]:
    """A classification rule's examples must fire it; its counterexamples and request forms must not."""
    problems = []
    src = pack.source(rule)
    base = rule.pointer
    want_kind = family_of(rule).decides

    def said(d: Decision) -> str:
        if d.kind == DecisionKind.SKIP:
            return f"skipped (under {pack.settings.min_chars} characters)"
        return f"classified {d.kind}" + (f" by {d.rule}" if d.rule else "")

    filler = getattr(rule, "role", None) == "filler"
    for j, item in enumerate(rule.examples):
        msg, history = example_case(item)
        d = pack.classify(msg, history)
        if filler:  # filler never names a decision: its examples need only be follow-ups
            if d.kind != DecisionKind.FOLLOW_UP:
                problems.append(src.problem("E134", f"example {msg!r} should be a follow-up thanks to these words, "
                                            f"but it is {said(d)}", pointer_join(pointer_join(base, "examples"), j),
                                            rule=rule.id, rank=8, help=example_miss(pack, rule, msg, history)))
            continue
        if d.rule != rule.id or d.kind != want_kind:
            help = example_miss(pack, rule, msg, history)
            problems.append(src.problem("E134", f"example {msg!r} does not fire this rule: it is {said(d)}",
                                        pointer_join(pointer_join(base, "examples"), j), rule=rule.id, rank=8,
                                        help=help))
    for j, item in enumerate(rule.counterexamples):
        msg, history = example_case(item)
        d = pack.classify(msg, history)
        if filler and d.kind == DecisionKind.FOLLOW_UP and d.rule and d.rule.startswith("vocab"):
            problems.append(src.problem("E135", f"counterexample {msg!r} is a vocabulary follow-up ({d.rule})",
                                        pointer_join(pointer_join(base, "counterexamples"), j), rule=rule.id, rank=8,
                                        help="a word in it is low-content by mistake; remove it from the vocabulary"))
        elif d.rule == rule.id:
            problems.append(src.problem("E135", f"counterexample {msg!r} fires this rule"
                                        + (f" on {d.matched!r}" if d.matched else ""),
                                        pointer_join(pointer_join(base, "counterexamples"), j), rule=rule.id, rank=8,
                                        help="narrow the pattern (word boundaries, required words) or remove the "
                                             "counterexample"))
    for j, item in enumerate(getattr(rule, "request_forms", ())):
        msg, history = example_case(item)
        d = pack.classify(msg, history)
        where = pointer_join(pointer_join(base, "request_forms"), j)
        if d.kind == DecisionKind.CORRECTION:
            problems.append(src.problem("E136", f"request form {msg!r} is a correction: it is {said(d)}"
                                        + (f" on {d.matched!r}" if d.matched else ""), where, rule=rule.id, rank=7,
                                        help="a request ('try that one') is not a correction: narrow the "
                                             "correction pattern (or its guards) so the request is left alone"))
        elif history and d.kind != DecisionKind.FOLLOW_UP:
            problems.append(src.problem("E136", f"request form {msg!r} is no follow-up after its history: "
                                        f"it is {said(d)}", where, rule=rule.id, rank=7,
                                        help="with a history the request must be searched with what came before: "
                                             "add its words to the vocabulary or a follow-up pattern, or give it "
                                             "as a plain string to assert only that it is no correction"))
    return problems
