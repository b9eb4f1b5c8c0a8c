"""The compiled pack and its settings: frozen values, made by :mod:`.compile`.

A :class:`Pack` holds its settings, each rule family's rules in the order
they are listed (:attr:`Pack.family_rules`), the matcher built from their
lanes, and what it was built from: the manifest and every rule file as
loaded (:class:`~cleo_rules.reading.load.LoadedFile`, with the position of every
value), and, on each rule, the file, line and JSON pointer it was defined at.
So a stage that reports on a rule (its examples, its corpus templates, the
required version) finds the place at hand and never reads a file again.
The rules themselves are defined by their families (:mod:`cleo_rules.families`):
:class:`VocabSet`, :class:`PatternRule`, :class:`ReferentRule`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from ..decision import Decision
from ..explain import Explanation
from ..families import build_matcher, family
from ..families.patterns import PatternRule
from ..families.referents import ReferentRule
from ..families.vocabulary import VocabSet
from ..kinds import DecisionKind, FileKind
from ..matcher import Matcher
from ..reading.load import LoadedFile

__all__ = ["Base", "LeftOut", "Composition", "DEFAULT_CONTEXT", "Pack", "PackSettings", "PatternRule", "ReferentRule",
           "VocabSet", "name_packs"]

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
    long_reply_words: int = 60
    combine_correction: str = "{anchor}\n{referent}\n{message}"
    max_referent_words: int = 12
    antecedent_reach: int = 6


@dataclass(frozen=True)
class Base:
    """A pack a composed pack is built on (``extends:``): its name, version and content hash (the hash its own
    ``check`` shows), its directory, how the manifest that names it wrote it (``spec``: ``cleo-en``, ``../shared``)
    and whether it is the ``bundled`` pack, an ``installed`` one or a ``directory``; ``manifest`` and ``sources`` are
    its files as loaded (each rule file by its name in its manifest), with positions."""

    name: str
    version: str
    content_hash: str
    path: Path
    spec: str
    origin: str
    manifest: LoadedFile | None = field(default=None, compare=False, repr=False)
    sources: Mapping[str, LoadedFile] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)

    def record(self) -> dict:
        """``{"name", "version", "hash"}``: what a trace and ``check --json`` keep of it."""
        return {"name": self.name, "version": self.version, "hash": self.content_hash}


@dataclass(frozen=True)
class LeftOut:
    """A rule of a base that the composition leaves out: ``by`` names the pack that disabled or replaced it, ``of``
    the pack whose rule it was."""

    rule: str
    by: str
    of: str


@dataclass(frozen=True)
class Composition:
    """How a pack is built on others (:mod:`.compose`): its ``bases``, in the order they apply (a base's own bases
    before it; later ones win on a shared id), the rules of a base left out because a pack disables them
    (``disabled``) or defines a rule of the same id (``replaced``), each by its id. A pack that extends nothing has
    an empty one."""

    bases: tuple[Base, ...] = ()
    disabled: Mapping[str, LeftOut] = field(default_factory=lambda: MappingProxyType({}))
    replaced: Mapping[str, LeftOut] = field(default_factory=lambda: MappingProxyType({}))

    def __bool__(self) -> bool:
        return bool(self.bases)

    def left_out(self, rule_id: str, corpus_of: str) -> str | None:
        """Why a case of ``rule_id`` in the corpus of the pack ``corpus_of`` is not run against the composed pack
        (``"disabled by team"``, ``"replaced by team"``), or None when it runs: the rule is in the pack, or the case
        is in the corpus of the pack whose rule replaced it."""
        change = self.disabled.get(rule_id)
        if change is not None:
            return f"disabled by {change.by}"
        change = self.replaced.get(rule_id)
        return f"replaced by {change.by}" if change is not None and change.by != corpus_of else None

    def to_dict(self) -> dict:
        return {"bases": [b.record() for b in self.bases],
                "disabled": [{"rule": c.rule, "by": c.by, "of": c.of} for c in self.disabled.values()],
                "replaced": [{"rule": c.rule, "by": c.by, "of": c.of} for c in self.replaced.values()]}


NOTHING = Composition()


def name_packs(problems, packs: Mapping[str, str]) -> list:
    """``problems``, each placed in a file of ``packs`` (a file as shown, to the name of its pack) naming that pack."""
    return [p if p.pack is not None or p.file not in packs else dataclasses.replace(p, pack=packs[p.file])
            for p in problems]


class Pack:
    """A compiled, immutable rule pack.

    ``classify(message, history=())`` returns a :class:`Decision`;
    ``explain`` also lists every rule tried. Attributes: ``name``,
    ``version``, ``locale``, ``content_hash``, ``settings``
    (:class:`PackSettings`), ``family_rules`` (each rule family's rules by
    its file kind), ``rules`` (those that classify, as reports list them),
    ``referent_rules``, :meth:`all_rules` (every rule of every family),
    ``context`` (templates for the context block), ``slots`` (corpus fillers) and ``lexicon`` (word sets by name);
    ``manifest`` and ``sources`` (each rule file by its name in the
    manifest, in that order) are the files it was built from, as loaded,
    with positions. The bundled families' rules are given as ``vocab_sets``,
    ``follow_ups``, ``corrections`` and ``referent_rules`` (and read back so),
    any family's in ``family_rules``. ``requirements``, what each pattern
    requires of a text for the matcher's prefilter, is given only by a pack
    read back from the compiled-pack cache (:mod:`.snapshot`); otherwise the
    matcher works them out. ``composition`` says what the pack is built on
    (:class:`Composition`; empty for a pack that extends nothing): its bases'
    files are kept there, and ``sources`` holds the pack's own files only.
    ``matcher`` is another pack's, given only for a pack of the very same
    settings, rules, lexicon and identity (a pack relocated:
    :func:`.snapshot.relocated`); otherwise it is built from them.
    """

    __slots__ = ("name", "version", "locale", "description", "path", "content_hash", "settings", "family_rules",
                 "context", "slots", "slots_seed", "lexicon", "referent_words", "manifest", "sources", "composition",
                 "_rules", "_all", "_by_file", "_by_id", "_origin", "_matcher", "_frozen", "__weakref__")

    def __init__(self, *, name, version, locale, description, path, content_hash, settings, context, slots,
                 slots_seed, vocab_sets=(), follow_ups=(), corrections=(), referent_rules=(),
                 family_rules: Mapping[str, tuple] = MappingProxyType({}), lexicon=MappingProxyType({}),
                 referent_words=MappingProxyType({}), manifest: LoadedFile | None = None,
                 sources: Mapping[str, LoadedFile] = MappingProxyType({}), requirements=None,
                 composition: Composition = NOTHING, matcher=None):
        rules: dict[str, tuple] = {FileKind.VOCABULARY: tuple(vocab_sets), FileKind.FOLLOW_UPS: tuple(follow_ups),
                 FileKind.CORRECTIONS: tuple(corrections), FileKind.REFERENTS: tuple(referent_rules)}
        rules.update((kind, tuple(given)) for kind, given in family_rules.items())
        for key, value in (("name", name), ("version", version), ("locale", locale), ("description", description),
                           ("path", path), ("content_hash", content_hash), ("settings", settings),
                           ("family_rules", MappingProxyType(rules)), ("context", context), ("slots", slots),
                           ("slots_seed", slots_seed), ("lexicon", lexicon), ("referent_words", referent_words),
                           ("manifest", manifest), ("sources", sources), ("composition", composition)):
            object.__setattr__(self, key, value)
        listing = sorted((f.listed, n, f.kind) for n, f in enumerate(map(family, rules)) if f.listed is not None)
        object.__setattr__(self, "_rules", tuple(r for _, _, kind in listing for r in rules[kind]))
        by_file = {src.display: src for src in sources.values()}
        origin = dict.fromkeys(by_file, -1)  # the file's pack: -1 this one, else its base's index
        for i, base in enumerate(composition.bases):
            for src in base.sources.values():
                by_file.setdefault(src.display, src)
                origin.setdefault(src.display, i)
        object.__setattr__(self, "_by_file", by_file)
        object.__setattr__(self, "_origin", origin)
        everything = self._rules + tuple(r for kind, given in rules.items() if family(kind).listed is None
                                         for r in given)
        object.__setattr__(self, "_all", everything)
        object.__setattr__(self, "_by_id", {r.id: r for r in reversed(everything)})
        if matcher is None:
            matcher = build_matcher(settings, rules, (name, version, content_hash), lexicon=lexicon,
                                    referent_words=referent_words, requirements=requirements)
        object.__setattr__(self, "_matcher", matcher)
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
        ``after_vocabulary``: its ``lanes``; ``referent_rules`` are apart, and :meth:`all_rules` holds both.)
        """
        return self._rules

    def all_rules(self) -> tuple:
        """Every rule of every family: :attr:`rules` (those that classify, as reports list them), then the rules
        of each family that are apart from them (``listed`` None: the referent rules, then any other family's, in
        the registry's order). What the corpus, the findings, the pack's own checks and the service's rule list
        go through, so a family's rules are in each of them."""
        return self._all

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

    def origin(self, rule) -> str:
        """The name of the pack ``rule`` comes from: this pack's, or that of the base it was defined in."""
        i = self._origin.get(rule.file, -1)
        return self.name if i < 0 else self.composition.bases[i].name

    def owns(self, rule) -> bool:
        """Whether ``rule`` is defined in this pack's own files, not in a base's (every rule of a pack that extends
        nothing is its own)."""
        return self._origin.get(rule.file, -1) < 0

    def placed(self, problems) -> list:
        """``problems`` of this pack, each naming the pack its file belongs to when the pack is built on others
        (:attr:`Problem.pack <cleo_rules.errors.Problem.pack>`); as they are for a pack that extends nothing."""
        if not self.composition:
            return list(problems)
        bases = self.composition.bases
        packs = {shown: self.name if i < 0 else bases[i].name for shown, i in self._origin.items()}
        if self.manifest is not None:
            packs[self.manifest.display] = self.name
        for base in bases:
            if base.manifest is not None:
                packs.setdefault(base.manifest.display, base.name)
        return name_packs(problems, packs)

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
