"""A pack's own examples, counterexamples and request forms, checked against the compiled pack.

Every example must fire its rule (a referent rule's: find its referent),
every counterexample and request form must not; each failure is a problem
placed at the example in its rule file (from the sources the pack keeps, so
nothing is read again), with help that says why it fails, from the same walk
``explain`` records (:func:`example_miss`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..decision import Decision
from ..errors import Problem
from ..history import read_history
from ..kinds import DecisionKind, RuleKind
from ..text import normalize
from .load import Source, pointer_join
from .model import Pack, ReferentRule

__all__ = ["example_case", "example_miss", "find_example_problems"]


def _referent_problems(pack: Pack, rule: ReferentRule, src: Source) -> list[Problem]:
    """A referent rule's examples must find their referent by this rule; its counterexamples nothing by it."""
    problems = []
    base = rule.pointer
    finder = pack.matcher.referents
    for key, cases in (("examples", rule.examples), ("counterexamples", rule.counterexamples)):
        for j, case in enumerate(cases):
            if not isinstance(case, Mapping):
                continue
            ptr = pointer_join(pointer_join(base, key), j)
            message = case.get("message", "")
            history = read_history(case.get("history") or ())  # the schema has checked its shape
            found = finder.find(normalize(message[: pack.settings.max_scan_chars]), message, history)
            got = "nothing" if found is None else f"{found.text!r} by {found.rule}"
            if key == "examples":
                want = case.get("referent")
                if found is None or found.rule != rule.id or found.text != want:
                    help = ("another referent rule is tried first and answers; narrow it or reorder the rules"
                            if found is not None and found.rule != rule.id else
                            "check the pattern matches the referring words, and that the history offers the referent")
                    problems.append(src.problem("E145", f"example {message!r} should find {want!r} by this rule, "
                                                f"but finds {got}", ptr, rule=rule.id, rank=8, help=help))
            elif found is not None and found.rule == rule.id:
                problems.append(src.problem("E146", f"counterexample {message!r} finds {found.text!r} by this rule",
                                            ptr, rule=rule.id, rank=8,
                                            help="narrow the pattern, or change the counterexample's history"))
    return problems


_TOPIC_NOTE = re.compile(r"(?P<outside>\d+) topic word\(s\) outside the match.*?(?:, (?P<before>\d+) before it)?$")


def _order(pack: Pack, rule_id: str) -> int:
    """Where ``rule_id`` is tried: corrections in file order, follow-up patterns in file order, the vocabulary test."""
    ids = [r.id for r in pack.corrections] + [r.id for r in pack.follow_ups]
    return ids.index(rule_id) if rule_id in ids else len(ids)


def _taker(pack: Pack, rule, other: str) -> str:
    """``other``, the rule that took a message, placed in the order relative to ``rule``."""
    kind = pack.rule(other).kind
    what = {RuleKind.CORRECTION: "a correction", RuleKind.FOLLOW_UP: "a follow-up pattern",
            RuleKind.VOCABULARY: "the vocabulary test"}[kind]
    if kind == RuleKind.VOCABULARY and rule.kind == RuleKind.VOCABULARY:
        return f"the vocabulary test, which names {other}"
    side = "earlier" if _order(pack, other) < _order(pack, rule.id) else "later"
    return f"{other} ({what}, {side} in the order)"


