"""What the pattern families share: :class:`PatternRule`, building a pattern, and the lane that searches them.

Corrections (:mod:`.corrections`) and follow-up patterns (:mod:`.follow_ups`)
are both :class:`PatternRule`; referent rules (:mod:`.referents`) are built
from their patterns the same way (:func:`build_pattern`). A
:class:`PatternLane` searches its rules in file order, only those the
prefilter names, each under the pack's time limit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..kinds import DecisionKind, RuleKind
from ..walk import Lane, limited, retried
from .base import Build, Family, RuleItem

__all__ = ["PatternFamily", "PatternLane", "PatternRule", "build_pattern", "listed", "short_of_follow_up"]


@dataclass(frozen=True)
class PatternRule:
    """A correction or follow-up pattern (``kind``), with its bounds and guards.

    ``after_assistant`` and ``names_reply`` are a correction's guards (:mod:`.corrections`): the last turn is the
    assistant's; and, beside it, every word of the match's first group (the whole match without one) is in that
    reply.

    ``file`` and ``line`` name where it is defined, ``pointer`` its place in
    that file's document (``/rules/2``).
    """

    id: str
    kind: RuleKind  # RuleKind.FOLLOW_UP or RuleKind.CORRECTION
    description: str
    pattern: str
    examples: tuple[str, ...]
    counterexamples: tuple[str, ...]
    file: str
    line: int
    request_forms: tuple[str, ...] = ()
    max_content_words: int | None = None
    min_content_words: int = 0
    max_content_before: int | None = None
    generate: Mapping | None = None
    compiled: Any = field(default=None, compare=False, repr=False)
    max_words: int | None = None
    unless_name_before: bool = False
    unless_name: bool = False
    head_in: str | None = None
    after_vocabulary: bool = False
    requires_antecedent: bool = False
    pointer: str = ""
    after_assistant: bool = False
    names_reply: bool = False

    @property
    def guarded(self) -> bool:
        """Whether a match must also pass a check on the text as typed or on the lexicon."""
        return self.unless_name_before or self.unless_name or self.head_in is not None

    @property
    def topic_bounded(self) -> bool:
        """Whether the rule bounds the topic words around its match."""
        return self.max_content_words is not None or bool(self.min_content_words) \
            or self.max_content_before is not None


def listed(value) -> tuple:
    """A list of the rule file as a tuple; anything else (the schema's finding) as nothing."""
    return tuple(value) if isinstance(value, list) else ()


def _pattern_source(item: dict) -> str | None:
    pat = item.get("pattern")
    if isinstance(pat, list):  # an item that is not a string is the schema's finding
        return "|".join(f"(?:{p})" for p in pat) if all(isinstance(p, str) for p in pat) else None
    return pat if isinstance(pat, str) else None


def build_pattern(item: dict, at: RuleItem) -> tuple[str, Any] | None:
    """``(pattern, compiled)`` of a rule's ``pattern`` (a regex, or a list of them joined as alternatives),
    linted (:func:`~cleo_rules.reading.validate.lint_pattern`); None when it does not compile or the rule is not
    built. Its bounds are checked too: ``min_content_words`` above ``max_content_words`` (E141)."""
    # only a pack being compiled is linted: jsonschema is imported when one is
    from ..reading.validate import lint_pattern

    pattern = _pattern_source(item)
    if not isinstance(pattern, str):
        return None
    problems = at.build.problems
    pptr = at.at("pattern")
    if isinstance(item.get("pattern"), list):
        compiled = None
        for j, alt in enumerate(item["pattern"]):
            _, found = lint_pattern(at.src, at.at("pattern", j), at.id, alt)
            problems += found
        if not any(p.rule == at.id and p.code == "E130" for p in problems):
            compiled, found = lint_pattern(at.src, pptr, at.id, pattern)
            problems += [p for p in found if p.code not in ("E131", "E140")]
    else:
        compiled, found = lint_pattern(at.src, pptr, at.id, pattern)
        problems += found
    low, high = item.get("min_content_words"), item.get("max_content_words")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        at.problem("E141", f"min_content_words ({low}) is above max_content_words ({high}): no message can fire "
                           "this rule", at.at("min_content_words"), rank=4,
                   help="lower min_content_words or raise max_content_words; both count the topic words outside "
                        "the match")
    if compiled is None or not at.claimed or at.id is None:
        return None
    return pattern, compiled


class PatternFamily(Family):
    """A family of :class:`PatternRule` (corrections, follow-up patterns): built the same way."""

    listed = 0
    rule_class = PatternRule

    @property
    def corpus_kind(self) -> str:
        return self.rule_kind

    def build(self, item: dict, at: RuleItem) -> PatternRule | None:
        found = build_pattern(item, at)
        if found is None or at.id is None:
            return None
        pattern, compiled = found
        rule = PatternRule(
            id=at.id, kind=RuleKind(self.rule_kind), description=item.get("description", ""), pattern=pattern,
            examples=listed(item.get("examples")), counterexamples=listed(item.get("counterexamples")),
            file=at.src.display, line=at.line, request_forms=listed(item.get("request_forms")),
            max_content_words=item.get("max_content_words"), min_content_words=item.get("min_content_words") or 0,
            max_content_before=item.get("max_content_before"), generate=item.get("generate"), compiled=compiled,
            max_words=item.get("max_words"), unless_name_before=bool(item.get("unless_name_before")),
            unless_name=bool(item.get("unless_name")), head_in=item.get("head_in"),
            after_vocabulary=bool(item.get("after_vocabulary")),
            requires_antecedent=bool(item.get("requires_antecedent")), pointer=at.pointer,
            after_assistant=bool(item.get("after_assistant")), names_reply=bool(item.get("names_reply")))
        if rule.head_in is not None:  # a lexicon set, checked once every file is read
            at.build.notes.setdefault("head_in", []).append((at.src, at.at("head_in"), at.id, rule.head_in))
        return rule

    def finish(self, rules: list, build: Build) -> tuple:
        _check_heads(build)
        return tuple(rules)


def _check_heads(build: Build) -> None:
    """Every ``head_in`` of the pattern rules built names a lexicon set of the pack (E143); checked once."""
    lexicon = build.data.get("lexicon", {})
    for src, ptr, rid, set_name in build.notes.pop("head_in", ()):
        if set_name not in lexicon:
            known = ", ".join(sorted(lexicon)) or "none: the pack lists no lexicon file"
            build.problems.append(src.problem(
                "E143", f"head_in names lexicon set {set_name!r}, which the pack does not have", ptr, rule=rid,
                rank=4, help=f"use one of the lexicon's sets ({known})"))


class PatternLane(Lane):
    """A lane of pattern rules: each searched in order, the first match that :meth:`accept` lets stand decides."""

    def __init__(self, rules, *, stage: str, decides: DecisionKind, order: float, timeout: float,
                 longest: int | None = None):
        self.rules = self.patterns = tuple(rules)
        self.stage, self.decides, self.order, self.longest = stage, decides, order, longest
        self.timeout = timeout

    def search(self, walk, candidates):
        rules, text, recorder, timeout = self.rules, walk.text, walk.recorder, self.timeout
        for index in candidates:
            rule = rules[index]
            m = limited(rule.id, rule.compiled.search, text, timeout)
            if recorder is not None:
                recorder.searched(rule, m)
            if m is not None and self.accept(rule, m, walk):
                return rule.id, m.span()
        return None

    def accept(self, rule, match, walk) -> bool:
        """Whether ``rule``'s ``match`` stands (every match does, unless a lane says otherwise)."""
        return True

    def unjudged(self, rule) -> int:
        """The most words a message may have for every match of ``rule`` to stand without :meth:`accept` being asked
        (it would let it stand and tell the recorder nothing); -1 when it must be asked.

        A lane that overrides :meth:`accept` overrides this beside it, in the same class: when the two are not
        defined together, :meth:`bind` asks :meth:`accept` of every match.
        """
        return sys.maxsize

    def bind(self, start: int):
        """:meth:`search` with what it looks up for each rule looked up once: each candidate's rule, its id, its
        compiled pattern's ``search`` and the words :meth:`unjudged` allows, by the matcher's numbering.

        A lane whose :meth:`search` is its own is asked through it (:meth:`Lane.bind <cleo_rules.walk.Lane.bind>`).
        """
        cls = type(self)
        if cls.search is not PatternLane.search:
            return super().bind(start)
        judged = _defined_by(cls, "accept") is _defined_by(cls, "unjudged")
        accept = self.accept
        entries = (None,) * start + tuple((rule, rule.id, rule.compiled.search, self.unjudged(rule) if judged else -1)
                                          for rule in self.rules)
        timeout = self.timeout

        def ask(walk, candidates):
            text, recorder = walk.text, walk.recorder
            for index in candidates:
                rule, rule_id, search, unjudged = entries[index]
                try:
                    m = search(text, timeout=timeout)
                except TimeoutError:
                    m = retried(rule_id, search, text, timeout)
                if recorder is not None:
                    recorder.searched(rule, m)
                if m is not None and (len(walk.tokens) <= unjudged or accept(rule, m, walk)):
                    return rule_id, m.span()
            return None

        return ask


def _defined_by(cls: type, name: str) -> type:
    """The class in ``cls``'s order of resolution that defines ``name``."""
    return next(k for k in cls.__mro__ if name in vars(k))


def short_of_follow_up(pack, explanation, taken: str) -> str | None:
    """Why a message cannot be any follow-up (a correction took it, or it is too long), or None."""
    d = explanation.decision
    s = pack.settings
    if d.kind == DecisionKind.CORRECTION:
        return f"{taken}: corrections are tried before follow-ups; narrow {d.rule} or move the example to it"
    if len(explanation.words) > s.max_follow_up_words:
        return (f"it has {len(explanation.words)} words, over max_follow_up_words ({s.max_follow_up_words}), so no "
                f"follow-up pattern or vocabulary test applies; shorten the example or raise max_follow_up_words "
                f"in pack.yaml")
    return None


def no_match(taken: str) -> str:
    """Help for an example its rule's pattern does not match."""
    return (f"this rule's pattern does not match it{' and ' + taken if taken else ''}; widen the pattern "
            f"(it sees lower-case text with plain quotes), or remove the example")
