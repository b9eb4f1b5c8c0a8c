"""Run a corpus against a pack: per-rule counts, failing cases, coverage, staleness.

For each rule R:

Rules are the classification rules and the referent rules; a referent rule
"fires" on a case when it is the rule that found the decision's referent
(:attr:`Decision.parts`, the referent part's ``rule``).

* **TP** / **FN**: positive cases of R on which R fired / did not fire;
* **TN**: negative cases of R (its ``negative`` and ``request`` cases, and
  hand-written cases with ``not: R``) on which R did not fire;
* **FP**: cases anywhere in the corpus on which R fired but must not have:
  R's own negatives, and cases of other rules or cross-rule cases that
  failed because R took them.

A case passes when it gets its expected kind, its ``rule`` fires, none of its
``not`` rules fires, its referent (when it names one) is the one found, and
(with a history) its query is shaped right: a follow-up combined with its
anchor (and, with role-tagged history, the referent the decision found),
anything else searched as typed.

The corpus fails when any case fails, when it is stale (templates, slots or
limits changed since ``cleo-rules corpus build``, a generated file was edited,
or a rule has no generated file), when a rule has no positive or no negative
case, when a rule fires on none of its positives, or when two cases demand
different things of the same message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Problem
from ..shaping import render
from ..text import normalize
from . import files as cfiles
from .generate import GENERATOR_VERSION, generate, rule_kind
from .model import CROSS, HAND, Case, CorpusError, plain, problem, role_tagged, user_turns

if TYPE_CHECKING:
    from ..pack.compile import Pack

MAX_SHOWN = 20  # failing cases listed per rule in text output unless asked for all


@dataclass(frozen=True)
class Outcome:
    """One case run: the decision and why it failed (empty ``reasons``: it passed)."""

    case: Case
    kind: str
    rule: str | None
    matched: str | None
    query: str | None
    anchor: str | None
    reasons: tuple[str, ...] = ()
    culprit: str | None = None  # the rule that fired where it must not
    referent: str | None = None        # the referent part searched, if any
    referent_rule: str | None = None   # the referent rule that found it (None: none did)

    @property
    def ok(self) -> bool:
        return not self.reasons

    def got(self) -> str:
        text = f"got {self.kind}"
        if self.rule:
            text += f" by {self.rule}"
            if self.matched is not None:
                text += f" on {json.dumps(self.matched, ensure_ascii=False)}"
        elif self.kind not in ("skip",):
            text += " (no rule fired)"
        return text

    def expected(self) -> str:
        c = self.case
        text = f"expected {c.expect or 'any kind'}"
        if c.rule:
            text += f" by {c.rule}"
        if c.has_referent:
            text += (f", referent {json.dumps(c.referent, ensure_ascii=False)}" if c.referent is not None
                     else ", no referent" + (f" by {', '.join(_referent_nots(c))}" if _referent_nots(c) else ""))
        return text

    def got_referent(self) -> str:
        if self.referent_rule:
            return f"referent {json.dumps(self.referent, ensure_ascii=False)} by {self.referent_rule}"
        return "no referent found" if self.referent is None else \
            f"no referent found (the reply excerpt {json.dumps(self.referent, ensure_ascii=False)})"

    def to_dict(self, label: str | None = None) -> dict:
        c = self.case
        file, _, line = c.source.rpartition(":")
        d = {"id": c.id, "message": c.message, "source": c.source,
             "file": file or c.source, "line": int(line) if line.isdigit() else None,
             "expected": {"kind": c.expect, "rule": c.rule, "not": list(c.not_rules)},
             "got": {"kind": self.kind, "rule": self.rule, "matched": self.matched, "query": self.query,
                     "anchor": self.anchor, "referent": self.referent, "referent_rule": self.referent_rule},
             "reasons": list(self.reasons)}
        if c.has_referent:
            d["expected"]["referent"] = c.referent
        if c.history:
            d["history"] = [plain(h) for h in c.history]
        if label:
            d["type"] = label
        return d


@dataclass
class RuleStats:
    rule: str
    kind: str          # the kind its positives must get
    file: str
    line: int
    positives: int = 0
    negatives: int = 0
    tp: int = 0
    fn: int = 0
    tn: int = 0
    fp: int = 0
    failures: list = field(default_factory=list)  # (label, Outcome)

    def to_dict(self) -> dict:
        return {"rule": self.rule, "kind": self.kind, "file": self.file, "line": self.line,
                "positives": self.positives, "negatives": self.negatives,
                "tp": self.tp, "fn": self.fn, "tn": self.tn, "fp": self.fp,
                "failures": [o.to_dict(label) for label, o in self.failures]}


@dataclass
class GroupStats:
    name: str
    cases: int = 0
    failures: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"group": self.name, "cases": self.cases, "failed": len(self.failures),
                "failures": [o.to_dict(label) for label, o in self.failures]}


@dataclass
class Stale:
    group: str
    file: str
    reason: str

    def to_dict(self) -> dict:
        return {"rule": None if self.group == CROSS else self.group, "file": self.file, "reason": self.reason}


@dataclass
class Report:
    pack: Pack
    corpus_dir: Path
    outcomes: list = field(default_factory=list)
    rules: list = field(default_factory=list)      # RuleStats, pack order
    groups: list = field(default_factory=list)     # GroupStats: cross-rule, hand-written
    stale: list = field(default_factory=list)      # Stale
    problems: list = field(default_factory=list)   # Problem: coverage, contradictions, files, templates
    generated: int = 0
    hand_written: int = 0
    exists: bool = True

    @property
    def failed(self) -> list:
        return [o for o in self.outcomes if not o.ok]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.stale and not self.problems

    @property
    def uncovered(self) -> list:
        return sorted({p.rule for p in self.problems if p.code in ("E220", "E221") and p.rule})

    def totals(self) -> dict:
        t = {k: sum(getattr(r, k) for r in self.rules) for k in ("tp", "fn", "tn", "fp")}
        return t

    # -- output ------------------------------------------------------------

    def summary_line(self) -> str:
        n, failed = len(self.outcomes), len(self.failed)
        t = self.totals()
        rules = len(self.rules)
        covered = rules - len(self.uncovered)
        passed = "none to run" if not n else "all passed" if not failed else f"{n - failed:,} passed, {failed:,} failed"
        parts = [f"{n:,} cases, {passed}",
                 f"TP {t['tp']:,} TN {t['tn']:,} FP {t['fp']:,} FN {t['fn']:,}",
                 f"{rules} rules, " + ("all covered both ways" if covered == rules else
                                       f"{covered} covered both ways, {rules - covered} not"),
                 "corpus stale" if self.stale else "corpus up to date"]
        others = [p for p in self.problems if p.code not in ("E220", "E221")]
        if others:
            parts.append(f"{len(others)} corpus problem{'s' if len(others) != 1 else ''}")
        return ("ok: " if self.ok else "FAILED: ") + "; ".join(parts)

    def format(self, *, max_shown: int = MAX_SHOWN, table: bool = True) -> str:
        """The report for people: the per-rule table, failing cases by rule, staleness, problems, summary.

        ``table=False`` leaves out the heading and the table (``cleo-rules
        check`` prints only what is wrong); ``max_shown=0`` lists every failing case.
        """
        p = self.pack
        lines = []
        if table:
            lines += [f"corpus check: {p.name} {p.version} ({p.content_hash}) against "
                      f"{cfiles.display(self.corpus_dir)}/ ({len(self.outcomes):,} cases: {self.generated:,} generated, "
                      f"{self.hand_written:,} hand-written)", ""]
            width = max([len(r.rule) for r in self.rules] + [len(CROSS), len(HAND)]) + 2
            lines.append(f"{'rule':<{width}}{'pos':>5}{'neg':>5}{'TP':>6}{'FN':>5}{'TN':>6}{'FP':>5}")
            for r in self.rules:
                mark = "" if not r.failures else "  <- fails"
                lines.append(f"{r.rule:<{width}}{r.positives:>5}{r.negatives:>5}{r.tp:>6}{r.fn:>5}{r.tn:>6}{r.fp:>5}"
                             f"{mark}")
            for g in self.groups:
                if g.cases:
                    what = "case" if g.cases == 1 else "cases"
                    if g.name == HAND:
                        what += " naming no rule"
                    lines.append(f"{g.name:<{width}}{g.cases:>5} {what}, {len(g.failures)} failed")
        blocks = [(f"{r.rule} ({r.file}:{r.line}): TP {r.tp} FN {r.fn} TN {r.tn} FP {r.fp}", r.failures)
                  for r in self.rules if r.failures]
        blocks += [(f"{g.name}: {len(g.failures)} of {g.cases} cases failed", g.failures)
                   for g in self.groups if g.failures]
        for head, failures in blocks:
            lines += ["", f"FAIL {head}"] + _case_lines(failures, max_shown)
        if self.stale:
            lines += ["", "stale: the corpus is stale: run `cleo-rules corpus build`"]
            for s in self.stale:
                who = "cross-rule cases" if s.group == CROSS else s.group
                lines.append(f"  {who}: {s.reason} ({s.file})")
        if self.problems:
            lines.append("")
            lines += [p.format() for p in self.problems]
        if table:
            lines += ["", self.summary_line()]
        return "\n".join(lines).strip("\n")

    def rule_text(self, rule_id: str) -> str:
        """What is wrong with one rule (or group: :data:`CROSS`, :data:`HAND`): empty when nothing is."""
        lines = []
        for r in self.rules:
            if r.rule == rule_id and r.failures:
                lines += [f"{r.rule} ({r.file}:{r.line}): TP {r.tp} FN {r.fn} TN {r.tn} FP {r.fp}; "
                          f"{len(r.failures)} failing case{'s' if len(r.failures) != 1 else ''}"]
                lines += _case_lines(r.failures, 0)
        for g in self.groups:
            if g.name == rule_id and g.failures:
                lines += [f"{g.name}: {len(g.failures)} of {g.cases} cases failed"] + _case_lines(g.failures, 0)
        lines += [p.format() for p in self.problems if p.rule == rule_id]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        p = self.pack
        return {
            "ok": self.ok,
            "pack": {"name": p.name, "version": p.version, "hash": p.content_hash, "path": str(p.path)},
            "corpus": {"dir": cfiles.display(self.corpus_dir), "exists": self.exists,
                       "cases": len(self.outcomes), "generated": self.generated, "hand_written": self.hand_written,
                       "generator": GENERATOR_VERSION},
            "summary": {"cases": len(self.outcomes), "passed": len(self.outcomes) - len(self.failed),
                        "failed": len(self.failed), **self.totals(), "rules": len(self.rules),
                        "uncovered": self.uncovered, "stale": bool(self.stale)},
            "rules": [r.to_dict() for r in self.rules],
            "groups": [g.to_dict() for g in self.groups],
            "stale": [s.to_dict() for s in self.stale],
            "problems": [pr.to_dict() for pr in self.problems],
        }


def _case_lines(failures, max_shown: int) -> list[str]:
    lines = []
    shown = failures if not max_shown else failures[:max_shown]
    for label, o in shown:
        lines.append(f"  {label:<5} {o.case.id}  {json.dumps(o.case.message, ensure_ascii=False)}")
        if o.case.history:
            lines.append(f"        history: {json.dumps([plain(h) for h in o.case.history], ensure_ascii=False)}")
        lines.append(f"        {o.expected()}, {o.got()}")
        if o.case.has_referent or any(r.startswith("referent") for r in o.reasons):
            lines.append(f"        {o.got_referent()}")
        for reason in o.reasons:
            if reason.startswith("query"):
                lines.append(f"        {reason}")
        if o.case.source:
            lines.append(f"        at {o.case.source}")
    if len(shown) < len(failures):
        lines.append(f"  ... and {len(failures) - len(shown)} more (--all lists every one; --json too)")
    return lines


# -- evaluation ---------------------------------------------------------------


def _referent_nots(case: Case) -> list[str]:
    return [r for r in case.not_rules if r.startswith("referent.")]


def found_referent(d) -> tuple[str | None, str | None]:
    """``(text, rule)`` of the decision's referent part: what the follow-up is searched with, and the
    referent rule that found it (``rule`` is None for the reply excerpt searched when no rule finds one)."""
    for part in d.parts:
        if part.name == "referent":
            return part.text, part.rule
    return None, None


class Evaluator:
    """Runs cases against one pack and says why each one fails."""

    def __init__(self, pack):
        self.pack = pack
        self.referent_ids = frozenset(r.id for r in pack.referent_rules)
        self.rules = {r.id: r for r in pack.rules + pack.referent_rules}
        self.vocab_ids = frozenset(s.id for s in pack.vocab_sets)
        self.fillers = frozenset(s.id for s in pack.vocab_sets if s.role == "filler")

    def fires(self, rule_id: str, kind: str, fired: str | None, referent_rule: str | None = None) -> bool:
        """Whether ``rule_id`` fired. A filler set never names a decision: it fires when any vocabulary set does;
        a referent rule fires when it found the referent (``referent_rule``)."""
        if rule_id in self.referent_ids:
            return referent_rule == rule_id
        if rule_id in self.fillers:
            return kind == "follow_up" and fired in self.vocab_ids
        return fired == rule_id

    def fired(self, rule_id: str, o: Outcome) -> bool:
        """Whether ``rule_id`` fired on the case of outcome ``o``."""
        return self.fires(rule_id, o.kind, o.rule, o.referent_rule)

    def run(self, case: Case) -> Outcome:
        return self.judge(case, self.pack.classify(case.message, case.history))

    def judge(self, case: Case, d) -> Outcome:
        """How the decision ``d`` (for ``case``) measures up to the case's expectations."""
        reasons = []
        culprit = None
        ref_text, ref_rule = found_referent(d)
        if case.expect is not None and d.kind != case.expect:
            reasons.append(f"kind is {d.kind}, expected {case.expect}")
        if case.rule:
            if case.rule not in self.rules:
                reasons.append(f"rule {case.rule} is not in the pack")
            elif not self.fires(case.rule, d.kind, d.rule, ref_rule):
                reasons.append(f"{case.rule} did not fire")
        for nr in case.not_rules:
            if nr in self.rules and self.fires(nr, d.kind, d.rule, ref_rule):
                reasons.append(f"{nr} fired")
                culprit = (d.rule if d.rule else nr) if nr not in self.referent_ids else nr
        if case.has_referent:
            if case.referent is not None:
                if ref_text != case.referent or ref_rule is None:
                    reasons.append(f"referent is {json.dumps(ref_text if ref_rule else None, ensure_ascii=False)}, "
                                   f"expected {json.dumps(case.referent, ensure_ascii=False)}")
            elif ref_rule is not None and not _referent_nots(case):
                reasons.append(f"referent {json.dumps(ref_text, ensure_ascii=False)} found by {ref_rule}, "
                               f"expected none")
                culprit = culprit or ref_rule
        if case.query is not None:
            if d.query != case.query:
                reasons.append(f"query is {json.dumps(d.query, ensure_ascii=False)}, "
                               f"expected {json.dumps(case.query, ensure_ascii=False)}")
        elif case.history and (case.expect is None or d.kind == case.expect):
            reasons += self._shape(case, d)
        if reasons and culprit is None:
            kind_ok = case.expect is None or d.kind == case.expect
            if case.rule in self.referent_ids and kind_ok:
                culprit = ref_rule if ref_rule and ref_rule != case.rule else None  # another referent rule answered
            elif d.rule and d.rule != case.rule:
                culprit = d.rule
        return Outcome(case, d.kind, d.rule, d.matched, d.query, d.anchor, tuple(reasons), culprit,
                       ref_text, ref_rule)

    def _shape(self, case: Case, d) -> list[str]:
        expect = case.expect or d.kind
        if role_tagged(case.history):
            return self._shape_parts(case, d, expect)
        if expect == "follow_up":
            anchor = case.anchor if case.anchor is not None else case.history[-1]
            want = render(self.pack.settings.combine, anchor=anchor, message=case.message)
            if d.query == want:
                return []
            if d.anchor is None:
                kinds = ", ".join(f"{json.dumps(h, ensure_ascii=False)} is {self.pack.kind_of(h)}"
                                  for h in case.history[-3:])
                return [f"query not combined: no earlier message was taken as substantive ({kinds})"]
            return [f"query combined with {json.dumps(d.anchor, ensure_ascii=False)}, "
                    f"expected {json.dumps(anchor, ensure_ascii=False)}"]
        if expect in ("correction", "substantive") and d.query != case.message:
            return [f"query is {json.dumps(d.query, ensure_ascii=False)}: a {expect} must be searched as typed"]
        return []

    def _shape_parts(self, case: Case, d, expect: str) -> list[str]:
        """With role-tagged history: a follow-up's query is the combine template over its own parts, its anchor
        one of the user's turns (``case.anchor`` when given), never the assistant's; others are searched as typed."""
        if expect != "follow_up":
            if expect in ("correction", "substantive") and d.query != case.message:
                return [f"query is {json.dumps(d.query, ensure_ascii=False)}: a {expect} must be searched as typed"]
            return []
        out = []
        users = user_turns(case.history)
        if case.anchor is not None and d.anchor != case.anchor:
            out.append(f"query combined with {json.dumps(d.anchor, ensure_ascii=False)}, "
                       f"expected {json.dumps(case.anchor, ensure_ascii=False)}")
        elif d.anchor is not None and d.anchor not in users:
            out.append(f"query combined with {json.dumps(d.anchor, ensure_ascii=False)}, which is no user turn")
        ref_text, _ = found_referent(d)
        want = render(self.pack.settings.combine, anchor=d.anchor or "", referent=ref_text or "",
                      message=case.message)
        if d.anchor is None and ref_text is None:
            want = case.message
        if d.query != want:
            out.append(f"query is {json.dumps(d.query, ensure_ascii=False)}, expected the combine template over "
                       f"its parts: {json.dumps(want, ensure_ascii=False)}")
        return out


