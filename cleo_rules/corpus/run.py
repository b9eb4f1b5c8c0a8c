"""Run a corpus against a pack: every case judged, then counted per rule, with staleness and coverage.

For each rule R:

* **TP** / **FN**: positive cases of R on which R fired / did not fire;
* **TN**: negative cases of R (its ``negative`` and ``request`` cases, and
  hand-written cases with ``not: R``) on which R did not fire;
* **FP**: cases anywhere in the corpus on which R fired but must not have:
  R's own negatives, and cases of other rules or cross-rule cases that
  failed because R took them.

Whether a case passes is judged by :mod:`.judge`; the counts go into a
:class:`~.report.Report`. The corpus fails when any case fails, when it is
stale (templates, slots or limits changed since ``cleo-rules corpus build``,
a generated file was edited, or a rule has no generated file), when a rule
has no positive or no negative case, when a rule fires on none of its
positives, or when two cases demand different things of the same message.

Open cases (saved regressions marked ``open: true``) are run apart: they are
not counted per rule and their failing fails nothing; the report lists
them, and those that pass now as cases to close. Two cases that disagree
with one of them open are a warning, not an error.

A pack built on others (:mod:`cleo_rules.pack.compose`) has a corpus of its
own, which covers its own rules, and each base's corpus still runs against the
composed pack (``base=``), covering that base's rules as they stand in it. A
case of a rule the composed pack leaves out (disabled, or replaced by another
pack's rule of the same id) is not run but counted as skipped, with the
reason (:attr:`Report.skipped <cleo_rules.corpus.report.Report.skipped>`); so
is a base case that names no rule when the base alone decides it by such a
rule. Whether a base's generated files are stale is its own check's business.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import Problem
from ..text import normalize
from . import files as cfiles
from .files import default_corpus_dir, display
from .cases_cache import generated
from .decisions_cache import kept_for
from .generate import rule_kind
from .judge import Evaluator, Outcome
from .model import CROSS, HAND, Case, CorpusError, plain_item, problem, role_tagged
from .report import GroupStats, Report, RuleStats, Skipped, Stale

__all__ = ["find_contradictions", "find_stale", "find_uncovered", "load_cases", "run_corpus", "tally"]


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


def tally(pack, outcomes, rules=None) -> tuple[list[RuleStats], list[GroupStats]]:
    """Per-rule counts of ``outcomes`` for ``rules`` (default: every rule of the pack), and the groups'."""
    ev = Evaluator(pack)
    rules = pack.all_rules() if rules is None else rules
    stats = {r.id: RuleStats(r.id, rule_kind(r), r.file, r.line) for r in rules}
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


def _same(a: Case, b: Case) -> bool:
    return (a.id, a.message, a.expect, a.rule, a.not_rules, a.history, a.has_referent, a.referent, a.not_kind) == \
           (b.id, b.message, b.expect, b.rule, b.not_rules, b.history, b.has_referent, b.referent, b.not_kind)


def find_stale(groups, generated_files, corpus_dir: Path) -> list[Stale]:
    """Every generated file that does not hold what the templates give now, and every file no rule owns."""
    out = []
    gdir = corpus_dir / cfiles.GENERATED_DIR
    by_name = {cf.path.name: cf for cf in generated_files}
    expected = set()
    for g in groups:
        fname = cfiles.group_file(g.name)
        if not g.cases:
            continue
        expected.add(fname)
        shown = display(gdir / fname)
        cf = by_name.get(fname)
        if cf is None:
            out.append(Stale(g.name, shown, "no generated file yet"))
        elif cf.header.get("hash") != g.hash:
            out.append(Stale(g.name, shown, "its templates, slots or limits changed since the file was built"))
        elif len(cf.cases) != len(g.cases) or not all(_same(a, b) for a, b in zip(cf.cases, g.cases)):
            out.append(Stale(g.name, shown, "the generated file was edited by hand; put hand-written cases in "
                                            f"{display(corpus_dir / 'regressions.yaml')}"))
    for name, cf in sorted(by_name.items()):
        if name not in expected:
            rule = cf.header.get("rule") or name[:-5]
            out.append(Stale(rule, cf.display, f"rule {rule} is not in the pack or has no templates any more"))
    return out


def find_uncovered(stats: list[RuleStats]) -> list[Problem]:
    """Rules the corpus does not test both ways (E220), and rules that fire on none of their positives (E221)."""
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
    return normalize(c.message), json.dumps([plain_item(h) for h in c.history], ensure_ascii=False)


def find_contradictions(cases) -> list[Problem]:
    """Cases that demand different things of the same message (in the same conversation)."""
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
            opened = c.open or other.open  # a wish not yet met: it may well disagree with what holds now
            out.append(problem("E223", f"case {c.id} ({json.dumps(c.message, ensure_ascii=False)}) {clash} "
                                       f"({other.source})", c.file, c.line, 1,
                               rule=c.rule or (c.not_rules[0] if c.not_rules else None), rank=15,
                               severity="warning" if opened else "error",
                               help="an open case cannot be closed while another case demands otherwise: change "
                                    "one of them" if opened else
                                    "the same message cannot be both; fix the template or the hand-written case"))
    return out


