"""The result of one corpus run: per-rule counts, failing cases, staleness and problems, for people and JSON.

Made by :func:`cleo_rules.corpus.run.run_corpus`; :class:`Report` says
whether the corpus passes and writes itself out as the per-rule table
(:meth:`Report.format`), one rule's failures (:meth:`Report.rule_text`) or
one JSON document (:meth:`Report.to_dict`).

Open cases (saved regressions marked ``open: true``) are kept apart in
:attr:`Report.open`: each is a note (E232) while the pack gets it wrong and
a warning to close it (E233) once it passes (:func:`open_problem`); neither
fails the corpus.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Problem
from ..reading.load import display
from .generate import GENERATOR_VERSION
from .model import CROSS, HAND, plain_item

if TYPE_CHECKING:
    from ..pack.model import Pack

__all__ = ["GroupStats", "Report", "RuleStats", "Skipped", "Stale", "open_problem"]

MAX_SHOWN = 20  # failing cases listed per rule in text output unless asked for all


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


def open_problem(outcome) -> Problem:
    """What a run says of one open case: a note while the pack gets it wrong (E232), a warning to close it once it
    passes (E233), placed at the case."""
    case = outcome.case
    said = f"open case {case.id} {json.dumps(case.message, ensure_ascii=False)}"
    where = case.source or "its file"
    if outcome.ok:
        return Problem("E233", f"{said} passes now: close it (remove `open: true` at {where})", case.file,
                       line=case.line, col=1 if case.file else 0, rule=case.rule, severity="warning", rank=30,
                       help="the pack gets the case right: take out `open: true`, so that it holds from now on")
    return Problem("E232", f"{said}: {outcome.expected()}, {outcome.got()}", case.file, line=case.line,
                   col=1 if case.file else 0, rule=case.rule, severity="note", rank=31,
                   help="a saved regression the pack does not get right yet: fix the rules (it never fails a "
                        "check meanwhile), or remove the case if the pack is right")


@dataclass(frozen=True)
class Skipped:
    """A case not run against a composed pack: ``rule`` is the rule it is of, left out of the pack as ``reason``
    says (``disabled by team``, ``replaced by team``)."""

    case: object
    rule: str
    reason: str


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
    open: list = field(default_factory=list)       # Outcome of each open case (never in `outcomes`)
    skipped: list = field(default_factory=list)    # Skipped: cases of rules the composed pack leaves out
    of: str | None = None                          # the base pack whose corpus this is (None: the pack's own)

    @property
    def failed(self) -> list:
        return [o for o in self.outcomes if not o.ok]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.stale and not self.errors

    @property
    def errors(self) -> list:
        """The problems that fail the corpus (a warning, such as an open case's disagreement, does not)."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def to_close(self) -> list:
        """The open cases the pack gets right now: each asks for `open: true` to be removed."""
        return [o for o in self.open if o.ok]

    def open_problems(self) -> list[Problem]:
        """One note or warning per open case (:func:`open_problem`): the cases to close first."""
        return [open_problem(o) for o in sorted(self.open, key=lambda o: not o.ok)]

    @property
    def uncovered(self) -> list:
        return sorted({p.rule for p in self.problems if p.code in ("E220", "E221") and p.rule})

    def skipped_counts(self) -> list[tuple[str, str, int]]:
        """``(rule, reason, cases)`` for each rule whose cases were skipped, in the order first met."""
        counts: dict[tuple[str, str], int] = {}
        for s in self.skipped:
            counts[(s.rule, s.reason)] = counts.get((s.rule, s.reason), 0) + 1
        return [(rule, reason, n) for (rule, reason), n in counts.items()]

    def skipped_text(self) -> str:
        """``skipped: 10 cases of correction.x (disabled by team), 2 of vocab.nod (replaced by team)``; empty when
        none were skipped."""
        if not self.skipped:
            return ""
        shown = [f"{n:,} of {rule} ({reason})" for rule, reason, n in self.skipped_counts()]
        return f"skipped: {shown[0].replace(' of ', ' case of ' if shown[0].startswith('1 ') else ' cases of ', 1)}" \
            + "".join(f", {more}" for more in shown[1:])

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
                 "corpus stale" if self.stale else "corpus up to date" if self.of is None else
                 f"staleness left to {self.of}'s own check"]
        if self.skipped:
            parts.append(f"{len(self.skipped):,} skipped (rules left out of the pack)")
        others = [p for p in self.errors if p.code not in ("E220", "E221")]
        if others:
            parts.append(f"{len(others)} corpus problem{'s' if len(others) != 1 else ''}")
        if self.open:
            close = len(self.to_close)
            parts.append(f"{len(self.open)} open" + (f" ({close} to close)" if close else ""))
        return ("ok: " if self.ok else "FAILED: ") + "; ".join(parts)

    def open_text(self) -> str:
        """The open cases for people, those to close first; empty when there are none."""
        if not self.open:
            return ""
        still = len(self.open) - len(self.to_close)
        head = (f"open: {len(self.open)} saved regression{'s' if len(self.open) != 1 else ''} marked open, "
                f"{still} not yet right (never a failure), {len(self.to_close)} to close")
        return "\n".join([head] + [p.format() for p in self.open_problems()])

    def format(self, *, max_shown: int = MAX_SHOWN, table: bool = True) -> str:
        """The report for people: the per-rule table, failing cases by rule, staleness, problems, summary.

        ``table=False`` leaves out the heading and the table (``cleo-rules
        check`` prints only what is wrong); ``max_shown=0`` lists every failing case.
        """
        p = self.pack
        lines = []
        if table:
            whose = "" if self.of is None else f"the corpus of {self.of}, "
            lines += [f"corpus check: {whose}{p.name} {p.version} ({p.content_hash}) against "
                      f"{display(self.corpus_dir)}/ ({len(self.outcomes) + len(self.skipped):,} cases: {self.generated:,} "
                      f"generated, {self.hand_written:,} hand-written"
                      + (f"; {len(self.skipped):,} skipped, {len(self.outcomes):,} run)" if self.skipped else ")"),
                      ""]
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
        if self.open:
            lines += ["", self.open_text()]
        if table and self.skipped:
            lines += ["", self.skipped_text()]
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
            "corpus": {"dir": display(self.corpus_dir), "exists": self.exists,
                       "cases": len(self.outcomes), "generated": self.generated, "hand_written": self.hand_written,
                       "generator": GENERATOR_VERSION},
            "summary": {"cases": len(self.outcomes), "passed": len(self.outcomes) - len(self.failed),
                        "failed": len(self.failed), **self.totals(), "rules": len(self.rules),
                        "uncovered": self.uncovered, "stale": bool(self.stale), "open": len(self.open),
                        "to_close": len(self.to_close)},
            "open": [{**o.to_dict(), "close": o.ok, "says": open_problem(o).message} for o in self.open],
            "rules": [r.to_dict() for r in self.rules],
            "groups": [g.to_dict() for g in self.groups],
            "stale": [s.to_dict() for s in self.stale],
            "problems": [pr.to_dict() for pr in self.problems],
            "of": self.of,
            "skipped": {"cases": len(self.skipped),
                        "rules": [{"rule": rule, "reason": reason, "cases": n}
                                  for rule, reason, n in self.skipped_counts()]},
        }


def _case_lines(failures, max_shown: int) -> list[str]:
    lines = []
    shown = failures if not max_shown else failures[:max_shown]
    for label, o in shown:
        lines.append(f"  {label:<5} {o.case.id}  {json.dumps(o.case.message, ensure_ascii=False)}")
        if o.case.history:
            lines.append(f"        history: {json.dumps([plain_item(h) for h in o.case.history], ensure_ascii=False)}")
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
