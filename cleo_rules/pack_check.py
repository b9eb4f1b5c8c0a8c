"""The check of a pack: of a compiled pack, its own examples, then its corpus.

:func:`check_compiled` is the single check behind every command and gate that says
whether a pack is good: ``cleo-rules check``, ``cleo-rules corpus check``,
``cleo-rules packs --check`` and the serving gate
(:func:`cleo_rules.runtime.load_checked`). A pack passes when every example,
counterexample and request form of every rule does what it says
(:func:`~cleo_rules.pack.examples.find_example_problems`) and its corpus
passes (:func:`~cleo_rules.corpus.run.run_corpus`): no failing case, no
stale generated file, no corpus problem. The commands differ only in how
they show the :class:`Verdict`.

The pack is compiled first (:func:`~cleo_rules.pack.compile.compile_pack`
with ``check_examples=False``): a pack that does not compile has no verdict,
only its :class:`~cleo_rules.errors.PackError`.

:func:`check` is that whole run in one call, from finding the pack to the
verdict: it returns a :class:`PackCheck` holding the pack found, the
compiled pack and its verdict, or the error that kept it from compiling.
The commands only print it: :meth:`PackCheck.to_dict` is ``check --json``,
:meth:`PackCheck.corpus_dict` is ``corpus check --json``, and
:meth:`PackCheck.findings` gives the findings SARIF, JUnit and GitHub
workflow commands are rendered from (:func:`cleo_rules.findings.render`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from . import timed
from .corpus.files import corpus_dir_of, default_corpus_dir, display
from .corpus.report import Report
from .corpus.run import run_corpus
from .errors import PackError, Problem
from .families import counts
from .pack.causes import Cause, find_causes
from .pack.examples import find_example_problems, rule_example_problems
from .pack.model import Base, Pack
from .pack.discovery import FoundPack

if TYPE_CHECKING:
    from .findings import CheckResult

__all__ = ["MAX_CASES_REPORTED", "PackCheck", "Verdict", "check", "check_compiled"]

MAX_CASES_REPORTED = 20  # failing corpus cases listed one by one in :meth:`Verdict.errors`; the rest are counted


@dataclass(frozen=True)
class Verdict:
    """What is wrong with a pack: its own findings, and its corpus run.

    ``problems`` are the pack's own (examples, counterexamples and request
    forms that fail, placed at ``file:line:col``); ``corpus_report`` is the
    corpus run, or None when no corpus was run (none beside the pack, or
    ``corpus=False``). ``base_reports``, of a pack built on others, holds for
    each base the run of its corpus against the composed pack (None: the base
    has no corpus beside it), with the cases of rules left out skipped.
    ``causes`` are the bases' failures that a setting of the pack's own brings
    about (:mod:`cleo_rules.pack.causes`): each is one problem among
    ``problems``, placed at the setting, in place of the example problems it
    explains; the corpus cases it explains stay in their base's report.
    """

    problems: tuple[Problem, ...]
    corpus_report: Report | None = None
    base_reports: tuple[tuple[Base, Report | None], ...] = ()
    causes: tuple[Cause, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems) and \
            (self.corpus_report is None or self.corpus_report.ok) and \
            all(report is None or report.ok for _, report in self.base_reports)

    def errors(self, max_cases: int = MAX_CASES_REPORTED) -> list[Problem]:
        """Everything wrong, as placed problems with severity ``error``: the pack's own, then one per failing
        corpus case (the first ``max_cases``, then a count), one per stale file, then the corpus's problems; then
        the same of each base's corpus, each naming the base."""
        out = list(self.problems)
        if self.corpus_report is not None:
            out += _report_errors(self.corpus_report, max_cases)
        for base, report in self.base_reports:
            if report is not None:
                out += [dataclasses.replace(p, pack=p.pack or base.name) for p in _report_errors(report, max_cases)]
        return [p for p in out if p.severity == "error"]

    def corpus_view(self) -> Report | None:
        """The corpus report with the pack's own problems listed first among its problems: what
        ``cleo-rules corpus check`` shows, so one run shows everything a change broke."""
        report = self.corpus_report
        if report is None:
            return None
        return dataclasses.replace(report, problems=list(self.problems) + list(report.problems))


