"""The referents family: what a follow-up points at in the conversation (see :mod:`cleo_rules.referent_finder`).

A ``referents`` file's rules do not classify: a follow-up's query is shaped
with the referent the first of them finds ("the second one": the second
option the assistant offered). They have no lane in the walk, but share its
prefilter scan; :class:`~cleo_rules.referent_finder.ReferentFinder` tries them.
The file also lists ``time_words`` and ``clause_verbs`` the finder reads
replies with. Their examples are conversations whose referent the rule must
find (:meth:`Referents.example_problems`), and so are their corpus cases.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import Problem
from ..history import read_history
from ..kinds import DecisionKind, FileKind, RuleKind
from ..text import normalize
from .base import Build, Family, RuleItem
from .patterns import build_pattern, listed

__all__ = ["REFERENTS", "REFERENT_CASES", "ReferentRule", "Referents"]

#: A referent rule's corpus lists: conversations whose referent it finds, and in which it finds none.
REFERENT_CASES = (
    ("positive", "p", DecisionKind.FOLLOW_UP),
    ("negative", "n", None),
)
WORD_LISTS = ("time_words", "clause_verbs")


@dataclass(frozen=True)
class ReferentRule:
    """A rule of a ``referents`` file: referring words and how their referent is selected."""

    id: str
    description: str
    pattern: str
    select: str
    examples: tuple  # of mappings: message, history, referent
    counterexamples: tuple
    file: str
    line: int
    reach: int | None = None
    compiled: Any = field(default=None, compare=False, repr=False)
    kind: RuleKind = RuleKind.REFERENT
    unless_name: bool = False
    generate: Mapping | None = None
    pointer: str = ""


class Referents(Family):
    """``kind: referents``: :class:`ReferentRule` rules and the word lists the finder reads replies with."""

    kind = FileKind.REFERENTS
    rule_kind = RuleKind.REFERENT
    decides = DecisionKind.FOLLOW_UP
    listed = None
    noun = "a referent rule"
    corpus_lists = REFERENT_CASES
    rule_class = ReferentRule

    @property
    def corpus_kind(self) -> str:
        return self.rule_kind

    def read(self, src, build: Build) -> None:
        words = build.data.setdefault("referent_words", {})
        for key in WORD_LISTS:
            if isinstance(src.data.get(key), list):
                words[key] = words.get(key, ()) + tuple(w for w in src.data[key] if isinstance(w, str))

    def build(self, item: dict, at: RuleItem) -> ReferentRule | None:
        found = build_pattern(item, at)
        if found is None or at.id is None:
            return None
        pattern, compiled = found
        return ReferentRule(id=at.id, description=item.get("description", ""), pattern=pattern,
                            select=item.get("select", ""), examples=listed(item.get("examples")),
                            counterexamples=listed(item.get("counterexamples")), file=at.src.display, line=at.line,
                            reach=item.get("reach"), compiled=compiled, unless_name=bool(item.get("unless_name")),
                            generate=item.get("generate"), pointer=at.pointer)

    def example_problems(self, pack, rule) -> list[Problem]:
        """A referent rule's examples must find their referent by this rule; its counterexamples nothing by it."""
        from ..reading.load import pointer_join

        src = pack.source(rule)
        problems = []
        finder = pack.matcher.referents
        for key, cases in (("examples", rule.examples), ("counterexamples", rule.counterexamples)):
            for j, case in enumerate(cases):
                if not isinstance(case, Mapping):
                    continue
                ptr = pointer_join(pointer_join(rule.pointer, key), j)
                message = case.get("message", "")
                history = read_history(case.get("history") or ())  # the schema has checked its shape
                found = finder.find(normalize(message[: pack.settings.max_scan_chars]), message, history)
                got = "nothing" if found is None else f"{found.text!r} by {found.rule}"
                if key == "examples":
                    want = case.get("referent")
                    if found is None or found.rule != rule.id or found.text != want:
                        help = ("another referent rule is tried first and answers; narrow it or reorder the rules"
                                if found is not None and found.rule != rule.id else
                                "check the pattern matches the referring words, and that the history offers the "
                                "referent")
                        problems.append(src.problem("E145", f"example {message!r} should find {want!r} by this rule, "
                                                    f"but finds {got}", ptr, rule=rule.id, rank=8, help=help))
                elif found is not None and found.rule == rule.id:
                    problems.append(src.problem("E146", f"counterexample {message!r} finds {found.text!r} by this "
                                                "rule", ptr, rule=rule.id, rank=8,
                                                help="narrow the pattern, or change the counterexample's history"))
        return problems

    def corpus_cases(self, generator, rule, group, lists, src, file_name, limit):
        return generator.referent_cases(rule, group, lists, src, file_name, limit)


REFERENTS = Referents()
