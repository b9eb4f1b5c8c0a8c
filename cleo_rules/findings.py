"""What ``check`` and ``corpus check`` found, in the formats CI reads.

A :class:`CheckResult` gathers every finding of one run: the pack's own
problems (schema, lints, examples), failing corpus cases, a stale corpus and
the corpus's problems. Each :class:`Finding` has a registered code
(:mod:`cleo_rules.codes`), a severity, a message, help, the pack rule it
belongs to and where it is. A failing corpus case points at its rule's own
line, with the case as a related location.

Renderers: :func:`to_sarif` (SARIF 2.1.0: rule ids, levels, physical
locations), :func:`to_junit` (JUnit XML) and :func:`to_github` (GitHub
workflow commands, ``::error file=...``).

JUnit's test cases keep their ids whether the pack is red or green, so a CI
dashboard follows each one from run to run: one case per rule file the
manifest lists and one per rule that can be read from those files
(:func:`outline`, which reads the files themselves when the pack does not
compile), plus ``(pack)`` and, when there is a corpus, ``(corpus)``. A file
that cannot be read is its one case; the rules of a pack that does not
compile that have no finding are skipped, not passed.

An open case (a saved regression marked ``open: true``) is reported as each
format reports a test known to fail: a SARIF ``note`` (a ``warning`` once it
passes and is to be closed), a GitHub ``::notice`` (``::warning``), and in
JUnit a test case of its own, skipped with the reason, as pytest writes an
xfail (``type="open"``, or ``type="close"`` once it passes). None fails a run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote
from xml.etree import ElementTree as ET

from . import codes
from .errors import Problem

__all__ = ["CaseRef", "CheckResult", "FileRef", "Finding", "Location", "RuleRef", "from_problem", "from_report",
           "open_finding", "open_refs", "outline", "outline_of", "render", "FORMATS", "to_github", "to_junit",
           "to_sarif"]

FORMATS = ("text", "json", "sarif", "junit", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
NO_RULE = "(pack)"
CORPUS = "(corpus)"


@dataclass(frozen=True)
class Location:
    file: str
    line: int = 0
    col: int = 0
    message: str = ""

    def text(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}" + (f":{self.col}" if self.col else "")
        return self.file


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    location: Location | None
    severity: str = "error"
    help: str = ""
    rule: str | None = None
    pointer: str = ""
    related: tuple[Location, ...] = ()
    corpus: bool = False  # found by running the corpus (the JUnit case "(corpus)" when it names no rule)
    case: str | None = None  # the open case this note or warning is about (its own JUnit case)

    def to_dict(self) -> dict:
        loc = self.location
        return {"code": self.code, "severity": self.severity, "rule": self.rule, "message": self.message,
                "help": self.help, "file": loc.file if loc else None, "line": loc.line if loc else 0,
                "col": loc.col if loc else 0, "pointer": self.pointer,
                "related": [{"file": r.file, "line": r.line, "message": r.message} for r in self.related]}


@dataclass(frozen=True)
class RuleRef:
    id: str
    kind: str
    file: str
    line: int


@dataclass(frozen=True)
class CaseRef:
    """An open case of the corpus: its id and where it is written (a JUnit test case of its own)."""

    id: str
    file: str
    line: int


@dataclass(frozen=True)
class FileRef:
    """A file the manifest lists: its name there, how it is shown, its kind (``""`` when it cannot be read) and
    where the manifest lists it (``(manifest as shown, JSON pointer)``: a finding there is the file's)."""

    name: str
    file: str
    kind: str = ""
    listed_at: tuple[str, str] = ("", "")


@dataclass
class CheckResult:
    """One run of ``check`` or ``corpus check``.

    ``files`` and ``rules`` are the pack's outline (:func:`outline`), which
    JUnit gives one test case each; ``judged`` is False when the pack did not
    compile (its rules were not judged); ``corpus`` is whether there is a
    corpus to run (``corpus_ran`` whether it ran).
    """

    command: str
    pack: dict                       # name, version, hash, path, found_by (name/version may be "?")
    rules: list[RuleRef] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    corpus_ran: bool = False
    summary: str = ""
    files: list[FileRef] = field(default_factory=list)
    judged: bool = True
    corpus: bool = False
    open: list[CaseRef] = field(default_factory=list)  # the corpus's open cases, judged or not

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)


