"""The compiled pack and its settings: frozen values, made by :mod:`.compile`.

A :class:`Pack` holds its settings, each rule family's rules in the order
they are listed (:attr:`Pack.family_rules`), the matcher built from their
lanes, and what it was built from: the manifest and every rule file as
loaded (:class:`~cleo_rules.pack.load.LoadedFile`, with the position of every
value), and, on each rule, the file, line and JSON pointer it was defined at.
So a stage that reports on a rule (its examples, its corpus templates, the
required version) finds the place at hand and never reads a file again.
The rules themselves are defined by their families (:mod:`cleo_rules.families`):
:class:`VocabSet`, :class:`PatternRule`, :class:`ReferentRule`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .._deprecated import moved
from ..decision import Decision
from ..explain import Explanation
from ..families import build_matcher, family
from ..families.patterns import PatternRule
from ..families.referents import ReferentRule
from ..families.vocabulary import VocabSet
from ..kinds import DecisionKind, FileKind
from ..matcher import Matcher
from .load import LoadedFile

__all__ = ["DEFAULT_CONTEXT", "Pack", "PackSettings", "PatternRule", "ReferentRule", "VocabSet"]

DEFAULT_CONTEXT = {
    "header": "Memory recalled for this turn (searched for: {query}):",
    "snippet": "- From the conversation \"{title}\" ({date}): {text}",
    "passage": "- From the document \"{title}\" ({date}): {text}",
    "skipped": "No memory search was made for this turn.",
    "empty": "A memory search was made for this turn (searched for: {query}); it found nothing relevant.",
    "footer": "",
}


@dataclass(frozen=True)
class PackSettings:
    """A pack's ``settings:`` (the manifest's), each default the one its JSON Schema states
    (``schemas/pack.schema.json``, where each is described; a test holds the two equal)."""

    min_chars: int = 10
    max_follow_up_words: int = 12
    combine: str = "{anchor}\n{topic}\n{referent}\n{message}\n{reply}"
    timeout_ms: float = 50
    max_scan_chars: int = 4000
    anchor_lookback: int = 50
    referents: bool = True
    combine_resolved: str = "{anchor}\n{topic}\n{referent}\n{message}\n{reply}"
    reply_words: int = 20
    reply_max_words: int = 150
    combine_correction: str = "{anchor}\n{referent}\n{message}"
    max_referent_words: int = 12
    antecedent_reach: int = 6


class Pack:
    """A compiled, immutable rule pack.

    ``classify(message, history=())`` returns a :class:`Decision`;
    ``explain`` also lists every rule tried. Attributes: ``name``,
    ``version``, ``locale``, ``content_hash``, ``settings``
    (:class:`PackSettings`), ``family_rules`` (each rule family's rules by
    its file kind), ``rules`` (those that classify, as reports list them),
    ``referent_rules``, ``context`` (templates for the context block),
    ``slots`` (corpus fillers) and ``lexicon`` (word sets by name);
    ``manifest`` and ``sources`` (each rule file by its name in the
    manifest, in that order) are the files it was built from, as loaded,
    with positions. The bundled families' rules are given as ``vocab_sets``,
    ``follow_ups``, ``corrections`` and ``referent_rules`` (and read back so),
    any family's in ``family_rules``. ``requirements``, what each pattern
    requires of a text for the matcher's prefilter, is given only by a pack
    read back from the compiled-pack cache (:mod:`.snapshot`); otherwise the
    matcher works them out.
    """

    __slots__ = ("name", "version", "locale", "description", "path", "content_hash", "settings", "family_rules",
                 "context", "slots", "slots_seed", "lexicon", "referent_words", "manifest", "sources", "_rules",
                 "_by_file", "_by_id", "_matcher", "_frozen", "__weakref__")

    def __init__(self, *, name, version, locale, description, path, content_hash, settings, context, slots,
                 slots_seed, vocab_sets=(), follow_ups=(), corrections=(), referent_rules=(),
                 family_rules: Mapping[str, tuple] = MappingProxyType({}), lexicon=MappingProxyType({}),
                 referent_words=MappingProxyType({}), manifest: LoadedFile | None = None,
                 sources: Mapping[str, LoadedFile] = MappingProxyType({}), requirements=None):
        rules: dict[str, tuple] = {FileKind.VOCABULARY: tuple(vocab_sets), FileKind.FOLLOW_UPS: tuple(follow_ups),
                 FileKind.CORRECTIONS: tuple(corrections), FileKind.REFERENTS: tuple(referent_rules)}
        rules.update((kind, tuple(given)) for kind, given in family_rules.items())
        for key, value in (("name", name), ("version", version), ("locale", locale), ("description", description),
                           ("path", path), ("content_hash", content_hash), ("settings", settings),
                           ("family_rules", MappingProxyType(rules)), ("context", context), ("slots", slots),
                           ("slots_seed", slots_seed), ("lexicon", lexicon), ("referent_words", referent_words),
                           ("manifest", manifest), ("sources", sources)):
            object.__setattr__(self, key, value)
        listing = sorted((f.listed, n, f.kind) for n, f in enumerate(map(family, rules)) if f.listed is not None)
        object.__setattr__(self, "_rules", tuple(r for _, _, kind in listing for r in rules[kind]))
        object.__setattr__(self, "_by_file", {src.display: src for src in sources.values()})
        everything = self._rules + tuple(r for kind, given in rules.items() if family(kind).listed is None
                                         for r in given)
        object.__setattr__(self, "_by_id", {r.id: r for r in reversed(everything)})
        object.__setattr__(self, "_matcher", build_matcher(settings, rules, (name, version, content_hash),
                                                           lexicon=lexicon, referent_words=referent_words,
                                                           requirements=requirements))
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, key, value):
        raise AttributeError("a compiled Pack is immutable")

    def __repr__(self):
        return f"<Pack {self.name} {self.version} ({self.content_hash}) from {self.path}>"

    @property
    def rules(self) -> tuple:
        """Every classification rule, as reports list them: corrections, vocabulary sets, follow-up patterns
        (then any other family's, by its ``listed``).

        (The matcher tries the corrections, then the follow-up patterns, then
        the vocabulary test, then the follow-up patterns marked
        ``after_vocabulary``: its ``lanes``; ``referent_rules`` are apart.)
        """
        return self._rules

    @property
    def vocab_sets(self) -> tuple:
        return self.family_rules[FileKind.VOCABULARY]

    @property
    def follow_ups(self) -> tuple:
        """The follow-up patterns, in the order tried (those marked ``after_vocabulary`` last)."""
        return self.family_rules[FileKind.FOLLOW_UPS]

    @property
    def corrections(self) -> tuple:
        return self.family_rules[FileKind.CORRECTIONS]

    @property
    def referent_rules(self) -> tuple:
        return self.family_rules[FileKind.REFERENTS]

    def rule(self, rule_id: str):
        """The classification or referent rule with this id; ``KeyError`` when the pack has none."""
        return self._by_id[rule_id]

    def source(self, rule) -> LoadedFile:
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


#: ``Settings``, as the pack's settings were named (``cleo_rules.serve.settings.Settings`` are the service's), is
#: :class:`PackSettings`.
__getattr__ = moved(__name__, {"Settings": "PackSettings"})