def _label(o: Outcome, rule_id: str) -> str:
    c = o.case
    if c.rule == rule_id:
        return "FN" if any(r.endswith(" did not fire") for r in o.reasons) else _other(o)
    if rule_id in c.not_rules and any(r == f"{rule_id} fired" for r in o.reasons):
        return "FP"
    if o.culprit == rule_id:
        return "FP"
    return _other(o)


def _other(o: Outcome) -> str:
    if not any(r.startswith("kind") for r in o.reasons):
        if any(r.startswith("referent") for r in o.reasons):
            return "REF"
        if any(r.startswith("query") for r in o.reasons):
            return "QUERY"
    return "KIND"


def tally(pack, outcomes) -> tuple[list[RuleStats], list[GroupStats]]:
    ev = Evaluator(pack)
    stats = {r.id: RuleStats(r.id, rule_kind(r), r.file, r.line) for r in pack.rules + pack.referent_rules}
    cross, hand = GroupStats(CROSS), GroupStats(HAND)
    for o in outcomes:
        c = o.case
        owners = []
        if c.rule in stats:
            s = stats[c.rule]
            s.positives += 1
            if ev.fired(c.rule, o):
                s.tp += 1
            else:
                s.fn += 1
            owners.append(c.rule)
        for nr in c.not_rules:
            if nr in stats:
                s = stats[nr]
                s.negatives += 1
                if ev.fired(nr, o):
                    s.fp += 1
                else:
                    s.tn += 1
                owners.append(nr)
        stray = o.culprit if (not o.ok and o.culprit in stats and o.culprit not in owners) else None
        if stray:
            stats[stray].fp += 1
        if o.ok:
            if not owners:
                (hand if c.group == HAND else cross).cases += 1
            continue
        for rid in owners:
            stats[rid].failures.append((_label(o, rid), o))
        if stray:
            stats[stray].failures.append(("FP", o))
        if not owners:
            g = hand if c.group == HAND else cross
            g.cases += 1
            if not stray:
                g.failures.append((_other(o), o))
    return list(stats.values()), [cross, hand]


