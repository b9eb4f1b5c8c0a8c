"""Expand each rule's ``generate:`` templates into corpus cases.

For every rule, three lists of templates (see :mod:`.template` for the syntax):

``positive``
    each expansion must fire the rule and get its kind;
``negative``
    each expansion must not fire the rule and is searched as typed
    (``substantive``): messages that share the rule's words but carry a topic;
``request``
    each expansion must not fire the rule and must be a ``follow_up``: for a
    correction, the request forms of its verbs ("try that one").

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
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import Problem
from ..pack.load import MANIFEST, load_yaml, pointer_join
from ..text import normalize
from .files import display
from .model import CROSS, Case, CorpusError
from .template import Grammar, TemplateError, clean

GENERATOR_VERSION = 1
ENUM_CAP = 2000          # a template with more expansions than this is sampled ...
SAMPLE = 400             # ... this many, seeded, before ranking
DEFAULT_LIMIT = 40       # cases per template list when neither the rule nor the slots file says
DEFAULT_CROSS_LIMIT = 80
HISTORY_SLOT = "history"

# list name -> (id letter, expected kind or None for the rule's own kind, direction)
LISTS = (
    ("positive", "p", None),
    ("negative", "n", "substantive"),
    ("request", "r", "follow_up"),
)
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
    return "follow_up" if rule.kind == "vocabulary" else rule.kind


_FAST = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _pack_files(pack) -> dict[str, object]:
    """Each file of the pack by its name in the manifest: its data, read fast (no positions)."""
    out = {}
    root = Path(pack.path)
    try:
        manifest = yaml.load((root / MANIFEST).read_text(encoding="utf-8"), Loader=_FAST)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return out
    for name in (manifest.get("files") if isinstance(manifest, dict) else None) or []:
        if isinstance(name, str) and (root / name).is_file():
            try:
                out[name] = yaml.load((root / name).read_text(encoding="utf-8"), Loader=_FAST)
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
    return out


class _Sources(dict):
    """Rule files with positions, loaded on first use (only problems need positions)."""

    def __init__(self, pack):
        super().__init__()
        self._root = Path(pack.path)

    def get(self, name, default=None):
        if name not in self and name and (self._root / name).is_file():
            src, _ = load_yaml(self._root / name, display(self._root / name))
            self[name] = src
        return super().get(name, default) or default


def _display_name(pack, rule_file: str) -> str:
    """The rule file's name relative to the pack directory (stable whatever the working directory)."""
    try:
        return Path(rule_file).resolve().relative_to(Path(pack.path).resolve()).as_posix()
    except (ValueError, OSError):
        return Path(rule_file).name


def slots_spec(pack, files) -> SlotsSpec:
    spec = SlotsSpec(seed=pack.slots_seed)
    for name, data in files.items():
        if isinstance(data, dict) and data.get("kind") == "slots":
            spec.source = name
            if isinstance(data.get("limit"), int):
                spec.limit = data["limit"]
            cross = data.get("cross")
            if isinstance(cross, dict):
                for kind, _ in CROSS_LISTS:
                    if isinstance(cross.get(kind), list):
                        spec.cross.setdefault(kind, []).extend(t for t in cross[kind] if isinstance(t, str))
                if isinstance(cross.get("limit"), int):
                    spec.cross_limit = cross["limit"]
    return spec


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