def example_miss(pack: Pack, rule, message: str, history=()) -> str:
    """Why ``message``, an example of ``rule``, does not fire it, and what to do: from :meth:`Pack.explain`.

    Names the rule that took the message (earlier or later in the order:
    corrections, follow-up patterns, the vocabulary test) or the bound that
    stopped it (``min_chars``, ``max_follow_up_words``,
    ``min/max_content_words``, ``max_content_before``).
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
    if rule.kind == RuleKind.CORRECTION:
        if mine is not None and mine.span is not None:
            return f"{taken} first; narrow {d.rule} or move the example to it"
        return (f"this rule's pattern does not match it{' and ' + taken if taken else ''}; widen the pattern "
                f"(it sees lower-case text with plain quotes), or remove the example")
    if d.kind == DecisionKind.CORRECTION:
        return f"{taken}: corrections are tried before follow-ups; narrow {d.rule} or move the example to it"
    if len(ex.words) > s.max_follow_up_words:
        return (f"it has {len(ex.words)} words, over max_follow_up_words ({s.max_follow_up_words}), so no follow-up "
                f"pattern or vocabulary test applies; shorten the example or raise max_follow_up_words in pack.yaml")
    if rule.kind == RuleKind.FOLLOW_UP:
        if mine is not None and not mine.tried and taken:
            return f"{taken} first; narrow {d.rule} or move the example to it"
        if mine is None or mine.span is None:
            return (f"this rule's pattern does not match it{' and ' + taken if taken else ''}; widen the pattern "
                    f"(it sees lower-case text with plain quotes), or remove the example")
        if not mine.fired:
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
            return (f"the pattern matches {mine.matched!r} but a bound stops it: {why}{then}; "
                    f"change the bound or the example")
        return f"{taken} first; narrow {d.rule} or move the example to it"
    # a vocabulary set
    if d.rule and pack.rule(d.rule).kind != RuleKind.VOCABULARY:
        return f"{taken}: follow-up patterns are tried before the vocabulary test; narrow {d.rule} or move the example"
    test = next((a for a in reversed(ex.attempts) if a.stage == "vocabulary"), None)
    if test is not None and not test.fired:
        return f"the vocabulary test does not hold: {test.note}; add them to a vocabulary set, or remove the example"
    if d.rule and d.rule != rule.id:
        other = pack.rule(d.rule)
        return (f"the vocabulary test names {d.rule}: its role {other.role!r} outranks this set's {rule.role!r} "
                f"(choice, nod, negation, closing, request, anaphor); move the example to {d.rule}")
    return "add its missing words to this set"


def example_case(item) -> tuple[str, tuple]:
    """An example as ``(message, history)``: a string, or ``{message, history}`` for one that needs a conversation."""
    if isinstance(item, Mapping):
        return str(item.get("message", "")), tuple(item.get("history") or ())
    return item, ()


def find_example_problems(pack: Pack) -> list[Problem]:
    """Every example must fire its rule; counterexamples and request forms must not."""
    problems = []
    for rule in pack.referent_rules:
        problems += _referent_problems(pack, rule, pack.source(rule))
    for rule in pack.rules:
        src = pack.source(rule)
        base = rule.pointer
        want_kind = RuleKind(rule.kind).decides

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
                    problems.append(src.problem("E134", f"example {msg!r} should be a follow-up thanks to these words, but it is {said(d)}",
                                                pointer_join(pointer_join(base, "examples"), j), rule=rule.id, rank=8,
                                                help=example_miss(pack, rule, msg, history)))
                continue
            if d.rule != rule.id or d.kind != want_kind:
                help = example_miss(pack, rule, msg, history)
                problems.append(src.problem("E134", f"example {msg!r} does not fire this rule: it is {said(d)}",
                                            pointer_join(pointer_join(base, "examples"), j), rule=rule.id, rank=8, help=help))
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
                                            help="narrow the pattern (word boundaries, required words) or remove the counterexample"))
        for j, msg in enumerate(getattr(rule, "request_forms", ())):
            d = pack.classify(msg)
            if d.kind != DecisionKind.FOLLOW_UP or d.rule == rule.id:
                problems.append(src.problem("E136", f"request form {msg!r} must classify follow_up, but it is {said(d)}",
                                            pointer_join(pointer_join(base, "request_forms"), j), rule=rule.id, rank=7,
                                            help="a request ('try that one') is not a correction: narrow the correction pattern, "
                                                 "or add the request's words to the vocabulary"))
    return problems
