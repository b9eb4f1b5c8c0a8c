"""What a rule family is: :class:`Family`, and what the compiler hands it (:class:`Build`, :class:`RuleItem`).

A family is one kind of rule file (its ``kind:``) and everything about the
rules in it:

* **a schema**: the JSON Schema its files are validated against (a bundled
  schema's name, ``schemas/<name>.schema.json``, or the schema itself);
* **a builder**: :meth:`Family.build` turns one item of the file's list
  (``rules:`` or ``sets:``) into a rule, adding its problems, placed;
  :meth:`Family.read` keeps what the file holds besides (word lists, slots);
  :meth:`Family.finish` orders the rules once every file is read and checks
  what spans files;
* **its lanes**: :meth:`Family.lanes` makes the stages of the matching walk
  that try its rules (:class:`~cleo_rules.walk.Lane`);
* **its hooks**: :meth:`Family.miss` says why an example of one of its rules
  does not fire it; :meth:`Family.example_problems` judges the examples of a
  rule whose examples are not plain messages; :meth:`Family.corpus_cases`
  makes the corpus cases of a rule from its ``generate:`` templates.

A rule is a frozen dataclass with at least ``id``, ``kind`` (the family's
:attr:`~Family.rule_kind`), ``description``, ``examples``,
``counterexamples``, ``file``, ``line``, ``pointer`` and ``generate``: the
fields reports, the corpus and the pack's own checks read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import Problem
from ..kinds import DecisionKind
from ..reading.load import LoadedFile, pointer_join

__all__ = ["RULE_CASES", "Build", "Family", "RuleItem", "Tally"]

#: A rule's corpus template lists: (name, id letter, the kind its cases must get, None for the rule's own).
RULE_CASES = (
    ("positive", "p", None),
    ("negative", "n", DecisionKind.SUBSTANTIVE),
    ("request", "r", DecisionKind.FOLLOW_UP),
)


class Tally(NamedTuple):
    """How ``check`` counts a family's rules: ``place`` among the counts (lowest first; a family from outside the
    package comes after the bundled ones), ``key`` in its JSON (``"follow_ups"``), ``words`` in its summary
    (``"follow-up patterns"``)."""

    place: int
    key: str
    words: str


class Build:
    """What one compile gathers across the pack's files.

    ``problems`` is the compile's list (append to it); ``rules`` each
    family's rules by its kind, in the order built; ``data`` what the files
    hold besides rules, under the :class:`~cleo_rules.pack.model.Pack`
    argument it becomes (``lexicon``, ``slots``, ``slots_seed``,
    ``referent_words``); ``notes`` a family's own notes across its files
    (the vocabulary's words seen so far).
    """

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        self.rules: dict[str, list] = {}
        self.data: dict[str, Any] = {}
        self.notes: dict[str, Any] = {}
        self._ids: dict[str, tuple[LoadedFile, str]] = {}

    def claim(self, src: LoadedFile, pointer: str, rule_id) -> bool:
        """Whether ``rule_id`` (at ``pointer`` of ``src``) is a string no rule of the pack has taken yet (E132)."""
        if not isinstance(rule_id, str):
            return False
        first = self._ids.get(rule_id)
        if first is not None:
            first_src, first_ptr = first
            line, col = first_src.where(first_ptr)
            self.problems.append(src.problem(
                "E132", f"duplicate rule id {rule_id!r} (first defined at {first_src.display}:{line}:{col})",
                pointer, rule=rule_id, rank=2, help="give every rule a unique id"))
            return False
        self._ids[rule_id] = (src, pointer)
        return True


@dataclass(frozen=True)
class RuleItem:
    """One item of a rule file's list, as a family's builder gets it.

    ``src`` is the file as loaded, ``pointer`` the item's place in it
    (``/rules/3``), ``line`` its line; ``id`` its id when that is a string,
    and ``claimed`` whether the id is the pack's first of that name (a rule is
    built only then); ``build`` the compile's :class:`Build`.
    """

    src: LoadedFile
    pointer: str
    id: str | None
    claimed: bool
    line: int
    build: Build

    def at(self, *tokens) -> str:
        """The JSON pointer of a value inside the item: ``at("pattern", 2)`` is ``/rules/3/pattern/2``."""
        pointer = self.pointer
        for token in tokens:
            pointer = pointer_join(pointer, token)
        return pointer

    def problem(self, code: str, message: str, pointer: str, *, rank: int, help: str = "", offset: int = 0) -> None:
        """Add a problem of this item's rule, placed at ``pointer`` of its file."""
        self.build.problems.append(self.src.problem(code, message, pointer, rule=self.id, help=help, rank=rank,
                                                    offset=offset))