class _Generator:
    def __init__(self, pack, sources=None):
        self.pack = pack
        self.files = _pack_files(pack)
        self.sources = sources if sources is not None else _Sources(pack)
        self.spec = slots_spec(pack, self.files)
        self.grammar = Grammar(pack.slots)
        self.min_chars = pack.settings.min_chars
        self.problems: list[Problem] = []
        self._history = None

    # -- problems --------------------------------------------------------

    def _place(self, file_name: str, base: str, list_name: str, j: int, rule_id, message, help):
        src = self.sources.get(file_name)
        ptr = pointer_join(pointer_join(base, list_name), j)
        if src is not None:
            self.problems.append(src.problem("E201", message, ptr, rule=rule_id, help=help, rank=5))
        else:
            self.problems.append(Problem("E201", message, file_name, pointer=ptr, rule=rule_id, help=help, rank=5))

    def _rule_base(self, file_name: str, rule_id: str) -> str:
        data = self.files.get(file_name)
        for key in ("sets", "rules"):
            items = data.get(key) if isinstance(data, dict) else None
            if isinstance(items, list):
                for i, item in enumerate(items):
                    if isinstance(item, dict) and item.get("id") == rule_id:
                        return pointer_join(pointer_join(f"/{key}", i), "generate")
        return "/generate"

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

    def expand_lists(self, lists, *, file_name, base, rule_id, limit):
        """``{list name: [(key, text, digest)]}``: each list filled round-robin over its templates.

        Each template offers its expansions in hash order; an expansion is
        usable when, cleaned, it is long enough (or, for ``skip``, short
        enough) and not yet taken. A message chosen for two lists is a
        problem placed at the second template.
        """
        chosen = {}
        taken: dict[str, tuple[str, int, str]] = {}
        for list_name, templates, want_skip in lists:
            sources = []
            for j, template in enumerate(templates):
                try:
                    node = self.grammar.compile(template)
                except TemplateError as exc:
                    self._place(file_name, base, list_name, j, rule_id,
                                f"{list_name} template {template!r}: {exc}", exc.help)
                    continue
                sources.append((j, template, iter(self._ranked(node, f"{rule_id}:{list_name}:{j}")), [0]))
            picked = []
            live = list(sources)
            while live and len(picked) < limit:
                still = []
                for item in live:
                    if len(picked) >= limit:
                        still.append(item)
                        continue
                    j, template, it, counts = item
                    for _digest_raw, raw in it:
                        text = clean(raw)
                        if not text or (len(text) < self.min_chars) != want_skip:
                            continue
                        counts[0] += 1
                        key = normalize(text)
                        prev = taken.get(key)
                        if prev is not None:
                            if prev[0] != list_name:
                                self._place(file_name, base, list_name, j, rule_id,
                                            f"{list_name} template {template!r} yields {text!r}, which template "
                                            f"{prev[1]} of `{prev[0]}` also yields",
                                            "a message cannot be both; make the templates differ")
                            continue
                        taken[key] = (list_name, j, text)
                        picked.append((key, text, _digest(self.spec.seed, key)))
                        still.append(item)
                        break
                    else:
                        if not counts[0]:
                            why = (f"every expansion has {self.min_chars} characters or more" if want_skip else
                                   f"every expansion is under {self.min_chars} characters (skipped, never classified)")
                            self._place(file_name, base, list_name, j, rule_id,
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
               prefix=None):
        cases, ids = [], set()
        prefix = prefix or group
        for key, text, digest in sorted(picked, key=lambda p: p[0]):
            h = hashlib.sha1(key.encode("utf-8")).hexdigest()
            n = 6
            while f"{letter}-{h[:n]}" in ids:
                n += 2
            ids.add(f"{letter}-{h[:n]}")
            cases.append(Case(id=f"{prefix}/{letter}-{h[:n]}", message=surface(text, digest), expect=expect,
                              rule=rule, not_rules=tuple(not_rules),
                              history=self._history_for(digest, history_every), group=group, generated=True))
        return cases

    # -- groups ------------------------------------------------------------

    def _hash(self, payload: dict, templates) -> str:
        used = set()
        for t in templates:
            used.update(self.grammar.slots_used(t))
        if self.history_messages():
            used.update(self.grammar.slots_used("{" + HISTORY_SLOT + "}"))
        payload = dict(payload, generator=GENERATOR_VERSION, seed=self.spec.seed, min_chars=self.min_chars,
                       slots={name: list(self.grammar.slots[name]) for name in sorted(used)})
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def rule_group(self, rule) -> Group:
        gen = dict(rule.generate or {})
        file_name = _display_name(self.pack, rule.file)
        limit = gen.get("limit") if isinstance(gen.get("limit"), int) else self.spec.limit
        lists = [(name, [t for t in gen.get(name) or [] if isinstance(t, str)], False) for name, _, _ in LISTS]
        templates = [t for _, ts, _ in lists for t in ts]
        payload = {"rule": rule.id, "expect": rule_kind(rule), "role": getattr(rule, "role", None),
                   "generate": gen, "limit": limit}
        group = Group(rule.id, file_name, self._hash(payload, templates), templates=len(templates))
        if not templates:
            return group
        chosen = self.expand_lists(lists, file_name=file_name, base=self._rule_base(file_name, rule.id),
                                   rule_id=rule.id, limit=limit)
        kind = rule_kind(rule)
        pos_every = 2 if kind == "correction" else 3
        group.cases += self._cases(rule.id, "p", chosen["positive"], expect=kind, rule=rule.id,
                                   history_every=pos_every)
        group.cases += self._cases(rule.id, "n", chosen["negative"], expect="substantive", not_rules=(rule.id,),
                                   history_every=5)
        group.cases += self._cases(rule.id, "r", chosen["request"], expect="follow_up", not_rules=(rule.id,),
                                   history_every=2)
        return group

    def cross_group(self) -> Group | None:
        spec = self.spec
        if not spec.cross:
            return None
        lists = [(kind, spec.cross.get(kind, []), kind == "skip") for kind, _ in CROSS_LISTS]
        templates = [t for _, ts, _ in lists for t in ts]
        payload = {"cross": spec.cross, "limit": spec.cross_limit}
        group = Group(CROSS, spec.source, self._hash(payload, templates), templates=len(templates))
        chosen = self.expand_lists(lists, file_name=spec.source, base="/cross", rule_id=None, limit=spec.cross_limit)
        for kind, letter in CROSS_LISTS:
            group.cases += self._cases(CROSS, letter, chosen.get(kind, []), expect=kind,
                                       history_every=5 if kind != "skip" else 0, prefix="cross")
        return group