# -- building ---------------------------------------------------------------------------


def from_problem(p: Problem, *, corpus: bool = False) -> Finding:
    loc = Location(p.file, p.line, p.col) if p.file else None
    return Finding(p.code, p.message, loc, p.severity, p.help, p.rule, p.pointer, corpus=corpus)


def _case_finding(label: str, outcome, rule_ref: RuleRef | None) -> Finding:
    case = outcome.case
    what = {"FN": "a miss", "FP": "a wrong hit", "KIND": "the wrong kind", "QUERY": "the wrong query",
            "REF": "the wrong referent"}.get(label, label)
    detail = f"{outcome.expected()}, {outcome.got()}"
    queries = [r for r in outcome.reasons if r.startswith(("query", "referent"))]
    if queries:
        detail += "; " + "; ".join(queries)
    message = f"corpus case {case.id} {json.dumps(case.message, ensure_ascii=False)}: {detail}"
    here = Location(case.file, case.line, 1) if case.file else None
    if rule_ref is not None:
        message += f" ({label}: {what} of {rule_ref.id})"
        related = (Location(here.file, here.line, here.col, f"the case {case.id}"),) if here else ()
        return Finding("E230", message, Location(rule_ref.file, rule_ref.line, 1), help=(
            "fix the rule, or the case if the rule is right; `cleo-rules corpus check` lists every failing case"),
            rule=rule_ref.id, related=related, corpus=True)
    return Finding("E230", message, here, help="fix the rule that took it, or the case",
                   rule=outcome.culprit, corpus=True)


def from_report(report, rules: list[RuleRef]) -> list[Finding]:
    """Every finding of a corpus :class:`~cleo_rules.corpus.report.Report`."""
    by_id = {r.id: r for r in rules}
    out: list[Finding] = []
    for stats in report.rules:
        for label, outcome in stats.failures:
            out.append(_case_finding(label, outcome, by_id.get(stats.rule)))
    for group in report.groups:
        for label, outcome in group.failures:
            out.append(_case_finding(label, outcome, None))
    for stale in report.stale:
        rule = stale.group if stale.group in by_id else None
        out.append(Finding("E231", f"the corpus is stale: {stale.reason}", Location(stale.file),
                           help="run `cleo-rules corpus build` and review the diff", rule=rule, corpus=True))
    out += [from_problem(p, corpus=True) for p in report.problems]
    out += [open_finding(o) for o in report.open]
    # the corpus's findings are recorded under their codes, as the pack's problems are
    for f in out:
        codes.seen(f.code, f.message)
    return out


def open_finding(outcome) -> Finding:
    """The note (or, once it passes, the warning to close it) an open case's outcome is."""
    from .corpus.report import open_problem

    p = open_problem(outcome)
    return Finding(p.code, p.message, Location(p.file, p.line, p.col) if p.file else None, p.severity, p.help, p.rule,
                   corpus=True, case=outcome.case.id)


def open_refs(cases) -> list[CaseRef]:
    """The open cases among ``cases`` (:class:`~cleo_rules.corpus.model.Case` or outcomes), as JUnit names them."""
    out = []
    for item in cases:
        case = getattr(item, "case", item)
        if case.open:
            out.append(CaseRef(case.id, case.file, case.line))
    return out


def rule_refs(pack) -> list[RuleRef]:
    return [RuleRef(r.id, r.kind, r.file, r.line) for r in pack.all_rules()]


# -- the pack's outline: its files and the rules they hold ------------------------------------------

def _rules_in(src) -> tuple[str, list[RuleRef]]:
    """The kind of the file ``src`` (a :class:`~cleo_rules.reading.load.LoadedFile`) and the rules with an id in it:
    the items of the list its rule family keeps its rules in (:mod:`cleo_rules.families`)."""
    from .families import kinds, family

    data = src.data
    kind = data.get("kind") if isinstance(data, dict) else None
    if not isinstance(kind, str) or kind not in kinds():
        return (kind if isinstance(kind, str) else ""), []
    holder = family(kind)
    if holder.items is None:  # a file of data only
        return kind, []
    items = data.get(holder.items)
    out = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out.append(RuleRef(item["id"], str(holder.rule_kind), src.display, src.where(f"/{holder.items}/{i}")[0]))
    return kind, out