class Family:
    """One kind of rule file and its rules; see the module's notes. Subclass it, then register an instance
    (:func:`cleo_rules.families.register`).

    ``kind`` is the files' ``kind:``; ``schema`` a bundled schema's name
    (default: ``kind``) or the JSON Schema itself; ``items`` the key of the
    file's list of rules (None: a file of data only, no rules);
    ``rule_kind`` the ``kind`` of the rules it builds (unique among
    families); ``decides`` the kind of turn its rules make a message;
    ``listed`` where its rules come in :attr:`Pack.rules
    <cleo_rules.pack.model.Pack.rules>` (None: not among the rules that
    classify, as referent rules; every family's rules are in
    :meth:`Pack.all_rules <cleo_rules.pack.model.Pack.all_rules>`); ``noun`` how help names one of them
    (``"a correction"``); ``corpus_lists`` its rules' template lists;
    ``rule_class`` the class of its rules, a frozen dataclass (the
    compiled-pack cache stores them, :mod:`cleo_rules.pack.snapshot`; None:
    a pack with its rules is compiled anew each time); ``tally`` how
    ``check`` counts them (None: a family whose rules classify is counted
    after the bundled ones, by its kind; one whose rules are apart is not).
    """

    kind: str = ""
    schema: str | Mapping = ""
    items: str | None = "rules"
    rule_kind: str = ""
    decides: DecisionKind = DecisionKind.FOLLOW_UP
    listed: int | None = None
    noun: str = "a rule"
    corpus_lists: tuple = RULE_CASES
    rule_class: type | None = None
    tally: Tally | None = None

    @property
    def schema_source(self) -> str | Mapping:
        """The schema its files are validated against: a bundled schema's name, or the schema."""
        return self.schema or self.kind

    @property
    def corpus_kind(self) -> str:
        """The kind its rules are listed and hashed under in the corpus: what they decide."""
        return self.decides

    # -- building --------------------------------------------------------

    def read_file(self, src: LoadedFile, build: Build, keep: Callable[[str | None], bool] | None = None) -> None:
        """Read one file of this kind (validated already): its data (:meth:`read`), then each item (:meth:`build`).

        ``keep``, when given, says of each item's id whether it is built at all (a pack built on others leaves out
        the rules another pack disables or replaces); an item it refuses is passed over, its id unclaimed."""
        self.read(src, build)
        if self.items is None:
            return
        items = src.data.get(self.items)
        if not isinstance(items, list):
            return
        built = build.rules.setdefault(self.kind, [])
        base = "/" + self.items
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            pointer = pointer_join(base, i)
            given = item.get("id")
            rule_id = given if isinstance(given, str) else None
            if keep is not None and not keep(rule_id):
                continue
            claimed = build.claim(src, pointer_join(pointer, "id"), rule_id)
            rule = self.build(item, RuleItem(src, pointer, rule_id, claimed, src.where(pointer)[0], build))
            if rule is not None:
                built.append(rule)

    def read(self, src: LoadedFile, build: Build) -> None:
        """Keep what a file holds besides its rules, in ``build.data``; nothing by default."""

    def build(self, item: dict, at: RuleItem) -> Any:
        """The rule ``item`` makes, or None (its problems added through ``at``); a rule is built only when
        ``at.claimed``."""
        return None

    def finish(self, rules: list, build: Build) -> tuple:
        """The family's rules in the order the pack keeps them, once every file is read (and what spans files
        checked)."""
        return tuple(rules)

    # -- the walk --------------------------------------------------------

    def lanes(self, rules: tuple, context) -> list:
        """The lanes (:class:`~cleo_rules.walk.Lane`) that try ``rules`` in the walk; none by default.

        ``context`` is the pack's :class:`~cleo_rules.walk.LaneContext`.
        """
        return []

    # -- hooks -------------------------------------------------------------

    def miss(self, pack, rule, explanation, taken: str) -> str:
        """Why a message, an example of ``rule``, does not fire it, and what to do, from its ``explanation``.

        ``taken`` names the rule that took it (``"x (a correction, earlier in
        the order) takes it"``), or is empty.
        """
        if taken:
            return f"{taken} first; narrow {explanation.decision.rule} or move the example to it"
        return "this rule does not take it; change the rule or remove the example"

    def example_problems(self, pack, rule) -> list[Problem] | None:
        """The problems of ``rule``'s own examples, or None: each example then must fire the rule, each
        counterexample must not (:func:`cleo_rules.pack.examples.find_example_problems`)."""
        return None

    def corpus_cases(self, generator, rule, group, lists, src, file_name: str, limit: int):
        """``group`` with the corpus cases of ``rule`` from its template ``lists`` (the corpus generator's
        :meth:`~cleo_rules.corpus.generate.Generator.rule_cases` by default)."""
        return generator.rule_cases(rule, group, lists, src, file_name, limit)