# -- staleness, coverage, contradictions ---------------------------------------


def _same(a: Case, b: Case) -> bool:
    return (a.id, a.message, a.expect, a.rule, a.not_rules, a.history, a.has_referent, a.referent) == \
           (b.id, b.message, b.expect, b.rule, b.not_rules, b.history, b.has_referent, b.referent)


def staleness(groups, generated_files, corpus_dir: Path) -> list[Stale]:
    out = []
    gdir = corpus_dir / cfiles.GENERATED_DIR
    by_name = {cf.path.name: cf for cf in generated_files}
    expected = set()
    for g in groups:
        fname = cfiles.group_file(g.name)
        if not g.cases:
            continue
        expected.add(fname)
        shown = cfiles.display(gdir / fname)
        cf = by_name.get(fname)
        if cf is None:
            out.append(Stale(g.name, shown, "no generated file yet"))
        elif cf.header.get("hash") != g.hash:
            out.append(Stale(g.name, shown, "its templates, slots or limits changed since the file was built"))
        elif len(cf.cases) != len(g.cases) or not all(_same(a, b) for a, b in zip(cf.cases, g.cases)):
            out.append(Stale(g.name, shown, "the generated file was edited by hand; put hand-written cases in "
                                            f"{cfiles.display(corpus_dir / 'regressions.yaml')}"))
    for name, cf in sorted(by_name.items()):
        if name not in expected:
            rule = cf.header.get("rule") or name[:-5]
            out.append(Stale(rule, cf.display, f"rule {rule} is not in the pack or has no templates any more"))
    return out