def generate(pack, *, sources=None) -> list[Group]:
    """Every group of generated cases for ``pack``, rules in pack order, then the cross-rule group.

    Raises :class:`~cleo_rules.corpus.model.CorpusError` listing every
    template problem (unknown slot, malformed braces, a template that yields
    nothing, a message both positive and negative), each placed at its
    template in the rule file.
    """
    g = _Generator(pack, sources)
    groups = [g.rule_group(rule) for rule in pack.rules]
    cross = g.cross_group()
    if cross is not None:
        groups.append(cross)
    if g.problems:
        raise CorpusError(g.problems, f"corpus templates of pack {pack.name} have problems")
    return groups


# -- writing the corpus ---------------------------------------------------------


@dataclass
class BuildResult:
    corpus_dir: Path
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    without_templates: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return sum(len(g.cases) for g in self.groups)

    def format(self) -> str:
        from .files import display

        rules = [g for g in self.groups if g.name != CROSS]
        pos = sum(1 for g in rules for c in g.cases if c.rule)
        neg = sum(1 for g in rules for c in g.cases if c.not_rules)
        cross = sum(len(g.cases) for g in self.groups if g.name == CROSS)
        lines = [f"built {display(self.corpus_dir / 'generated')}/: {self.cases:,} cases for {len(rules)} rules "
                 f"({pos:,} positive, {neg:,} negative) and {cross:,} cross-rule cases; "
                 f"{len(self.written)} file{'s' if len(self.written) != 1 else ''} written, "
                 f"{len(self.unchanged)} unchanged, {len(self.removed)} removed"]
        lines += [f"  wrote   {w}" for w in self.written]
        lines += [f"  removed {r}" for r in self.removed]
        if self.without_templates:
            lines.append(f"  no templates (no generated cases): {', '.join(self.without_templates)}")
        return "\n".join(lines)


def build_corpus(pack, corpus_dir=None) -> BuildResult:
    """Regenerate ``corpus_dir/generated/`` (default: ``corpus/`` beside the pack).

    Only files whose cases or inputs changed are rewritten; generated files of
    rules that are gone are removed; hand-written files are never touched.
    """
    from . import files as cfiles
    from .run import default_corpus_dir, staleness

    corpus_dir = Path(corpus_dir) if corpus_dir is not None else default_corpus_dir(pack)
    groups = generate(pack)
    gdir = corpus_dir / cfiles.GENERATED_DIR
    _, existing, _ = cfiles.read_dir(corpus_dir)
    stale = {s.group for s in staleness(groups, existing, corpus_dir)}
    result = BuildResult(corpus_dir, groups=groups)
    rules = {r.id: r for r in pack.rules}
    keep = set()
    for g in groups:
        if not g.cases:
            if g.name != CROSS:
                result.without_templates.append(g.name)
            continue
        fname = cfiles.group_file(g.name)
        keep.add(fname)
        path = gdir / fname
        if g.name not in stale and path.is_file():
            result.unchanged.append(cfiles.display(path))
            continue
        header = {"pack": pack.name, "pack_version": str(pack.version)}
        if g.name != CROSS:
            header["rule"] = g.name
        header.update({"from": g.source, "hash": g.hash, "generator": GENERATOR_VERSION})
        what = (f"rule {g.name} ({g.source}, {rules[g.name].kind})" if g.name in rules
                else f"the cross-rule cases ({g.source})")
        gdir.mkdir(parents=True, exist_ok=True)
        path.write_text(cfiles.render(path, header, g.cases, what=what), encoding="utf-8")
        result.written.append(cfiles.display(path))
    for cf in existing:
        if cf.path.name not in keep and cf.generated:
            cf.path.unlink()
            result.removed.append(cf.display)
    return result