def _report_errors(report: Report, max_cases: int) -> list[Problem]:
    """A corpus run's failing cases (the first ``max_cases``, then a count), stale files and problems, placed."""
    if report.ok:
        return []
    out = []
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
                           display(report.corpus_dir), rank=10, help="`cleo-rules corpus check` lists every one"))
    for stale in report.stale:
        out.append(Problem("E231", f"the corpus is stale: {stale.reason}", stale.file, rank=11,
                           help="run `cleo-rules corpus build` and review the diff"))
    return out + list(report.problems)


def check_compiled(pack: Pack, corpus_dir=None, *, corpus: bool = True) -> Verdict:
    """Judge ``pack``: its own examples, and the corpus in ``corpus_dir``.

    Without ``corpus_dir`` the corpus is ``corpus/`` beside the pack
    directory, run when it exists (a pack without one is judged by its
    examples alone); a ``corpus_dir`` given is always run (a missing one is a
    problem, E203). ``corpus=False`` judges the examples only. Of a pack built
    on others, the corpus beside each base runs too, against the composed
    pack (:func:`cleo_rules.corpus.run.run_corpus` with ``base=``). A search that
    runs out of time counts only when it does so reproducibly
    (:func:`cleo_rules.timed.patient`), never because the process was busy.
    """
    with timed.patient():  # a search that ran out of time only because the process was busy is no verdict
        problems = tuple(find_example_problems(pack))
        report = None
        bases: list[tuple[Base, Report | None]] = []
        if corpus:
            where = Path(corpus_dir) if corpus_dir is not None else default_corpus_dir(pack)
            if corpus_dir is not None or where.is_dir():
                report = run_corpus(pack, where)
            for base in pack.composition.bases:
                beside = corpus_dir_of(base.path)
                bases.append((base, run_corpus(pack, beside, base=base) if beside.is_dir() else None))
        causes, left = find_causes(pack, problems, bases, rule_example_problems, _passes)
    return Verdict(tuple(left) + tuple(c.problem for c in causes), report, tuple(bases), tuple(causes))


def _passes(pack: Pack):
    """Whether a corpus case passes in ``pack``: one judge for the pack, asked case by case."""
    from .corpus.judge import Evaluator

    evaluator = Evaluator(pack)
    return lambda case: evaluator.run(case).ok


#: ``corpus`` in :meth:`PackCheck.to_dict` when the corpus was not asked for (``check --no-corpus``)
NOT_ASKED = "--no-corpus"