def coverage(pack, stats: list[RuleStats]) -> list[Problem]:
    out = []
    for s in stats:
        missing = [what for what, n in (("positive", s.positives), ("negative", s.negatives)) if n == 0]
        if missing:
            out.append(problem("E220", f"no {' and no '.join(missing)} case in the corpus", s.file, s.line, 1,
                               rule=s.rule, rank=20,
                               help="add `generate:` templates (positive, negative) to the rule and run "
                                    "`cleo-rules corpus build`, or hand-written cases with `rule:`/`not:`"))
        elif s.tp == 0:
            out.append(problem("E221", f"fires on none of its {s.positives} positive cases", s.file, s.line, 1,
                               rule=s.rule, rank=20,
                               help="the rule is dead: an earlier rule takes its messages, or its pattern or "
                                    "words no longer match; run `cleo-rules explain` on one of them"))
    return out


def _contradiction_key(c: Case):
    """Cases that must agree: the same message, and with role-tagged history the same conversation.

    The assistant's turns decide what a follow-up points at (and whether a
    definite description has an antecedent), so a message in two
    conversations may rightly get two decisions; with user messages only the
    kind is taken to depend on the message alone.
    """
    if not role_tagged(c.history):
        return normalize(c.message)
    return normalize(c.message), json.dumps([plain(h) for h in c.history], ensure_ascii=False)