def _unique(rules) -> list[RuleRef]:
    seen: set[str] = set()
    out = []
    for r in rules:
        if r.id not in seen:  # a repeated id is the first one's finding (E132)
            seen.add(r.id)
            out.append(r)
    return out


def outline(pack_dir, read: tuple | None = None) -> tuple[list[FileRef], list[RuleRef]]:
    """The files the manifest of the pack in ``pack_dir`` lists, and the rules that can be read from them.

    Read from the files alone, as plainly as the loader reads them, so a pack
    that does not compile has the same outline as once it does: a file that
    cannot be read (or is not there) is listed without rules, and a rule
    without a string id is left out. ``read`` is what the compiler read of
    the pack (:attr:`PackError.read <cleo_rules.errors.PackError.read>`):
    what it holds is not read again, only a file the compiler never reached.
    """
    from .reading.load import MANIFEST, display, load_yaml, resolve_member

    pack_dir = Path(pack_dir)
    if pack_dir.name == MANIFEST and not pack_dir.is_dir():
        pack_dir = pack_dir.parent
    if read is not None:
        src, were_read = read
    else:
        manifest = resolve_member(pack_dir, MANIFEST)
        src, were_read = (load_yaml(manifest, display(manifest))[0] if manifest is not None else None), {}
    listed = src.data.get("files") if src is not None and isinstance(src.data, dict) else None
    files: list[FileRef] = []
    rules: list[RuleRef] = []
    for i, name in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(name, str) or any(f.name == name for f in files):
            continue
        at = (src.display if src is not None else "", f"/files/{i}")
        member = resolve_member(pack_dir, name)
        shown = display(member) if member is not None else name
        if name in were_read:
            loaded = were_read[name]
        else:
            loaded = load_yaml(member, shown)[0] if member is not None and member.is_file() else None
        if loaded is None:
            files.append(FileRef(name, shown, listed_at=at))
            continue
        kind, found = _rules_in(loaded)
        files.append(FileRef(name, shown, kind, at))
        rules += found
    return files, _unique(rules)


def outline_of(pack) -> tuple[list[FileRef], list[RuleRef]]:
    """:func:`outline` of a compiled pack, from the files it was compiled from (nothing is read again); any rule
    it holds that its files do not show is added after them, but not the rules of the packs it is built on (a
    base's findings are its case's, so the outline is the same whether the pack compiles or not)."""
    files: list[FileRef] = []
    rules: list[RuleRef] = []
    listed = pack.manifest.data.get("files") if pack.manifest is not None else None
    for name, src in pack.sources.items():
        kind, found = _rules_in(src)
        index = listed.index(name) if isinstance(listed, list) and name in listed else -1
        files.append(FileRef(name, src.display, kind, (pack.manifest.display if pack.manifest is not None else "",
                                                       f"/files/{index}")))
        rules += found
    known = {r.id for r in rules}
    own = [r for r in pack.all_rules() if pack.owns(r) and r.id not in known]
    return files, _unique(rules + [RuleRef(r.id, r.kind, r.file, r.line) for r in own])


# -- SARIF 2.1.0 --------------------------------------------------------------------------


def _uri(file: str) -> tuple[str, str | None]:
    """``(uri, uriBaseId)``: a relative reference under %SRCROOT%, or a file URI for an absolute path."""
    path = Path(file)
    if path.is_absolute():
        return path.as_uri(), None
    return quote(path.as_posix()), "%SRCROOT%"


def _physical(loc: Location) -> dict:
    uri, base = _uri(loc.file)
    artifact: dict = {"uri": uri}
    if base:
        artifact["uriBaseId"] = base
    physical: dict = {"artifactLocation": artifact}
    if loc.line > 0:
        region: dict = {"startLine": loc.line}
        if loc.col > 0:
            region["startColumn"] = loc.col
        physical["region"] = region
    return physical


