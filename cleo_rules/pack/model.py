"""The compiled pack and its rules: frozen values, made by :mod:`.compile`.

A :class:`Pack` holds its settings, its rules in the order they are listed,
the matcher built from them, and what it was built from: the manifest and
every rule file as loaded (:class:`~cleo_rules.pack.load.Source`, with the
position of every value), and, on each rule, the file, line and JSON
pointer it was defined at. So a stage that reports on a rule (its examples,
its corpus templates, the required version) finds the place at hand and
never reads a file again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ..decision import Decision
from ..explain import Explanation
from ..kinds import DecisionKind, RuleKind
from ..matcher import Matcher
from .load import Source

__all__ = ["DEFAULT_CONTEXT", "Pack", "PatternRule", "ReferentRule", "Settings", "VocabSet"]

DEFAULT_CONTEXT = {
    "header": "Memory recalled for this turn (searched for: {query}):",
    "snippet": "- From the conversation \"{title}\" ({date}): {text}",
    "passage": "- From the document \"{title}\" ({date}): {text}",
    "skipped": "No memory search was made for this turn.",
    "empty": "A memory search was made for this turn (searched for: {query}); it found nothing relevant.",
    "footer": "",
}


@dataclass(frozen=True)
class Settings:
    min_chars: int = 10
    max_follow_up_words: int = 12
    combine: str = "{anchor}\n{message}"
    timeout_ms: float = 50
    max_scan_chars: int = 4000
    anchor_lookback: int = 50
    referents: bool = True
    combine_resolved: str = "{referent}\n{message}"
    reply_words: int = 20
    max_referent_words: int = 12
    antecedent_reach: int = 6


@dataclass(frozen=True)
class VocabSet:
    """A vocabulary set: low-content words and phrases with a ``role``.

    ``file`` and ``line`` name where it is defined, ``pointer`` its place in
    that file's document (``/sets/2``).
    """

    id: str
    role: str
    description: str
    words: tuple[str, ...]
    token_patterns: tuple[str, ...]
    examples: tuple[str, ...]
    counterexamples: tuple[str, ...]
    file: str
    line: int
    generate: Mapping | None = None
    kind: RuleKind = RuleKind.VOCABULARY
    pointer: str = ""


@dataclass(frozen=True)
class PatternRule:
    """A correction or follow-up pattern (``kind``), with its bounds and guards; placed as :class:`VocabSet`."""

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

    @property
    def guarded(self) -> bool:
        """Whether a match must also pass a check on the text as typed or on the lexicon."""
        return self.unless_name_before or self.unless_name or self.head_in is not None

    @property
    def topic_bounded(self) -> bool:
        """Whether the rule bounds the topic words around its match."""
        return self.max_content_words is not None or bool(self.min_content_words) \
            or self.max_content_before is not None


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


class Pack:
    """A compiled, immutable rule pack.

    ``classify(message, history=())`` returns a :class:`Decision`;
    ``explain`` also lists every rule tried. Attributes: ``name``,
    ``version``, ``locale``, ``content_hash``, ``settings``, ``rules``,
    ``context`` (templates for the context block), ``slots`` (corpus fillers),
    ``referent_rules`` and ``lexicon`` (word sets by name); ``manifest`` and
    ``sources`` (each rule file by its name in the manifest, in that order)
    are the files it was built from, as loaded, with positions.
    ``requirements``, what each pattern requires of a text for the matcher's
    prefilter, is given only by a pack read back from the compiled-pack cache
    (:mod:`.snapshot`); otherwise the matcher works them out.
    """

    __slots__ = ("name", "version", "locale", "description", "path", "content_hash", "settings",
                 "vocab_sets", "follow_ups", "corrections", "context", "slots", "slots_seed", "referent_rules",
                 "lexicon", "referent_words", "manifest", "sources", "_by_file", "_by_id", "_matcher", "_frozen",
                 "__weakref__")

    def __init__(self, *, name, version, locale, description, path, content_hash, settings,
                 vocab_sets, follow_ups, corrections, context, slots, slots_seed, referent_rules=(),
                 lexicon=MappingProxyType({}), referent_words=MappingProxyType({}), manifest: Source | None = None,
                 sources: Mapping[str, Source] = MappingProxyType({}), requirements=None):
        for key, value in locals().items():
            if key not in ("self", "requirements"):
                object.__setattr__(self, key, value)
        object.__setattr__(self, "_by_file", {src.display: src for src in sources.values()})
        object.__setattr__(self, "_by_id", {r.id: r for r in reversed(self.rules + tuple(referent_rules))})
        object.__setattr__(self, "_matcher",
                           Matcher(settings, vocab_sets, follow_ups, corrections, (name, version, content_hash),
                                   referent_rules=referent_rules, lexicon=lexicon, referent_words=referent_words,
                                   requirements=requirements))
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, key, value):
        raise AttributeError("a compiled Pack is immutable")

    def __repr__(self):
        return f"<Pack {self.name} {self.version} ({self.content_hash}) from {self.path}>"

    @property
    def rules(self) -> tuple:
        """Every classification rule, as reports list them: corrections, vocabulary sets, follow-up patterns.

        (The matcher tries the corrections, then the follow-up patterns, then
        the vocabulary test, then the follow-up patterns marked
        ``after_vocabulary``; ``referent_rules`` are apart.)
        """
        return self.corrections + self.vocab_sets + self.follow_ups

    def rule(self, rule_id: str):
        """The classification or referent rule with this id; ``KeyError`` when the pack has none."""
        return self._by_id[rule_id]

    def source(self, rule) -> Source:
        """The rule file ``rule`` was defined in, as loaded (``KeyError`` for a rule the pack was not built
        from its files with)."""
        return self._by_file[rule.file]

    def classify(self, message: str, history=()) -> Decision:
        """Classify ``message`` given the conversation before it, oldest first.

        History items are strings (user messages) or ``{"role": "user" |
        "assistant", "content": str}`` (see :mod:`cleo_rules.history`).
        """
        return self._matcher.classify(message, history)

    def explain(self, message: str, history=()) -> Explanation:
        """The decision on ``message`` and every rule's part in it, from the same walk as :meth:`classify`."""
        return self._matcher.explain(message, history)

    def kind_of(self, message: str) -> DecisionKind:
        return self._matcher.kind_of(message)

    @property
    def matcher(self) -> Matcher:
        return self._matcher