def contradictions(cases) -> list[Problem]:
    seen: dict = {}
    out = []
    for c in cases:
        key = _contradiction_key(c)
        other = seen.get(key)
        if other is None:
            seen[key] = c
            continue
        clash = None
        if other.expect is not None and c.expect is not None and other.expect != c.expect:
            clash = f"expects {c.expect}, but {other.id} expects {other.expect}"
        elif c.has_referent and other.has_referent and c.referent != other.referent and \
                c.referent is not None and other.referent is not None:
            clash = f"expects referent {c.referent!r}, but {other.id} expects {other.referent!r}"
        elif c.rule and other.rule and c.rule != other.rule:
            clash = f"must fire {c.rule}, but {other.id} must fire {other.rule}"
        elif c.rule and c.rule in other.not_rules or other.rule and other.rule in c.not_rules:
            clash = f"and {other.id} disagree on whether {c.rule or other.rule} fires"
        if clash:
            file, _, line = c.source.rpartition(":")
            out.append(problem("E223", f"case {c.id} ({json.dumps(c.message, ensure_ascii=False)}) {clash} "
                                       f"({other.source})", file, int(line) if line.isdigit() else 0, 1,
                               rule=c.rule or (c.not_rules[0] if c.not_rules else None), rank=15,
                               help="the same message cannot be both; fix the template or the hand-written case"))
    return out