#: a finding's severity as a SARIF level (an open case is a note, one to close a warning)
_LEVELS = {"error": "error", "warning": "warning", "note": "note"}


def to_sarif(result: CheckResult, *, tool_version: str = "") -> dict:
    used = sorted({f.code for f in result.findings})
    index = {code: i for i, code in enumerate(used)}
    levels = {}
    for f in result.findings:
        levels.setdefault(f.code, _LEVELS.get(f.severity, "error"))
    rules = []
    for code in used:
        entry = codes.lookup(code)
        rule: dict = {"id": code, "name": code}
        if entry is not None:
            rule["shortDescription"] = {"text": entry.meaning}
            rule["help"] = {"text": entry.help}
            rule["properties"] = {"category": entry.category}
        rule["defaultConfiguration"] = {"level": levels[code]}
        rules.append(rule)
    results = []
    for f in result.findings:
        text = f.message if not f.rule or f.message.startswith(f.rule) else f"{f.rule}: {f.message}"
        if f.help:
            text += f" (help: {f.help})"
        res: dict = {"ruleId": f.code, "ruleIndex": index[f.code], "level": _LEVELS.get(f.severity, "error"),
                     "message": {"text": text}}
        if f.location is not None:
            res["locations"] = [{"physicalLocation": _physical(f.location)}]
        if f.related:
            res["relatedLocations"] = [{"id": i, "physicalLocation": _physical(r),
                                        **({"message": {"text": r.message}} if r.message else {})}
                                       for i, r in enumerate(f.related)]
        props = {k: v for k, v in (("packRule", f.rule), ("pointer", f.pointer)) if v}
        if props:
            res["properties"] = props
        results.append(res)
    driver: dict = {"name": "cleo-rules", "informationUri": "https://pypi.org/project/cleo-rules/", "rules": rules}
    if tool_version:
        driver["version"] = tool_version
    run: dict = {"tool": {"driver": driver}, "results": results,
                 "properties": {"pack": result.pack, "command": result.command}}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


# -- JUnit XML --------------------------------------------------------------------------------


def _junit_cases(result: CheckResult) -> tuple[list[tuple[str, str, str, int]], dict[str, list[Finding]]]:
    """The test cases ``(name, classname, file, line)`` and the findings of each: a finding goes to its rule's
    case, else to the case of the rule file it is in, else to ``(corpus)`` or ``(pack)``."""
    pack = result.pack
    name = pack.get("name", "?")
    cases = [(r.id, f"{name}.{r.kind}", r.file, r.line) for r in result.rules]
    cases += [(f.name, f"{name}.file", f.file, 0) for f in result.files]
    cases.append((NO_RULE, f"{name}.pack", pack.get("path", ""), 0))
    if result.corpus or result.corpus_ran:
        cases.append((CORPUS, f"{name}.corpus", pack.get("path", ""), 0))
    rules = {r.id for r in result.rules}
    by_file = {f.file: f.name for f in result.files}
    listed = {f.listed_at: f.name for f in result.files}
    by_case: dict[str, list[Finding]] = {}
    for f in result.findings:
        if f.case is not None:  # an open case: a test case of its own (_open_cases)
            continue
        if f.rule in rules:
            key = f.rule
        elif f.location is not None and f.location.file in by_file:
            key = by_file[f.location.file]
        elif f.location is not None and (f.location.file, f.pointer) in listed:  # the manifest's entry for the file
            key = listed[(f.location.file, f.pointer)]
        else:
            key = CORPUS if f.corpus and (result.corpus or result.corpus_ran) else NO_RULE
        by_case.setdefault(key, []).append(f)
    return cases, by_case


def _open_cases(result: CheckResult, suite) -> None:
    """One test case per open case, skipped with its reason: ``open`` while the pack gets it wrong, ``close``
    once it passes (pytest's xfail and xpass), or not judged when the pack does not compile."""
    said = {f.case: f for f in result.findings if f.case is not None}
    for ref in result.open:
        attrs = {"name": ref.id, "classname": f"{result.pack.get('name', '?')}.open"}
        if ref.file:
            attrs.update(file=ref.file, line=str(ref.line))
        case = ET.SubElement(suite, "testcase", attrs)
        f = said.get(ref.id)
        if f is None:
            ET.SubElement(case, "skipped", message="open case, not judged: the pack does not compile")
        else:
            ET.SubElement(case, "skipped", type="close" if f.code == "E233" else "open", message=f.message)