@dataclass(frozen=True)
class PackCheck:
    """One run of :func:`check`: the pack found, and its verdict or the error that kept it from having one.

    ``found`` is where the pack is and how it was found; ``pack`` the
    compiled pack and ``verdict`` its :class:`Verdict`, both ``None`` when
    ``error`` says why there is none (the pack does not compile, or its
    version is outside the range required). ``corpus`` says whether the
    corpus was asked for; ``skipped`` why none ran although it was (no
    corpus beside the pack); ``corpus_dir`` the corpus that runs (or would
    run, for a pack that does not compile), None when none does.
    """

    found: FoundPack
    pack: Pack | None = None
    verdict: Verdict | None = None
    error: PackError | None = None
    corpus: bool = True
    skipped: str | None = None
    corpus_dir: Path | None = None  # the corpus this check runs, or would have run had the pack compiled

    @property
    def ok(self) -> bool:
        return self.error is None and self.verdict is not None and self.verdict.ok

    @property
    def corpus_report(self) -> Report | None:
        return self.verdict.corpus_report if self.verdict is not None else None

    def errors(self, max_cases: int = MAX_CASES_REPORTED) -> list[Problem]:
        """Everything wrong, as problems with severity ``error`` (see :meth:`Verdict.errors`)."""
        if self.error is not None:
            return [p for p in self.error.problems if p.severity == "error"]
        assert self.verdict is not None
        return self.verdict.errors(max_cases)

    def as_error(self) -> PackError | None:
        """A :class:`~cleo_rules.errors.PackError` listing :meth:`errors`, best first; ``None`` for a pack that
        passes. What the serving gate raises."""
        if self.error is not None:
            return self.error
        errors = self.errors()
        return PackError(errors, pack=str(self.found.path)) if errors else None

    def record(self) -> dict:
        """The pack as JSON: name, version, hash, path, found_by, config (from the manifest alone when it does not
        compile: the hash is then null, a name or version it lacks ``"?"``)."""
        return self.found.record(self.pack, self.error.read if self.pack is None and self.error is not None else None)

    def to_dict(self) -> dict:
        """The JSON document of ``cleo-rules check``."""
        if self.pack is None or self.verdict is None:
            return {"ok": False, "pack": self.record(),
                    "problems": [p.to_dict() for p in self.error.problems] if self.error else []}
        pack, verdict = self.pack, self.verdict
        doc: dict = {"ok": verdict.ok, "pack": self.record(), **{t.key: n for t, n in counts(pack)}}
        if verdict.problems:
            doc["problems"] = [p.to_dict() for p in verdict.problems]
        if verdict.corpus_report is not None:
            doc["corpus"] = verdict.corpus_report.to_dict()
        elif self.skipped or not self.corpus:
            doc["corpus"] = {"skipped": self.skipped or NOT_ASKED}
        if pack.composition:
            doc["composition"] = self.composition_dict()
        if verdict.causes:
            doc["causes"] = [c.to_dict() for c in verdict.causes]
        return doc

    def composition_dict(self) -> dict:
        """What the pack is built on, for JSON: each base (name, version, hash) with the run of its corpus (or why
        none ran), and the rules left out, each with the pack that left it out and the pack it was of."""
        assert self.pack is not None
        doc = self.pack.composition.to_dict()
        runs = dict((id(base), report) for base, report in self.verdict.base_reports) if self.verdict else {}
        for entry, base in zip(doc["bases"], self.pack.composition.bases):
            report = runs.get(id(base))
            entry["corpus"] = report.to_dict() if report is not None else {"skipped": self.base_skipped(base)}
        return doc

    def base_skipped(self, base) -> str:
        """Why a base's corpus did not run."""
        if not self.corpus:
            return NOT_ASKED
        return f"no corpus at {corpus_dir_of(base.path)} beside {base.name}"

    def corpus_view(self) -> Report | None:
        """:meth:`Verdict.corpus_view`: the corpus report with the pack's own problems first."""
        return self.verdict.corpus_view() if self.verdict is not None else None

    def corpus_dict(self) -> dict:
        """The JSON document of ``cleo-rules corpus check``: the corpus report and the pack (or, for a pack that
        does not compile, the document of :meth:`to_dict`)."""
        view = self.corpus_view()
        if view is None:
            return self.to_dict()
        doc = {**view.to_dict(), "pack": self.record()}
        if self.pack is not None and self.pack.composition:
            doc["composition"] = self.composition_dict()
        return doc

    def findings(self, command: str = "check") -> CheckResult:
        """The findings of ``command`` (``"check"`` or ``"corpus check"``), for SARIF, JUnit and GitHub, with the
        pack's outline (:func:`~cleo_rules.findings.outline`): the same files and rules whether it compiles or not."""
        from .corpus.files import open_cases
        from .findings import CheckResult, from_problem, from_report, open_refs, outline, outline_of

        record = self.record()
        has_corpus = self.corpus_dir is not None
        if self.pack is None or self.verdict is None:
            problems = self.error.problems if self.error else ()
            errors = sum(1 for p in problems if p.severity == "error")
            summary = (f"cleo-rules check: {errors} error{'s' if errors != 1 else ''} in the pack"
                       if command == "check" else f"cleo-rules {command}: the pack does not compile")
            files, refs = outline(self.found.path, self.error.read if self.error else None)
            opened = open_refs(open_cases(self.corpus_dir)) if self.corpus_dir is not None else []
            return CheckResult(command, record, refs, [from_problem(p) for p in problems], summary=summary,
                               files=files, judged=False, corpus=has_corpus, open=opened)
        files, refs = outline_of(self.pack)
        if command != "check":  # the corpus's view: the pack's own problems are among the corpus's
            view = self.corpus_view()
            assert view is not None
            found = from_report(view, refs)
            for _, base_report in self.verdict.base_reports:
                if base_report is not None:
                    found += from_report(base_report, refs)
            return CheckResult(command, record, refs, found, corpus_ran=True,
                               summary=f"cleo-rules {command}: {view.summary_line()}", files=files, corpus=True,
                               open=open_refs(view.open))
        report = self.verdict.corpus_report
        found = [from_problem(p) for p in self.verdict.problems]
        if report is not None:
            found += from_report(report, refs)
        for _, base_report in self.verdict.base_reports:
            if base_report is not None:
                found += from_report(base_report, refs)
        errors = sum(1 for f in found if f.severity == "error")
        summary = (f"cleo-rules check: {self.pack.name} {self.pack.version}: "
                   + ("ok" if self.verdict.ok else f"{errors} findings")
                   + (f"; corpus {report.summary_line()}" if report is not None else ""))
        return CheckResult(command, record, refs, found, corpus_ran=report is not None, summary=summary,
                           files=files, corpus=report is not None, open=open_refs(report.open) if report else [])


