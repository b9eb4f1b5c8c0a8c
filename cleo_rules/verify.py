"""One verdict on a compiled pack: its own examples, then its corpus.

:func:`verify` is the single judge behind every command and gate that says
whether a pack is good: ``cleo-rules check``, ``cleo-rules corpus check``,
``cleo-rules packs --check`` and the serving gate
(:func:`cleo_rules.runtime.accept`). A pack passes when every example,
counterexample and request form of every rule does what it says
(:func:`~cleo_rules.pack.examples.find_example_problems`) and its corpus
passes (:func:`~cleo_rules.corpus.run.run_corpus`): no failing case, no
stale generated file, no corpus problem. The commands differ only in how
they show the :class:`Verdict`.

The pack is compiled first (:func:`~cleo_rules.pack.compile.compile_pack`
with ``check_examples=False``): a pack that does not compile has no verdict,
only its :class:`~cleo_rules.errors.PackError`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from . import timed
from .corpus.files import default_corpus_dir
from .corpus.report import Report
from .corpus.run import run_corpus
from .errors import Problem
from .pack.examples import find_example_problems
from .pack.model import Pack

__all__ = ["MAX_CASES_REPORTED", "Verdict", "verify"]

MAX_CASES_REPORTED = 20  # failing corpus cases listed one by one in :meth:`Verdict.errors`; the rest are counted


@dataclass(frozen=True)
class Verdict:
    """What is wrong with a pack: its own findings, and its corpus run.

    ``problems`` are the pack's own (examples, counterexamples and request
    forms that fail, placed at ``file:line:col``); ``corpus_report`` is the
    corpus run, or None when no corpus was run (none beside the pack, or
    ``corpus=False``).
    """

    problems: tuple[Problem, ...]
    corpus_report: Report | None = None

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems) and \
            (self.corpus_report is None or self.corpus_report.ok)

    def errors(self, max_cases: int = MAX_CASES_REPORTED) -> list[Problem]:
        """Everything wrong, as placed problems with severity ``error``: the pack's own, then one per failing
        corpus case (the first ``max_cases``, then a count), one per stale file, then the corpus's problems."""
        out = list(self.problems)
        report = self.corpus_report
        if report is not None and not report.ok:
            failed = report.failed
            for o in failed[:max_cases]:
                case = o.case
                out.append(Problem("E230", f"corpus case {case.id} {json.dumps(case.message, ensure_ascii=False)}: "
                                           f"{o.expected()}, {o.got()}",
                                   case.file, line=case.line, col=1 if case.file else 0,
                                   rule=case.rule or o.culprit, rank=9,
                                   help="fix the rule, or the case if the rule is right; "
                                        "`cleo-rules corpus check` lists all"))
            if len(failed) > max_cases:
                out.append(Problem("E230", f"corpus case … and {len(failed) - max_cases} more: they fail too",
                                   str(report.corpus_dir), rank=10, help="`cleo-rules corpus check` lists every one"))
            for stale in report.stale:
                out.append(Problem("E231", f"the corpus is stale: {stale.reason}", stale.file, rank=11,
                                   help="run `cleo-rules corpus build` and review the diff"))
            out += report.problems
        return [p for p in out if p.severity == "error"]

    def corpus_view(self) -> Report | None:
        """The corpus report with the pack's own problems listed first among its problems: what
        ``cleo-rules corpus check`` shows, so one run shows everything a change broke."""
        report = self.corpus_report
        if report is None:
            return None
        return dataclasses.replace(report, problems=list(self.problems) + list(report.problems))


def verify(pack: Pack, corpus_dir=None, *, corpus: bool = True) -> Verdict:
    """Judge ``pack``: its own examples, and the corpus in ``corpus_dir``.

    Without ``corpus_dir`` the corpus is ``corpus/`` beside the pack
    directory, run when it exists (a pack without one is judged by its
    examples alone); a ``corpus_dir`` given is always run (a missing one is a
    problem, E203). ``corpus=False`` judges the examples only. A search that
    runs out of time counts only when it does so reproducibly
    (:func:`cleo_rules.timed.patient`), never because the process was busy.
    """
    with timed.patient():  # a search that ran out of time only because the process was busy is no verdict
        problems = tuple(find_example_problems(pack))
        report = None
        if corpus:
            where = Path(corpus_dir) if corpus_dir is not None else default_corpus_dir(pack)
            if corpus_dir is not None or where.is_dir():
                report = run_corpus(pack, where)
    return Verdict(problems, report)
