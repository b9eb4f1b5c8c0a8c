"""Expand each rule's ``generate:`` templates into corpus cases.

For every rule, three lists of templates (see :mod:`.template` for the syntax):

``positive``
    each expansion must fire the rule and get its kind;
``negative``
    each expansion must not fire the rule and is searched as typed
    (``substantive``): messages that share the rule's words but carry a topic;
``request``
    each expansion must not fire the rule; a follow-up rule's must be a
    ``follow_up`` (another rule answers them); a correction's are the request
    forms of its verbs ("try that one"), which must be no correction (any
    kind but ``correction``: ``not_kind``), and a ``follow_up`` when the
    template gives the conversation before it.

A template may also be a conversation: ``{message, history, referent}``, each
a template (``history`` a list of strings, the user's turns, or ``{role,
content}``), expanded together (:meth:`.template.Grammar.compile_joint`: a slot
named in two of them takes one filler in both). Its cases carry that history.

A referent rule (a ``referents`` file) has two lists: ``positive``
conversations, whose ``referent`` the rule must find (the message a
``follow_up``), and ``negative`` ones, in which it must find nothing.

A rule's own examples and counterexamples that are conversations (``{message,
history}`` mappings: every referent rule's, and those of rules that need one,
such as a definite description's antecedent) become cases of the rule too:
positives (``e-``) and negatives (``x-``; any kind, the rule must not fire).

The slots file may add cross-rule cases (``cross: {substantive: [...], skip:
[...]}``): messages that belong to no rule and must get that kind.

Expansion is bounded and reproducible. Each template's expansions are ranked
by a hash of the seed and the text (a template with more than
:data:`ENUM_CAP` expansions is first sampled, seeded); the lists are filled
round-robin over their templates up to ``limit`` cases. A case's surface form
(as written, lower case, upper case, curly apostrophes) also follows from its
hash. So the same pack always yields the same corpus, and adding a filler adds
a few cases rather than reshuffling all of them. Expansions under the pack's
``min_chars`` are dropped (they are skipped, not classified); duplicates are
dropped after normalisation. A case gets one earlier message from the slot
``history``, when the pack defines it, on a fixed share of cases (corrections
and requests every other case, follow-ups one in three, others one in five),
and then its query is checked too.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Problem
from ..families import RULE_CASES, family_of
from ..families.referents import REFERENT_CASES
from ..kinds import DecisionKind, FileKind
from ..incremental import Memo
from ..reading.load import LoadedFile, pointer_join
from ..text import normalize
from .model import CROSS, Case, CorpusError, CaseTurn, history_item
from .template import Grammar, TemplateError, clean, clean_lines, split_joint

GENERATOR_VERSION = 3
ENUM_CAP = 2000          # a template with more expansions than this is sampled ...
SAMPLE = 400             # ... this many, seeded, before ranking
DEFAULT_LIMIT = 40       # cases per template list when neither the rule nor the slots file says
DEFAULT_CROSS_LIMIT = 80
HISTORY_SLOT = "history"

# list name -> (id letter, expected kind or None for the rule's own kind): each family's corpus_lists
LISTS = RULE_CASES
# a referent rule's lists: conversations whose referent it finds, and in which it finds none
REFERENT_LISTS = REFERENT_CASES
CROSS_LISTS = (
    ("substantive", "s"),
    ("follow_up", "f"),
    ("correction", "c"),
    ("skip", "k"),
)


@dataclass
class Group:
    """The generated cases of one rule (or of the cross-rule templates)."""

    name: str                 # rule id or CROSS
    source: str               # the rule file (relative to the pack), or the slots file
    hash: str                 # of every input that changes the cases
    cases: list[Case] = field(default_factory=list)
    templates: int = 0


@dataclass
class SlotsSpec:
    seed: int = 0
    limit: int = DEFAULT_LIMIT
    cross: dict = field(default_factory=dict)
    cross_limit: int = DEFAULT_CROSS_LIMIT
    source: str = ""


def rule_kind(rule) -> str:
    """The kind a rule is listed and hashed under (its family's ``corpus_kind``): a vocabulary set's is
    ``follow_up``, a bundled rule's else its own."""
    return family_of(rule).corpus_kind


@dataclass(frozen=True)
class Conversation:
    """What a conversation template or example adds to its message: the history, and the referent to find."""

    history: tuple = ()
    referent: str | None = None


def _conversation_parts(template) -> tuple[list[str], list[str | None], bool]:
    """A conversation template as ``(templates, roles, has_referent)``: message, each turn, then the referent.

    ``roles`` is None for the message and the referent, ``"user"`` for a
    plain-string turn, else the turn's role. Raises :class:`TemplateError`
    when the mapping is malformed.
    """
    message = template.get("message")
    if not isinstance(message, str) or not message:
        raise TemplateError("a conversation template needs a `message` template",
                            "write {message: \"...\", history: [...]}")
    history = template.get("history") or []
    if not isinstance(history, list):
        raise TemplateError("`history` must be a list of turns", "each turn a string (the user's) or {role, content}")
    parts: list[str] = [message]
    roles: list[str | None] = [None]
    for j, turn in enumerate(history):
        try:
            item = history_item(turn)
        except ValueError as exc:
            raise TemplateError(f"history[{j}]: {exc}", "each turn a string (the user's) or {role, content}") from None
        if isinstance(item, str):
            parts.append(item)
            roles.append("user")
        else:
            parts.append(item.content)
            roles.append(item.role)
    referent = template.get("referent")
    if referent is not None and not isinstance(referent, str):
        raise TemplateError("`referent` must be a template string", "the referent the rule must find")
    if referent is not None:
        parts.append(referent)
        roles.append(None)
    return parts, roles, referent is not None


def _example_conversation(item) -> tuple[str, tuple, str | None] | None:
    """A rule's example or counterexample that is a conversation: ``(message, history, referent)``, else None."""
    if not isinstance(item, Mapping) or not isinstance(item.get("message"), str):
        return None
    try:
        history = tuple(history_item(h) for h in item.get("history") or ())
    except ValueError:
        return None  # the rule file's schema refuses it
    referent = item.get("referent")
    return item["message"], history, referent if isinstance(referent, str) else None


def _file_name(pack, src) -> str:
    """A rule file's name relative to the pack directory (stable whatever the working directory)."""
    try:
        return Path(src.path).resolve().relative_to(Path(pack.path).resolve()).as_posix()
    except (ValueError, OSError):
        return Path(src.path).name


def slots_spec(pack) -> tuple[SlotsSpec, LoadedFile | None]:
    """The generator's settings from the pack's slots file(s), and the (last) slots file."""
    spec = SlotsSpec(seed=pack.slots_seed)
    found = None
    for name, src in pack.sources.items():
        data = src.data
        if isinstance(data, dict) and data.get("kind") == FileKind.SLOTS:
            spec.source, found = name, src
            if isinstance(data.get("limit"), int):
                spec.limit = data["limit"]
            cross = data.get("cross")
            if isinstance(cross, dict):
                for kind, _ in CROSS_LISTS:
                    if isinstance(cross.get(kind), list):
                        spec.cross.setdefault(kind, []).extend(t for t in cross[kind] if isinstance(t, str))
                if isinstance(cross.get("limit"), int):
                    spec.cross_limit = cross["limit"]
    return spec, found


def _template_texts(template) -> list[str]:
    """The template strings of a template: itself, or a conversation's message, turns and referent."""
    if isinstance(template, str):
        return [template]
    if not isinstance(template, Mapping):
        return []
    out = [template.get("message")] + [h.get("content") if isinstance(h, Mapping) else h
                                       for h in template.get("history") or [] if isinstance(h, (str, Mapping))]
    out.append(template.get("referent"))
    return [t for t in out if isinstance(t, str)]


def _conversation_key(message: str, conv: Conversation) -> str:
    """What makes a conversation case distinct: its message, history and referent (normalised)."""
    turns = [h if isinstance(h, str) else f"{h.role}: {h.content}" for h in conv.history]
    return "\x00".join([normalize(message)] + [normalize(t) for t in turns] + [conv.referent or ""])


def _digest(*parts) -> bytes:
    return hashlib.sha1("\x00".join(str(p) for p in parts).encode("utf-8")).digest()


def surface(text: str, digest: bytes) -> str:
    """The case's surface form: mostly as written, some lower, upper or with curly apostrophes."""
    v = digest[0] % 10
    if v in (6, 7):
        return text.lower()
    if v == 8:
        return text.upper()
    text = text[:1].upper() + text[1:]
    if v == 9:
        return text.replace("'", "\u2019")
    return text


class Generator:
    """Expands one pack's templates; a rule family's :meth:`~cleo_rules.families.Family.corpus_cases` calls
    :meth:`rule_cases` or :meth:`referent_cases` for its rules."""

    def __init__(self, pack):
        self.pack = pack
        self.spec, self.slots_source = slots_spec(pack)
        self.grammar = Grammar(pack.slots)
        self.min_chars = pack.settings.min_chars
        self.problems: list[Problem] = []
        self._history = None

    # -- problems --------------------------------------------------------

    def _place(self, src: LoadedFile | None, file_name: str, base: str, list_name: str, j: int, rule_id, message,
               help):
        """A template problem, placed at the template in its file (``src``, kept by the pack)."""
        ptr = pointer_join(pointer_join(base, list_name), j)
        if src is not None:
            self.problems.append(src.problem("E201", message, ptr, rule=rule_id, help=help, rank=5))
        else:
            self.problems.append(Problem("E201", message, file_name, pointer=ptr, rule=rule_id, help=help, rank=5))

    # -- history -----------------------------------------------------------

    def history_messages(self) -> list[str]:
        if self._history is None:
            self._history = []
            if HISTORY_SLOT in self.grammar.slots:
                try:
                    node = self.grammar.compile("{" + HISTORY_SLOT + "}")
                    self._history = sorted({clean(t) for t in node.all()[:ENUM_CAP]})
                except TemplateError:
                    self._history = []
        return self._history

    # -- expansion ---------------------------------------------------------

    def _ranked(self, node, salt: str):
        """A template's raw expansions ranked by a seeded hash: ``[(digest, raw)]``.

        Templates with more than :data:`ENUM_CAP` expansions are sampled
        first, :data:`SAMPLE` of them (seeded by the rule, list and template
        position).
        """
        if node.n <= ENUM_CAP:
            raw = node.all()
        else:
            rng = random.Random(f"{self.spec.seed}:{salt}")
            raw = [node.expand(i) for i in sorted(rng.sample(range(node.n), SAMPLE))]
        seed = f"{self.spec.seed}\x00"
        ranked = [(hashlib.sha1((seed + r).encode("utf-8")).digest(), r) for r in raw]
        ranked.sort()
        return ranked

    def _compile(self, template, *, need_referent: bool):
        """``(node, roles)`` for a template: a string (``roles`` None) or a conversation mapping."""
        if isinstance(template, str):
            return self.grammar.compile(template), None
        if not isinstance(template, Mapping):
            raise TemplateError("a template is a string or a conversation {message, history, referent}",
                                "see the generate: section of the README")
        parts, roles, has_referent = _conversation_parts(template)
        if need_referent and not has_referent:
            raise TemplateError("a positive conversation of a referent rule needs the `referent` it must find",
                                "add referent: \"...\", naming a slot its history names too")
        return self.grammar.compile_joint(parts, seed=str(self.spec.seed)), roles

    @staticmethod
    def _split(raw: str, roles) -> tuple[str, Conversation | None]:
        """A raw expansion as ``(message, conversation)``, each part cleaned."""
        if roles is None:
            return clean(raw), None
        parts = split_joint(raw)
        history = []
        referent = None
        for part, role in zip(parts[1:], roles[1:]):
            if role is None:
                referent = clean(part)
            elif role == "user":
                history.append(clean(part))
            else:
                history.append(CaseTurn(role, clean_lines(part)))
        return clean(parts[0]), Conversation(tuple(history), referent)

    def expand_lists(self, lists, *, src, file_name, base, rule_id, limit, need_referent=()):
        """``{list name: [(key, text, digest, conversation)]}``: each list filled round-robin over its templates.

        Each template offers its expansions in hash order; an expansion is
        usable when, cleaned, it is long enough (or, for ``skip``, short
        enough) and not yet taken. A message (with its conversation, for a
        conversation template) chosen for two lists is a problem placed at the
        second template. ``need_referent`` names the lists whose
        conversations must say which referent is found.
        """
        chosen = {}
        taken: dict[str, tuple[str, int, str]] = {}
        for list_name, templates, want_skip in lists:
            sources = []
            for j, template in enumerate(templates):
                try:
                    node, roles = self._compile(template, need_referent=list_name in need_referent)
                except TemplateError as exc:
                    self._place(src, file_name, base, list_name, j, rule_id,
                                f"{list_name} template {template!r}: {exc}", exc.help)
                    continue
                sources.append((j, template, iter(self._ranked(node, f"{rule_id}:{list_name}:{j}")), [0], roles))
            picked = []
            live = list(sources)
            while live and len(picked) < limit:
                still = []
                for item in live:
                    if len(picked) >= limit:
                        still.append(item)
                        continue
                    j, template, it, counts, roles = item
                    for _digest_raw, raw in it:
                        text, conv = self._split(raw, roles)
                        if not text or (len(text) < self.min_chars) != want_skip:
                            continue
                        counts[0] += 1
                        key = normalize(text) if conv is None else _conversation_key(text, conv)
                        prev = taken.get(key)
                        if prev is not None:
                            if prev[0] != list_name:
                                self._place(src, file_name, base, list_name, j, rule_id,
                                            f"{list_name} template {template!r} yields {text!r}, which template "
                                            f"{prev[1]} of `{prev[0]}` also yields",
                                            "a message cannot be both; make the templates differ")
                            continue
                        taken[key] = (list_name, j, text)
                        picked.append((key, text, _digest(self.spec.seed, key), conv))
                        still.append(item)
                        break
                    else:
                        if not counts[0]:
                            why = (f"every expansion has {self.min_chars} characters or more" if want_skip else
                                   f"every expansion is under {self.min_chars} characters (skipped, never classified)")
                            self._place(src, file_name, base, list_name, j, rule_id,
                                        f"{list_name} template {template!r} yields no case: {why}",
                                        "shorten the template" if want_skip else "lengthen the template")
                live = still
            chosen[list_name] = picked
        return chosen

    def _history_for(self, digest: bytes, every: int) -> tuple[str, ...]:
        hist = self.history_messages()
        if not hist or every <= 0 or digest[1] % every:
            return ()
        return (hist[digest[2] % len(hist)],)

    def _cases(self, group: str, letter: str, picked, *, expect, rule=None, not_rules=(), history_every=0,
               prefix=None, referent=None, not_kind=None, in_context=None):
        """Cases from picked expansions. ``referent``: ``"found"`` (a referent rule's positives: the
        conversation's referent must be found), ``"none"`` (its negatives: nothing found by it), or None.
        ``not_kind``: a kind the cases must not get; ``in_context``: the kind a case of a conversation template
        must get instead (a correction's request forms: no correction, and a follow-up after the conversation
        the designer gave)."""
        cases, ids = [], set()
        prefix = prefix or group
        for key, text, digest, conv in sorted(picked, key=lambda p: p[0]):
            h = hashlib.sha1(key.encode("utf-8")).hexdigest()
            n = 6
            while f"{letter}-{h[:n]}" in ids:
                n += 2
            ids.add(f"{letter}-{h[:n]}")
            history = conv.history if conv is not None else self._history_for(digest, history_every)
            found = conv.referent if conv is not None and referent == "found" else None
            given = conv is not None and in_context is not None
            cases.append(Case(id=f"{prefix}/{letter}-{h[:n]}", message=surface(text, digest),
                              expect=in_context if given else expect, rule=rule, not_rules=tuple(not_rules),
                              history=history, group=group, generated=True, referent=found,
                              has_referent=referent is not None, not_kind=None if given else not_kind))
        return cases

    def _example_cases(self, rule, *, expect, referents: bool) -> list[Case]:
        """The rule's examples (``e-``) and counterexamples (``x-``) that are conversations, as cases."""
        out = []
        for letter, items in (("e", rule.examples), ("x", rule.counterexamples)):
            ids = set()
            for item in items:
                found = _example_conversation(item)
                if found is None:
                    continue
                message, history, referent = found
                key = _conversation_key(message, Conversation(history, referent))
                h = hashlib.sha1(key.encode("utf-8")).hexdigest()
                n = 6
                while f"{letter}-{h[:n]}" in ids:
                    n += 2
                ids.add(f"{letter}-{h[:n]}")
                positive = letter == "e"
                out.append(Case(id=f"{rule.id}/{letter}-{h[:n]}", message=message,
                                expect=expect if positive else None,
                                rule=rule.id if positive else None, not_rules=() if positive else (rule.id,),
                                history=history, group=rule.id, generated=True,
                                referent=referent if positive and referents else None, has_referent=referents))
        return out

    # -- groups ------------------------------------------------------------

    def _hash(self, payload: dict, templates) -> str:
        used = set()
        for t in templates:
            for part in _template_texts(t):
                used.update(self.grammar.slots_used(part))
        if self.history_messages():
            used.update(self.grammar.slots_used("{" + HISTORY_SLOT + "}"))
        payload = dict(payload, generator=GENERATOR_VERSION, seed=self.spec.seed, min_chars=self.min_chars,
                       slots={name: list(self.grammar.slots[name]) for name in sorted(used)})
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def rule_group(self, rule) -> Group:
        try:
            src: LoadedFile | None = self.pack.source(rule)
        except KeyError:  # a pack built in code, not from files
            src = None
        file_name = _file_name(self.pack, src) if src is not None else Path(rule.file).name
        gen = dict(rule.generate or {})
        given = gen.get("limit")
        limit: int = given if isinstance(given, int) else self.spec.limit
        family = family_of(rule)
        lists = [(name, [t for t in gen.get(name) or [] if isinstance(t, (str, Mapping))], False)
                 for name, _, _ in family.corpus_lists]
        templates = [t for _, ts, _ in lists for t in ts]
        conversations = [c for c in (_example_conversation(i) for i in rule.examples + rule.counterexamples) if c]
        payload = {"rule": rule.id, "expect": family.corpus_kind, "role": getattr(rule, "role", None),
                   "generate": gen, "limit": limit,
                   "examples": [list(rule.examples), list(rule.counterexamples)] if conversations else None}
        group = Group(rule.id, file_name, self._hash(payload, templates), templates=len(templates))
        key = json.dumps([group.hash, file_name, rule.pointer, family.kind, str(rule_kind(rule)),
                          [list(rule.examples), list(rule.counterexamples)]], sort_keys=True, ensure_ascii=False,
                         default=str)
        known = _groups.get(key)
        if known is not None:
            return Group(group.name, group.source, group.hash, list(known), group.templates)
        before = len(self.problems)
        done = family.corpus_cases(self, rule, group, lists, src, file_name, limit)
        if len(self.problems) == before and done is group:
            _groups.put(key, tuple(done.cases), len(done.cases) + 1)
        return done

    def rule_cases(self, rule, group: Group, lists, src: LoadedFile | None, file_name: str, limit: int) -> Group:
        """A classification rule's cases: its templates' positives, negatives and requests, and its examples that
        are conversations."""
        kind = rule_kind(rule)
        examples = self._example_cases(rule, expect=kind, referents=False)
        if not group.templates:
            group.cases += examples
            return group
        chosen = self.expand_lists(lists, src=src, file_name=file_name, base=pointer_join(rule.pointer, "generate"),
                                   rule_id=rule.id, limit=limit)
        pos_every = 2 if kind == "correction" else 3
        group.cases += self._cases(rule.id, "p", chosen["positive"], expect=kind, rule=rule.id,
                                   history_every=pos_every)
        group.cases += self._cases(rule.id, "n", chosen["negative"], expect=DecisionKind.SUBSTANTIVE, not_rules=(rule.id,),
                                   history_every=5)
        if kind == "correction":  # a request form is no correction; one given a conversation follows it up
            group.cases += self._cases(rule.id, "r", chosen["request"], expect=None, not_rules=(rule.id,),
                                       history_every=2, not_kind=DecisionKind.CORRECTION,
                                       in_context=DecisionKind.FOLLOW_UP)
        else:
            group.cases += self._cases(rule.id, "r", chosen["request"], expect=DecisionKind.FOLLOW_UP,
                                       not_rules=(rule.id,), history_every=2)
        group.cases += examples
        return group

    def referent_cases(self, rule, group: Group, lists, src: LoadedFile | None, file_name: str, limit: int) -> Group:
        """A referent rule's cases: its conversations (templates, examples), found both ways."""
        if group.templates:
            chosen = self.expand_lists(lists, src=src, file_name=file_name,
                                       base=pointer_join(rule.pointer, "generate"), rule_id=rule.id, limit=limit,
                                       need_referent=("positive",))
            group.cases += self._cases(rule.id, "p", chosen["positive"], expect=DecisionKind.FOLLOW_UP, rule=rule.id,
                                       referent="found")
            group.cases += self._cases(rule.id, "n", chosen["negative"], expect=None, not_rules=(rule.id,),
                                       referent="none")
        group.cases += self._example_cases(rule, expect=DecisionKind.FOLLOW_UP, referents=True)
        return group

    def cross_group(self) -> Group | None:
        spec = self.spec
        if not spec.cross:
            return None
        lists = [(kind, spec.cross.get(kind, []), kind == "skip") for kind, _ in CROSS_LISTS]
        templates = [t for _, ts, _ in lists for t in ts]
        payload = {"cross": spec.cross, "limit": spec.cross_limit}
        group = Group(CROSS, spec.source, self._hash(payload, templates), templates=len(templates))
        chosen = self.expand_lists(lists, src=self.slots_source, file_name=spec.source, base="/cross", rule_id=None,
                                   limit=spec.cross_limit)
        for kind, letter in CROSS_LISTS:
            group.cases += self._cases(CROSS, letter, chosen.get(kind, []), expect=kind,
                                       history_every=5 if kind != "skip" else 0, prefix="cross")
        return group


#: the cases of a rule's group generated without a problem, by the group's hash (every input that changes them,
#: :meth:`Generator._hash`) and where the rule is; at most 100,000 cases, least recently used dropped. A pack being
#: edited generates again only the groups whose rule changed.
_groups = Memo(100_000)


def generate(pack) -> list[Group]:
    """Every group of generated cases for ``pack``, rules in pack order, then the cross-rule group.

    Of a pack built on others, only its own rules' cases (and its own slots
    file's cross-rule templates): each base's corpus holds the cases of its rules.

    Raises :class:`~cleo_rules.corpus.model.CorpusError` listing every
    template problem (unknown slot, malformed braces, a template that yields
    nothing, a message both positive and negative), each placed at its
    template in the rule file.
    """
    g = Generator(pack)
    groups = [g.rule_group(rule) for rule in pack.all_rules() if pack.owns(rule)]
    cross = g.cross_group()
    if cross is not None:
        groups.append(cross)
    if g.problems:
        raise CorpusError(g.problems, f"corpus templates of pack {pack.name} have problems")
    return groups