def to_junit(result: CheckResult) -> str:
    """One test case per rule file and per rule (:func:`outline`), plus ``(pack)`` for findings that name
    neither and ``(corpus)`` for the corpus's: the same cases whether the pack passes or not; then one skipped
    case per open case of the corpus."""
    pack = result.pack
    suite_name = f"cleo-rules {result.command}: {pack.get('name', '?')} {pack.get('version', '')}".strip()
    cases, by_case = _junit_cases(result)
    failures = sum(1 for c in cases if any(f.severity == "error" for f in by_case.get(c[0], ())))
    skipped = 0 if result.judged else sum(1 for c in cases if not any(f.severity == "error"
                                                                       for f in by_case.get(c[0], ())))
    tests = len(cases) + len(result.open)
    root = ET.Element("testsuites", name=f"cleo-rules {result.command}", tests=str(tests),
                      failures=str(failures), errors="0")
    suite = ET.SubElement(root, "testsuite", name=suite_name, tests=str(tests), failures=str(failures),
                          errors="0", skipped=str(skipped + len(result.open)))
    props = ET.SubElement(suite, "properties")
    for key in ("name", "version", "hash", "path", "found_by"):
        if pack.get(key):
            ET.SubElement(props, "property", name=f"pack.{key}", value=str(pack[key]))
    for name, classname, file, line in cases:
        attrs = {"name": name, "classname": classname}
        if file:
            attrs["file"] = file
        if line:
            attrs["line"] = str(line)
        case = ET.SubElement(suite, "testcase", attrs)
        found = by_case.get(name, [])
        errors = [f for f in found if f.severity == "error"]
        if errors:
            lines = []
            for f in found:
                where = f.location.text() if f.location else ""
                about = f"{f.rule}: " if f.rule and f.rule != name else ""
                lines.append(f"{where}: {f.severity}[{f.code}] {about}{f.message}".lstrip(": "))
                if f.help:
                    lines.append(f"  help: {f.help}")
                lines += [f"  at {r.text()}" for r in f.related]
            first = errors[0]
            failure = ET.SubElement(case, "failure", type=first.code,
                                    message=f"{len(errors)} finding{'s' if len(errors) != 1 else ''}; "
                                            f"first: [{first.code}] {first.message}")
            failure.text = "\n".join(lines)
            continue
        if not result.judged:
            ET.SubElement(case, "skipped", message="not judged: the pack does not compile")
        if found:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(f"{f.severity}[{f.code}] {f.message}" for f in found)
    _open_cases(result, suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# -- GitHub workflow commands -------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(result: CheckResult) -> str:
    """``::error file=…,line=…,col=…,title=…::message`` per finding, then the summary line."""
    lines = []
    for f in result.findings:
        command = {"error": "error", "note": "notice"}.get(f.severity, "warning")
        props = []
        if f.location is not None:
            props.append(f"file={_escape_property(f.location.file)}")
            if f.location.line:
                props.append(f"line={f.location.line}")
                if f.location.col:
                    props.append(f"col={f.location.col}")
        title = f"{f.code} {f.rule}" if f.rule else f.code
        props.append(f"title={_escape_property(title)}")
        body = f.message
        if f.help:
            body += f"\nhelp: {f.help}"
        for r in f.related:
            body += f"\n{r.message or 'see'}: {r.text()}"
        lines.append(f"::{command} {','.join(props)}::{_escape_data(body)}")
    if result.summary:
        lines.append(result.summary)
    return "\n".join(lines) + "\n"


def render(result: CheckResult, fmt: str, *, tool_version: str = "") -> str:
    if fmt == "sarif":
        return json.dumps(to_sarif(result, tool_version=tool_version), indent=2, ensure_ascii=False) + "\n"
    if fmt == "junit":
        return to_junit(result)
    if fmt == "github":
        return to_github(result)
    raise ValueError(f"render() takes sarif, junit or github, not {fmt!r}")