def check(pack=None, corpus_dir=None, *, corpus: bool = True, corpus_required: bool = False,
          require=None) -> PackCheck:
    """Find, compile and check a pack: what ``check``, ``corpus check`` and ``packs --check`` show.

    ``pack`` is a :class:`~cleo_rules.pack.discovery.FoundPack`, or what
    :func:`~cleo_rules.pack.discovery.find_pack` takes (a directory, its
    ``pack.yaml``, an installed pack's name, or ``None`` for the pack the
    commands find by default). The pack is compiled without refusing it for
    its examples, its version checked against ``require`` (a range such as
    ``">=1.0,<2"``), then checked by :func:`check_compiled` with ``corpus_dir`` and
    ``corpus``; ``corpus_required`` runs the corpus beside the pack even when
    there is none (a missing corpus is then a problem, E203), as ``corpus
    check`` does. A pack that does not compile, or whose version is outside
    ``require``, is a result with its ``error``, never an exception; a pack
    that cannot be found raises :class:`~cleo_rules.errors.PackNotFound`.
    """
    from .pack.compile import compile_pack
    from .pack.discovery import check_pack_version, find_pack

    found = pack if isinstance(pack, FoundPack) else find_pack(pack)
    try:
        compiled = compile_pack(found.path, check_examples=False)
    except PackError as exc:
        return _not_compiled(found, exc, corpus_dir, corpus=corpus, corpus_required=corpus_required)
    try:
        check_pack_version(compiled, require)
    except PackError as exc:
        if compiled.manifest is not None:  # the files as compiled: nothing is read again
            exc.read = (compiled.manifest, dict(compiled.sources))
        return _not_compiled(found, exc, corpus_dir, corpus=corpus, corpus_required=corpus_required)
    where = corpus_dir
    if where is None and corpus_required:
        where = default_corpus_dir(compiled)
    verdict = check_compiled(compiled, where, corpus=corpus)
    skipped = None
    if corpus and verdict.corpus_report is None:
        skipped = f"no corpus at {default_corpus_dir(compiled)}; `cleo-rules corpus build` creates one"
    report = verdict.corpus_report
    return PackCheck(found, compiled, verdict, corpus=corpus, skipped=skipped,
                     corpus_dir=Path(report.corpus_dir) if report is not None else None)


def _not_compiled(found: FoundPack, exc: PackError, corpus_dir, *, corpus: bool, corpus_required: bool) -> PackCheck:
    """The check of a pack that does not compile, or is not of the version required: its error, and the corpus
    directory its corpus would be read from."""
    beside = corpus_dir_of(found.path)
    would = Path(corpus_dir) if corpus_dir is not None else (beside if corpus_required or beside.is_dir() else None)
    return PackCheck(found, error=exc, corpus=corpus, corpus_dir=would if corpus else None)
