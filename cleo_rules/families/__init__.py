"""Rule families, one module each, registered in one table.

A **rule family** is one kind of rule file (its ``kind:``) and everything
about its rules: the schema its files are checked against, the builder that
turns an item into a rule with its problems placed, the lanes that try the
rules in the matching walk, and the hooks ``explain``, the pack's own
example checks and the corpus generator call (:class:`Family`, in
:mod:`.base`). The bundled families, in the order the help lists them:

=================  =========================================================
``vocabulary``     :mod:`.vocabulary`: low-content words by role; the vocabulary test
``follow_ups``     :mod:`.follow_ups`: follow-up patterns, before and after that test
``corrections``    :mod:`.corrections`: corrections, tried first
``referents``      :mod:`.referents`: what a follow-up points at (no lane: the query's shaping)
``lexicon``        :mod:`.lexicon`: word sets by name (no rules)
``slots``          :mod:`.slots`: the corpus templates' fillers (no rules)
=================  =========================================================

The compiler (:func:`cleo_rules.pack.compile.compile_pack`) reads each file
with the family its ``kind:`` names (:func:`family_of_file`; an unknown
kind is an error placed at the ``kind:``, with the known kinds and the
nearest one), then lets each family finish its rules; a
:class:`~cleo_rules.pack.model.Pack` keeps each family's rules
(:attr:`Pack.family_rules <cleo_rules.pack.model.Pack.family_rules>`) and
builds its :class:`~cleo_rules.matcher.Matcher` from their lanes
(:func:`build_matcher`).

**Experimental: families from outside the package.** :func:`register` adds a
family (a :class:`Family` instance) of a kind the package does not ship; packs
may then list files of that kind. The interface may change between minor
versions. Its packs are cached like any other: the cache's key holds the
source of its code (:func:`cleo_rules.pack.snapshot.family_code`), and its
``rule_class`` is what the cache stores its rules as.
:func:`unregister` takes the family away again.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..kinds import FileKind
from ..matcher import Matcher
from ..reading.load import LoadedFile
from ..referent_finder import ReferentFinder
from ..walk import LaneContext
from .base import RULE_CASES, Build, Family, RuleItem, Tally
from .corrections import CORRECTIONS
from .follow_ups import FOLLOW_UPS
from .lexicon import LEXICON
from .referents import REFERENTS
from .slots import SLOTS
from .vocabulary import VOCABULARY, Vocabulary

__all__ = ["BUILTIN", "RULE_CASES", "Build", "Family", "RuleItem", "Tally", "build_matcher", "counts", "family",
           "family_of", "family_of_file", "kinds", "outside", "register", "registered", "rule_kinds", "unregister"]

#: The bundled families, in the order their kinds are listed (:class:`~cleo_rules.kinds.FileKind`).
BUILTIN: tuple[Family, ...] = (VOCABULARY, FOLLOW_UPS, CORRECTIONS, REFERENTS, LEXICON, SLOTS)

_lock = threading.Lock()
_table: dict[str, Family] = {f.kind: f for f in BUILTIN}          # by file kind, in registration order
_by_rule: dict[str, Family] = {f.rule_kind: f for f in BUILTIN if f.rule_kind}


def register(new: Family, *, replace: bool = False) -> Family:
    """Add a family to the table, so packs may list files of its ``kind`` (experimental; see the module's notes).

    Its ``kind`` and ``rule_kind`` must be new, unless ``replace`` (then the
    family registered for that kind is replaced; a bundled family cannot
    be). Returns the family.
    """
    if not isinstance(new, Family):
        raise TypeError(f"a rule family is a cleo_rules.families.Family, found {type(new).__name__}")
    if not isinstance(new.kind, str) or not new.kind:
        raise ValueError("a rule family needs a kind: the `kind:` of its files")
    with _lock:
        old = _table.get(new.kind)
        if old is not None and (not replace or old in BUILTIN):
            raise ValueError(f"the file kind {new.kind!r} is taken by {type(old).__name__}"
                             + ("" if old in BUILTIN else "; pass replace=True to replace it"))
        taken = _by_rule.get(new.rule_kind) if new.rule_kind else None
        if taken is not None and taken is not old:
            raise ValueError(f"the rule kind {new.rule_kind!r} is taken by {type(taken).__name__}")
        if old is not None:
            _by_rule.pop(old.rule_kind, None)
        _table[new.kind] = new
        if new.rule_kind:
            _by_rule[new.rule_kind] = new
    return new


def unregister(kind: str) -> None:
    """Take away the family registered for ``kind`` (not a bundled one); ``KeyError`` when there is none."""
    with _lock:
        found = _table[kind]
        if found in BUILTIN:
            raise ValueError(f"the bundled family {kind!r} cannot be unregistered")
        del _table[kind]
        if _by_rule.get(found.rule_kind) is found:
            del _by_rule[found.rule_kind]


def registered() -> tuple[Family, ...]:
    """Every registered family, the bundled ones first, in the order registered."""
    return tuple(_table.values())


def kinds() -> tuple[str, ...]:
    """The file kinds packs may list: the registered families' ``kind``."""
    return tuple(_table)


def rule_kinds() -> tuple[str, ...]:
    """The kinds of rule a pack may hold: each registered family's ``rule_kind``, in the order registered."""
    return tuple(_by_rule)


def counts(pack) -> list[tuple[Tally, int]]:
    """How many rules of each counted family (its ``tally``) ``pack`` holds, in the order ``check`` reports
    them."""
    found = []
    for i, f in enumerate(registered()):
        tally = f.tally
        if tally is None and f.items is not None and f.listed is not None:
            tally = Tally(len(BUILTIN), f.kind, f"{f.kind.replace('_', ' ')} rules")
        if tally is not None:
            found.append((tally, i, f.kind))
    return [(tally, len(pack.family_rules.get(kind, ()))) for tally, _, kind in sorted(found)]


def outside() -> tuple[Family, ...]:
    """The registered families that are not bundled."""
    return tuple(f for f in _table.values() if f not in BUILTIN)


def family(kind: str) -> Family:
    """The family of files of ``kind``; ``KeyError`` when none is registered."""
    return _table[kind]


def family_of(rule) -> Family:
    """The family whose rules are of ``rule.kind``; ``KeyError`` when none is registered."""
    return _by_rule[rule.kind]


def family_of_file(src: LoadedFile):
    """``(family, problems)`` for a rule file: the family its ``kind:`` names, or None and the problem, placed
    at the ``kind:`` with the known kinds and the nearest one (:func:`cleo_rules.reading.validate.read_kind`)."""
    from ..reading.validate import read_kind

    kind, problems = read_kind(src, kinds())
    return (None if kind is None else _table[kind]), problems


def build_matcher(settings, rules: Mapping[str, tuple], identity, *, lexicon: Mapping[str, frozenset[str]],
                  referent_words: Mapping[str, tuple[str, ...]], requirements=None):
    """The :class:`~cleo_rules.matcher.Matcher` of a pack: its rules' lanes, in order, over what they share.

    ``rules`` are the pack's rules by file kind (:attr:`Pack.family_rules
    <cleo_rules.pack.model.Pack.family_rules>`); what the lanes share
    (:class:`~cleo_rules.walk.LaneContext`) is made from the vocabulary sets
    (their cover, and the filler words), the referent rules (the finder),
    the lexicon and the referent word lists.
    """
    vocab_sets = rules.get(FileKind.VOCABULARY, ())
    common = lexicon.get("common", frozenset())
    function_words = frozenset(w for v in vocab_sets if v.role == "filler" for w in v.words)
    nouns = lexicon.get("nouns", frozenset())
    finder = ReferentFinder(
        rules.get(FileKind.REFERENTS, ()), common=common, dictionary=common | nouns, function_words=function_words,
        proper=lexicon.get("proper", frozenset()), nouns=nouns,
        qualifiers=lexicon.get("qualifiers", frozenset()), plain_nouns=lexicon.get("plain_nouns", frozenset()),
        time_words=referent_words.get("time_words", ()), given_names=lexicon.get("given_names", frozenset()),
        people=lexicon.get("people", frozenset()),
        clause_verbs=referent_words.get("clause_verbs", ()), max_words=settings.max_referent_words,
        timeout=settings.timeout_ms / 1000.0, max_chars=settings.max_scan_chars)
    vocabulary = Vocabulary(vocab_sets, settings.timeout_ms / 1000.0)
    choice_rule = next((v.id for v in vocab_sets if v.role == "choice"), None)
    context = LaneContext(settings, lexicon, function_words, finder, vocabulary, choice_rule)
    lanes = [lane for kind, kind_rules in rules.items() for lane in family(kind).lanes(kind_rules, context)]
    lanes.sort(key=lambda lane: lane.order)
    return Matcher(settings, lanes, identity, context=context, requirements=requirements)