def _references(cases, pack) -> list[Problem]:
    ids = {r.id for r in pack.rules + pack.referent_rules}
    out = []
    seen_ids: dict[str, str] = {}
    for c in cases:
        if c.id in seen_ids:
            file, _, line = c.source.rpartition(":")
            out.append(problem("E212", f"case id {c.id!r} is used twice (also at {seen_ids[c.id]})", file,
                               int(line) if line.isdigit() else 0, 1, rank=12, help="give every case its own id"))
        seen_ids.setdefault(c.id, c.source)
        if c.generated:
            continue
        for rid in ((c.rule,) if c.rule else ()) + c.not_rules:
            if rid not in ids:
                file, _, line = c.source.rpartition(":")
                out.append(problem("E213", f"case {c.id} names rule {rid}, which is not in pack {pack.name}", file,
                                   int(line) if line.isdigit() else 0, 1, rule=rid, rank=12,
                                   help="fix the rule id, or remove the case if the rule is gone"))
    return out


# -- entry points ---------------------------------------------------------------


def default_corpus_dir(pack) -> Path:
    """Where a pack's corpus lives: ``corpus/`` beside the pack directory."""
    return Path(pack.path).resolve().parent / "corpus"


def load_cases(corpus_dir: Path):
    """``(cases, hand_count, generated_files, problems)`` of a corpus directory."""
    hand, gen, problems = cfiles.read_dir(corpus_dir)
    cases = [c for cf in hand for c in cf.cases] + [c for cf in gen for c in cf.cases]
    return cases, sum(len(cf.cases) for cf in hand), gen, problems


