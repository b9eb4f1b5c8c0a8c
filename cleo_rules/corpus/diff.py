"""What a rule change does: every message whose kind or query changes between two packs.

The messages compared are the checked-in corpus, the cases each pack's own
templates generate (so a new template's cases are seen before the corpus is
rebuilt), and any JSON Lines files given (real traffic: ``{"message": ...,
"history": [...]}`` or a bare JSON string per line). Each change is shown
side by side, old and new, with a verdict when the message is a corpus case:
**broken** (the old pack got it right, the new one does not), **fixed** (the
reverse) or **changed** (neither, or a message with no expectation). Changes
of rule only (same kind and query) are listed after.

A pack is a directory, an installed pack's name, or ``REV:PATH``, a pack as
committed in git (``main:rules``, ``HEAD~1:rules``), so a pull request can be
reviewed without a second checkout.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import tempfile
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..jsonl import JsonLineError, read_lines
from ..text import normalize
from .files import default_corpus_dir
from .generate import generate
from .judge import Evaluator
from .model import Case, CorpusError, history_item, plain_item
from .run import load_cases

if TYPE_CHECKING:
    from ..pack.model import Pack


@dataclass(frozen=True)
class Seen:
    kind: str
    rule: str | None
    query: str | None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "rule": self.rule, "query": self.query}


@dataclass
class CaseChange:
    case: Case
    expected: bool           # the case carries an expectation (corpus case)
    old: Seen
    new: Seen
    verdict: str             # broken, fixed, changed, rule

    def to_dict(self) -> dict:
        c = self.case
        d = {"id": c.id, "message": c.message, "history": [plain_item(h) for h in c.history], "source": c.source,
             "verdict": self.verdict, "old": self.old.to_dict(), "new": self.new.to_dict()}
        if self.expected:
            d["expected"] = {"kind": c.expect, "rule": c.rule, "not": list(c.not_rules)}
        return d


@dataclass
class DiffReport:
    old: Pack
    new: Pack
    old_label: str
    new_label: str
    compared: int = 0
    from_corpus: int = 0
    from_files: dict = field(default_factory=dict)
    changes: list = field(default_factory=list)       # kind or query changed
    rule_changes: list = field(default_factory=list)  # same kind and query, other rule
    notes: list = field(default_factory=list)

    def counts(self) -> dict:
        out = {"changed": len(self.changes), "broken": 0, "fixed": 0, "rule_only": len(self.rule_changes)}
        for ch in self.changes:
            if ch.verdict in ("broken", "fixed"):
                out[ch.verdict] += 1
        return out

    def summary_line(self) -> str:
        c = self.counts()
        if not c["changed"] and not c["rule_only"]:
            return f"no changes: {self.compared:,} messages get the same kind, rule and query from both packs"
        parts = [f"{c['changed']} change{'s' if c['changed'] != 1 else ''} of kind or query"]
        detail = [f"{c[k]} {k}" for k in ("broken", "fixed") if c[k]]
        other = c["changed"] - c["broken"] - c["fixed"]
        if other:
            detail.append(f"{other} without expectation" if not detail else f"{other} other")
        if detail:
            parts[0] += f" ({', '.join(detail)})"
        parts.append(f"{c['rule_only']} of rule only")
        return f"{self.compared:,} messages compared: " + "; ".join(parts)

    def format(self) -> str:
        o, n = self.old, self.new
        sources = [f"{self.from_corpus:,} corpus cases"] + [f"{k:,} from {f}" for f, k in self.from_files.items()]
        lines = [f"corpus diff: {o.name} {o.version} ({o.content_hash}) {self.old_label}  ->  "
                 f"{n.name} {n.version} ({n.content_hash}) {self.new_label}",
                 f"compared {self.compared:,} messages: {', '.join(sources)}"]
        lines += [f"note: {note}" for note in self.notes]
        for ch in self.changes:
            lines.append("")
            lines += _side_by_side(ch)
        if self.rule_changes:
            lines += ["", "rule changed, same kind and query:"]
            for ch in self.rule_changes:
                lines.append(f"  {ch.case.id}  {json.dumps(ch.case.message, ensure_ascii=False)}  "
                             f"{ch.old.rule} -> {ch.new.rule} ({ch.new.kind})")
        lines += ["", self.summary_line()]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        def ident(p, label):
            return {"name": p.name, "version": p.version, "hash": p.content_hash, "pack": label}

        return {"old": ident(self.old, self.old_label), "new": ident(self.new, self.new_label),
                "compared": self.compared, "from_corpus": self.from_corpus, "from_files": self.from_files,
                "summary": self.counts(), "notes": self.notes,
                "changes": [c.to_dict() for c in self.changes],
                "rule_changes": [c.to_dict() for c in self.rule_changes]}


def _cell(value) -> str:
    if value is None:
        return "(none)"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) and ("\n" in value or value == "") \
        else str(value)


def _side_by_side(ch: CaseChange, width: int = 44) -> list[str]:
    c = ch.case
    head = f"{ch.verdict.upper():<8}{c.id}  {json.dumps(c.message, ensure_ascii=False)}"
    lines = [head]
    if c.history:
        lines.append(f"  {'history':<10}{json.dumps([plain_item(h) for h in c.history], ensure_ascii=False)}")
    if ch.expected:
        lines.append(f"  {'expected':<10}{c.expect or 'any kind'}" + (f" by {c.rule}" if c.rule else "")
                     + (f", not {', '.join(c.not_rules)}" if c.not_rules else ""))
    rows = [("", "old", "new"), ("kind", ch.old.kind, ch.new.kind), ("rule", _cell(ch.old.rule), _cell(ch.new.rule)),
            ("query", _cell(ch.old.query), _cell(ch.new.query))]
    left = min(width, max(len(str(r[1])) for r in rows if r[1] != r[2] or not r[0]))
    for label, a, b in rows:
        if label and a == b:
            lines.append(f"  {label:<10}{a}   (same)")
            continue
        wa = textwrap.wrap(str(a), left) or [""]
        wb = textwrap.wrap(str(b), 200) or [""]
        mark = "  " if not label else "! "
        for i in range(max(len(wa), len(wb))):
            ca = wa[i] if i < len(wa) else ""
            cb = wb[i] if i < len(wb) else ""
            lines.append(f"{mark if i == 0 else '  '}{label if i == 0 else '':<10}{ca:<{left}}   {cb}".rstrip())
    if c.source:
        lines.append(f"  {'at':<10}{c.source}")
    return lines


# -- packs from git -------------------------------------------------------------


def _git(args, cwd) -> bytes:
    try:
        res = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60)
    except FileNotFoundError:
        raise UsageError("git is not installed, so REV:PATH cannot name a pack") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"git {' '.join(args)} took too long") from None
    if res.returncode != 0:
        raise UsageError(f"git {' '.join(args)}: {res.stderr.decode('utf-8', 'replace').strip()}")
    return res.stdout


def _revision(spec: str, rev: str, top: Path) -> str:
    """The tree ``rev`` names, as a hex object id, verified before git is given anything else.

    A revision is never passed where git could read it as an option: one
    starting with ``-`` is refused, and it is resolved with ``--verify`` after
    ``--end-of-options``, so only the id git resolved it to reaches ``git archive``.
    """
    if rev.startswith("-") or any(ord(c) < 32 for c in rev):
        raise UsageError(f"{spec}: {rev!r} is not a git revision")
    try:
        out = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{tree}}"], top)
    except UsageError:
        raise UsageError(f"{spec}: {rev!r} is not a revision of the git repository at {top}") from None
    tree = out.decode("ascii", "replace").strip()
    if not (tree and all(c in "0123456789abcdef" for c in tree)):  # pragma: no cover - git gives an id or fails
        raise UsageError(f"{spec}: git could not resolve {rev!r}")
    return tree


def _is_git_spec(spec: str) -> bool:
    if os.path.exists(spec) or ":" not in spec:
        return False
    rev, _, path = spec.partition(":")
    return bool(rev) and not (len(rev) == 1 and rev.isalpha() and path.startswith(("\\", "/")))  # not C:\


@contextmanager
def pack_dir(spec: str):
    """A directory holding the pack ``spec`` names; ``REV:PATH`` is extracted from git into a temporary one."""
    if not _is_git_spec(spec):
        yield spec
        return
    rev, _, path = spec.partition(":")
    top = Path(_git(["rev-parse", "--show-toplevel"], os.getcwd()).decode().strip())
    if path.startswith(("./", "../")) or path in (".", ".."):
        rel = os.path.relpath(Path(os.getcwd(), path).resolve(), top)
    else:
        rel = path.strip("/") or "."
    if rel.startswith(".."):
        raise UsageError(f"{spec}: {path} is outside the git repository at {top}")
    tree = _revision(spec, rev, top)
    data = _git(["archive", "--format=tar", "--end-of-options", tree, rel], top)  # after the tree id: paths
    with tempfile.TemporaryDirectory(prefix="cleo-rules-pack-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
            for m in members:
                target = Path(tmp, m.name).resolve()
                if Path(tmp).resolve() not in target.parents and target != Path(tmp).resolve():
                    raise UsageError(f"{spec}: unsafe path {m.name} in the archive")
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, members=members, filter="data")
            else:  # pragma: no cover - Python before 3.11.4
                tar.extractall(tmp, members=members)
        yield str(Path(tmp, rel))


# -- inputs ---------------------------------------------------------------------


def read_jsonl(path) -> list[Case]:
    """Messages from a JSON Lines file: ``{"message": str, "history": [...], "id": any}`` or a JSON string.

    History items are strings (user messages) or ``{"role": "user" | "assistant", "content": str}``.
    Lines are read by :func:`cleo_rules.jsonl.read_lines` (UTF-8, bounded
    nesting, no lone surrogates, a byte order mark dropped).
    """
    out = []
    shown = str(path)
    try:
        with open(path, "rb") as fh:
            for number, item in read_lines(fh):
                if isinstance(item, JsonLineError):
                    raise UsageError(f"{shown}:{number}: {item}", code=item.code)
                if isinstance(item, str):
                    item = {"message": item}
                if not isinstance(item, dict) or not isinstance(item.get("message"), str):
                    raise UsageError(f"{shown}:{number}: each line must be a JSON string or an object with a "
                                     "\"message\" string")
                hist = item.get("history") or []
                if not isinstance(hist, list):
                    raise UsageError(f"{shown}:{number}: \"history\" must be a list of strings or "
                                     "{\"role\", \"content\"}")
                turns = []
                for j, h in enumerate(hist):
                    try:
                        turns.append(history_item(h))
                    except ValueError as exc:
                        raise UsageError(f"{shown}:{number}: history[{j}]: {exc}") from None
                ident = item.get("id")
                out.append(Case(id=str(ident) if ident is not None else f"{Path(shown).name}:{number}",
                                message=item["message"], expect=None, history=tuple(turns), group="",
                                generated=False, file=shown, line=number))
    except OSError as exc:
        raise UsageError(f"{shown}: cannot read: {exc}") from None
    return out


def _generated(pack, label, notes) -> list[Case]:
    try:
        return [c for g in generate(pack) for c in g.cases]
    except CorpusError as exc:
        notes.append(f"the templates of {label} have problems, so its generated cases are left out: "
                     f"{exc.problems[0].format().splitlines()[0]}")
        return []


def diff_packs(old, new, *, corpus_dir=None, jsonl=(), old_label="old", new_label="new") -> DiffReport:
    """Compare two compiled packs on the corpus, both packs' generated cases and the ``jsonl`` files."""
    report = DiffReport(old, new, old_label, new_label)
    corpus_dir = Path(corpus_dir) if corpus_dir is not None else default_corpus_dir(new)
    on_disk, _, _, problems = load_cases(corpus_dir)
    if problems:
        report.notes.append(f"{len(problems)} problem(s) reading {corpus_dir}: {problems[0].format().splitlines()[0]}")
    seen: set = set()
    items: list[tuple[Case, bool]] = []

    def add(cases, expected):
        count = 0
        for c in cases:
            key = (normalize(c.message), json.dumps([plain_item(h) for h in c.history], ensure_ascii=False))
            if key in seen:
                continue
            seen.add(key)
            items.append((c, expected))
            count += 1
        return count

    report.from_corpus = add(on_disk, True)
    report.from_corpus += add(_generated(new, new_label, report.notes), True)
    report.from_corpus += add(_generated(old, old_label, report.notes), True)
    for path in jsonl:
        report.from_files[str(path)] = add(read_jsonl(path), False)
    report.compared = len(items)
    ev_old, ev_new = Evaluator(old), Evaluator(new)
    for case, expected in items:
        a = old.classify(case.message, case.history)
        b = new.classify(case.message, case.history)
        if (a.kind, a.rule, a.query) == (b.kind, b.rule, b.query):
            continue
        seen_a, seen_b = Seen(a.kind, a.rule, a.query), Seen(b.kind, b.rule, b.query)
        if (a.kind, a.query) == (b.kind, b.query):
            report.rule_changes.append(CaseChange(case, expected, seen_a, seen_b, "rule"))
            continue
        verdict = "changed"
        if expected:
            ok_a, ok_b = ev_old.judge(case, a).ok, ev_new.judge(case, b).ok
            verdict = "broken" if ok_a and not ok_b else "fixed" if ok_b and not ok_a else "changed"
        report.changes.append(CaseChange(case, expected, seen_a, seen_b, verdict))
    order = {"broken": 0, "fixed": 1, "changed": 2}
    report.changes.sort(key=lambda ch: (order[ch.verdict], ch.case.id))
    report.rule_changes.sort(key=lambda ch: ch.case.id)
    return report