def _find_bad_references(cases, pack) -> list[Problem]:
    """Case ids used twice, and hand-written cases that name a rule the pack does not have."""
    ids = {r.id for r in pack.all_rules()}
    out = []
    seen_ids: dict[str, str] = {}
    for c in cases:
        if c.id in seen_ids:
            out.append(problem("E212", f"case id {c.id!r} is used twice (also at {seen_ids[c.id]})", c.file,
                               c.line, 1, rank=12, help="give every case its own id"))
        seen_ids.setdefault(c.id, c.source)
        if c.generated:
            continue
        for rid in ((c.rule,) if c.rule else ()) + c.not_rules:
            if rid not in ids:
                out.append(problem("E213", f"case {c.id} names rule {rid}, which is not in pack {pack.name}", c.file,
                                   c.line, 1, rule=rid, rank=12,
                                   help="fix the rule id, or remove the case if the rule is gone"))
    return out


def load_cases(corpus_dir: Path):
    """``(cases, hand_count, generated_files, problems)`` of a corpus directory."""
    hand, gen, problems = cfiles.read_dir(corpus_dir)
    cases = [c for cf in hand for c in cf.cases] + [c for cf in gen for c in cf.cases]
    return cases, sum(len(cf.cases) for cf in hand), gen, problems


def run_corpus(pack, corpus_dir=None, *, base=None) -> Report:
    """Run the corpus in ``corpus_dir`` (default: beside the pack) against ``pack``; the :class:`Report`.

    ``base``, a :class:`~cleo_rules.pack.model.Base` of a composed pack, runs
    that base's corpus (default: beside the base) against the composed pack,
    for the base's rules. The pack's own examples are not judged here:
    :func:`cleo_rules.pack_check.check_compiled` joins both into one verdict.
    """
    if corpus_dir is None:
        corpus_dir = default_corpus_dir(pack) if base is None else cfiles.corpus_dir_of(base.path)
    corpus_dir = Path(corpus_dir)
    report = Report(pack, corpus_dir, exists=corpus_dir.is_dir(), of=base.name if base is not None else None)
    if not report.exists:
        report.problems.append(problem("E203", f"no corpus at {display(corpus_dir)}", display(corpus_dir),
                                       rank=1, help="run `cleo-rules corpus build` to generate one from the rules' "
                                                    "templates, or pass --corpus DIR"))
    cases, report.hand_written, gen_files, problems = load_cases(corpus_dir)
    report.generated = len(cases) - report.hand_written
    report.problems += problems
    cases, report.skipped = _left_out(pack, cases, base)
    if base is None:
        try:
            groups = generated(pack)  # generate(pack), or read back for this very pack
        except CorpusError as exc:
            report.problems += list(exc.problems)
            report.problems.append(problem("E202", "cannot tell whether the corpus is stale until the templates are "
                                                   "fixed", display(corpus_dir), rank=60))
        else:
            report.stale = find_stale(groups, gen_files, corpus_dir)
    report.problems += _find_bad_references(cases, pack)
    report.problems += find_contradictions(cases)
    kept = kept_for(pack)
    ev = Evaluator(pack, kept)
    report.outcomes = [ev.run(c) for c in cases if not c.open]
    report.open = [ev.run(c) for c in cases if c.open]
    if kept is not None and kept.pending:
        for c in cases:  # a case judged from memory gave no decision: each one's (remembered) to store them all
            ev.decide(c.message, c.history)
        kept.save()
    if base is not None:
        report.outcomes, decided = _decided_by_left_out(pack, base, report.outcomes)
        report.skipped += decided
    scope = [r for r in pack.all_rules()
             if (pack.owns(r) if base is None else pack.origin(r) == base.name)]
    report.rules, report.groups = tally(pack, report.outcomes, scope)
    report.problems += find_uncovered(report.rules)
    return report


def _left_out(pack, cases, base) -> tuple[list, list[Skipped]]:
    """The cases to run, and those of rules ``pack`` leaves out (the corpus is ``base``'s, or the pack's own)."""
    if not pack.composition:
        return list(cases), []
    whose = base.name if base is not None else pack.name
    run, skipped = [], []
    for c in cases:
        for rid in ((c.rule,) if c.rule else ()) + c.not_rules:
            reason = pack.composition.left_out(rid, whose)
            if reason is not None:
                skipped.append(Skipped(c, rid, reason))
                break
        else:
            run.append(c)
    return run, skipped


def _decided_by_left_out(pack, base, outcomes) -> tuple[list, list[Skipped]]:
    """A base's failing cases that name no rule and that the base alone decides by a rule the composed pack
    leaves out: skipped, not failed. The base is compiled alone (from the cache) only when there is such a case."""
    failing = [o for o in outcomes if not o.ok and not o.case.rule and not o.case.not_rules]
    if not failing:
        return outcomes, []
    from ..errors import PackError
    from ..pack.compile import compile_pack

    try:
        alone = compile_pack(base.path, check_examples=False)
    except PackError:  # a base that needs another to compile: its failing cases stay failures
        return outcomes, []
    skipped: dict[int, Skipped] = {}
    for o in failing:
        rule = alone.classify(o.case.message, o.case.history).rule
        reason = pack.composition.left_out(rule, base.name) if rule else None
        if rule and reason is not None:
            skipped[id(o)] = Skipped(o.case, rule, f"decided by it in {base.name} alone; {reason}")
    return [o for o in outcomes if id(o) not in skipped], list(skipped.values())