def example_problems(pack) -> list[Problem]:
    """The rule files' own examples, counterexamples and request forms, checked against ``pack``.

    For a pack loaded with ``check_examples=False``: the same findings the
    loader would raise, placed at ``file:line:col``. The files are read with
    positions only when something fails.
    """
    import yaml

    from ..pack.compile import example_problems as check
    from ..pack.load import Source, load_yaml

    fast = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files = sorted({r.file for r in pack.rules + pack.referent_rules})
    cheap = {}
    for f in files:
        try:
            data = yaml.load(Path(f).read_text(encoding="utf-8"), Loader=fast)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            data = {}
        cheap[f] = Source(path=Path(f), display=f, data=data)
    found = check(pack, cheap)
    if not found:
        return []
    placed = {}
    for f in files:
        src, _ = load_yaml(Path(f), f)
        placed[f] = src if src is not None else cheap[f]
    return check(pack, placed)


def check_corpus(pack, corpus_dir=None, *, examples: bool = False) -> Report:
    """Run the corpus in ``corpus_dir`` (default: beside the pack) against ``pack``.

    With ``examples=True`` the rule files' examples, counterexamples and
    request forms are checked too and their failures reported as problems
    (for a pack loaded with ``check_examples=False``, so that one run shows
    everything a change broke).
    """
    corpus_dir = Path(corpus_dir) if corpus_dir is not None else default_corpus_dir(pack)
    report = Report(pack, corpus_dir, exists=corpus_dir.is_dir())
    if examples:
        report.problems += example_problems(pack)
    if not report.exists:
        report.problems.append(problem("E203", f"no corpus at {cfiles.display(corpus_dir)}", cfiles.display(corpus_dir),
                                       rank=1, help="run `cleo-rules corpus build` to generate one from the rules' "
                                                    "templates, or pass --corpus DIR"))
    cases, report.hand_written, gen_files, problems = load_cases(corpus_dir)
    report.generated = len(cases) - report.hand_written
    report.problems += problems
    try:
        groups = generate(pack)
    except CorpusError as exc:
        report.problems += list(exc.problems)
        report.problems.append(problem("E202", "cannot tell whether the corpus is stale until the templates are fixed",
                                       cfiles.display(corpus_dir), rank=60))
    else:
        report.stale = staleness(groups, gen_files, corpus_dir)
    report.problems += _references(cases, pack)
    report.problems += contradictions(cases)
    ev = Evaluator(pack)
    report.outcomes = [ev.run(c) for c in cases]
    report.rules, report.groups = tally(pack, report.outcomes)
    report.problems += coverage(pack, report.rules)
    return report
