"""``check``, ``classify`` and ``explain``: the rule-pack commands.

None of these import an embedding runtime (ONNX Runtime, torch).
"""

from __future__ import annotations

import dataclasses
import json
import sys

import click

from .common import (
    EXIT_CODES_HELP, composition_lines, error_line, find, history_error, history_option, load_lenient, pack_line,
    pack_option, pack_record, plain, shown, stream_lines,
)
from .outputs import Piece, format_option

def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cleo-rules")
    except PackageNotFoundError:  # running from a checkout that is not installed
        return ""


def check_report(result, fmt: str, command: str = "check", *, max_shown: int = 20, every: bool = False) \
        -> list[Piece]:
    """A :class:`~cleo_rules.pack_check.PackCheck` in ``fmt``, as ``check`` (or ``corpus check``) shows it: the
    parts of the report, each with whether it goes to stderr when printed."""
    if fmt == "json":
        doc = result.to_dict() if command == "check" else result.corpus_dict()
        return [(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", False)]
    if fmt != "text":
        from ..findings import render

        return [(render(result.findings(command), fmt, tool_version=_version()), False)]
    found = result.found
    if result.pack is None:
        record = result.record()
        head = (f"pack: {record['name']} {record['version']} at {shown(found.path, record['name'])} "
                f"({found.describe()})\n")
        assert result.error is not None
        # corpus check says it as any command does of a pack that does not compile: `Error: ...`
        error = result.error.report() if command == "check" else f"Error: {result.error.report()}"
        return [(head, False), (plain(error, found, record["name"]) + "\n", True)]
    if command != "check":
        view = result.corpus_view()
        assert view is not None
        text = view.format(max_shown=max_shown)
        for base, report in result.verdict.base_reports:
            text += "\n\n" + (report.format(max_shown=max_shown) if report is not None else
                              f"corpus of {base.name}: {result.base_skipped(base)}")
        text = plain(text, found, result.pack.name, result.pack)
        return [(f"pack: {pack_line(result.pack, found)}\n{text}\n", False)]
    return [(plain(text, found, result.pack.name, result.pack), err) for text, err in _check_text(result, every)]


#: failures of one cause shown under its heading; `check --all` shows every one
CAUSE_SHOWN = 3


def _cause_text(cause, every: bool) -> str:
    """One cause (:class:`~cleo_rules.pack.causes.Cause`): its finding's heading, the count, the first
    :data:`CAUSE_SHOWN` failures it brings about (all with ``every``), then the fixes."""
    head, *rest = cause.problem.format().split("\n")
    items = [f"  example of {p.rule} (pack {p.pack}) at {p.location}: {p.message}" for p in cause.examples]
    items += [f"  corpus case of {name} {o.case.id} {json.dumps(o.case.message, ensure_ascii=False)}: "
              f"{o.expected()}, {o.got()}" + (f" at {o.case.source}" if o.case.source else "")
              for name, o in cause.cases]
    shown = items if every else items[:CAUSE_SHOWN]
    if len(items) > len(shown):
        shown.append(f"  … and {len(items) - len(shown)} more of this cause: `cleo-rules check --all` lists every one")
    return "\n".join([head] + shown + rest)


def _without(report, caused: set):
    """``report`` as its failure blocks show it with the failures of a cause left out (they are under its
    heading); None when nothing else is wrong."""
    rules = [dataclasses.replace(r, failures=[f for f in r.failures if id(f[1]) not in caused]) for r in report.rules]
    groups = [dataclasses.replace(g, failures=[f for f in g.failures if id(f[1]) not in caused])
              for g in report.groups]
    left = dataclasses.replace(report, rules=rules, groups=groups)
    wrong = any(r.failures for r in rules) or any(g.failures for g in groups) or report.stale or report.problems
    return left if wrong or report.open else None


def _check_text(result, every: bool = False) -> list[Piece]:
    from ..errors import PackError

    pack, found, verdict = result.pack, result.found, result.verdict
    out: list[Piece] = [(f"pack: {pack_line(pack, found)}\n", False)]
    out += [(line + "\n", False) for line in composition_lines(pack)]
    if verdict.problems:
        text = PackError(verdict.problems, pack=str(found.path)).report()
        for cause in verdict.causes:  # one heading per cause, with its count and first failures
            text = text.replace(cause.problem.format(), _cause_text(cause, every))
        out.append((text + "\n", True))
    else:
        from ..families import counts

        out.append((f"ok: {', '.join(f'{n} {t.words}' for t, n in counts(pack))}\n", False))
    report = verdict.corpus_report
    if report is not None and not report.ok:
        out.append((report.format(table=False) + "\n", True))  # the open cases among what is wrong
    elif report is not None and (report.open or report.problems):  # notes and warnings: never a failure
        out.append((report.format(table=False) + "\n", False))
    if report is not None:
        out.append((f"corpus {report.summary_line()}\n", False))
        if report.skipped:
            out.append((f"  {report.skipped_text()}\n", False))
    elif result.skipped:
        out.append((f"corpus: {result.skipped}\n", False))
    for base, base_report in verdict.base_reports:
        if base_report is None:
            out.append((f"corpus of {base.name}: {result.base_skipped(base)}\n", False))
            continue
        caused = {id(o) for cause in verdict.causes for _, o in cause.cases}
        shown_report = _without(base_report, caused) if caused else base_report
        if not base_report.ok and shown_report is not None:
            out.append((shown_report.format(table=False) + "\n", True))
        out.append((f"corpus of {base.name} {base_report.summary_line()}\n", False))
        if base_report.skipped:
            out.append((f"  {base_report.skipped_text()}\n", False))
    return out


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("pack_dir", required=False, metavar="[PACK]")
@format_option
@click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None,
              help="Corpus to run (default: corpus/ beside the pack, when there is one).")
@click.option("--no-corpus", is_flag=True, help="Only validate and compile; do not run the corpus.")
@click.option("--all", "every", is_flag=True,
              help="List every failure a team setting brings about in its bases (by default: the count and three).")
def check(pack_dir, outputs, corpus_dir, no_corpus, every):
    """Validate, lint and compile a rule pack, then run its corpus; exit 1 on any finding.

    PACK is a directory, its pack.yaml, or an installed pack's name; without
    it the pack is $CLEO_RULES_PACK, else [tool.cleo-rules] pack in the
    nearest pyproject.toml, else ./rules when it holds a pack.yaml, else the
    bundled cleo-en. The corpus is corpus/ beside the pack directory (see
    `cleo-rules corpus check` for the per-rule table); a pack without one is
    only compiled.

    Each rule's own lists are judged first: its examples must fire it, its
    counterexamples must not, and a correction's request forms (requests
    with its words that reject nothing: "Try that one.", "Check the other
    branch.") must be no correction, judged with no conversation before
    them; one written {message, history} must also be a follow-up after
    that history. A setting of a pack's own that makes checks of a pack it
    is built on fail is one finding at the setting (E157), with the count,
    three of the failures and the fixes; --all lists every failure.

    \b
    -o FILE writes the --format report into FILE instead of printing it;
    --sarif-output FILE (and --text-, --json-, --junit-, --github-output)
    writes one more report in that format, so one run prints text to the log
    and leaves SARIF for code scanning.

    \b
    Examples:
      cleo-rules check
      cleo-rules check rules/
      cleo-rules check --sarif-output cleo-rules.sarif --junit-output cleo-rules.xml
      cleo-rules check --format sarif -o cleo-rules.sarif
    """
    from ..pack_check import check as check_pack

    # examples are judged after compiling, so the corpus still runs and one check shows everything a change broke
    result = check_pack(find(pack_dir), corpus_dir, corpus=not no_corpus)
    outputs.emit(lambda fmt: check_report(result, fmt, every=every))
    if not result.ok:
        sys.exit(1)


def report(error, out) -> None:
    """Write a failed line's error object on its own output line (and say so on stderr)."""
    click.echo(f"line {error.line}: {error}", err=True)
    out.write(error_line(error) + "\n")
    out.flush()


def _human(decision, pack=None, found=None) -> str:
    rows = [("kind", decision.kind)]
    if decision.rule:
        rule = decision.rule
        if decision.matched is not None and decision.span is not None:
            rule += f"  (matched {decision.matched!r} at {decision.span[0]}..{decision.span[1]})"
        rows.append(("rule", rule))
    for part in decision.parts:
        if part.name == "anchor":
            rows.append(("anchor", part.text))
        elif part.name == "referent":
            by = f", by {part.rule}" if part.rule else ", the reply's opening words"
            rows.append(("referent", f"{part.text}  (from {part.where}{by})"))
        elif part.name in ("topic", "reply"):
            rows.append((part.name, f"{part.text}  (from {part.where})"))
    rows.append(("query", "(none: not searched)" if decision.query is None else decision.query))
    if decision.note:
        rows.append(("note", decision.note))
    if pack is not None and found is not None:
        rows.append(("pack", pack_line(pack, found)))
    else:
        rows.append(("pack", f"{decision.pack} {decision.pack_version} ({decision.pack_hash})"))
    out = []
    for key, value in rows:
        lines = str(value).split("\n")
        out.append(f"{key + ':':8} {lines[0]}")
        out.extend(f"{'':8} {line}" for line in lines[1:])
    return "\n".join(out)


def _record(decision, found=None) -> dict:
    d = decision.to_dict()
    d.pop("message", None)
    if found is not None:
        d["pack_path"] = found.to_dict()["path"]
        d["pack_found_by"] = found.found_by
    return d


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("message", required=False)
@history_option
@pack_option
@click.option("--jsonl", is_flag=True,
              help='Read JSON Lines on stdin, each {"message": str, "history": [...]} (history items are strings '
                   'or {"role", "content"} objects); write one JSON line per input, flushed as soon as it is written; '
                   'a line that cannot be classified gets {"error": {"code", "message"}, "line": n} and the stream '
                   "goes on (exit 2 at the end).")
@click.option("--json", "as_json", is_flag=True, help="Print the decision for MESSAGE as JSON.")
def classify(message, history, pack_dir, jsonl, as_json):
    """Classify MESSAGE and show the query retrieval should search.

    Works on a pack whose own examples fail (they are listed as a warning on
    stderr; `cleo-rules check` stays strict). With --jsonl, each answer line is
    written and flushed before the next input line is read, so a co-process
    can write one line and wait for its answer.

    \b
    Examples:
      cleo-rules classify "Yes, go with the second one." -H "Compare the two van insurance quotes"
      cleo-rules classify "We tried that one already."
      echo '{"message": "Tell me more", "history": ["Quotes for van insurance"]}' | cleo-rules classify --jsonl
    """
    if jsonl and message is not None:
        raise click.UsageError("give MESSAGE or --jsonl, not both")
    if not jsonl and message is None:
        raise click.UsageError("give a MESSAGE to classify, or --jsonl to read JSON Lines from stdin")
    found = find(pack_dir)
    pack, _ = load_lenient(found)
    if message is not None:
        decision = pack.classify(message, history)
        click.echo(json.dumps(_record(decision, found), ensure_ascii=False) if as_json else _human(decision, pack, found))
        return
    failed = 0
    out = sys.stdout
    for number, item in stream_lines(sys.stdin):
        if not isinstance(item, tuple):
            failed += 1
            report(item, out)
            continue
        msg, hist = item
        try:
            record = _record(pack.classify(msg, hist), found)
        except (TypeError, ValueError) as exc:  # a history item the library refuses
            failed += 1
            report(history_error(exc, number), out)
            continue
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        out.flush()
    if failed:
        sys.exit(2)


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("message")
@history_option
@pack_option
@click.option("--all", "walk", is_flag=True,
              help="List every rule in the order the walk applies them: tried or why not, which fired, on which "
                   "span.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the explanation as JSON: the decision, every rule's attempt and the near misses.")
def explain(message, history, pack_dir, walk, as_json):
    """Show why MESSAGE got its decision: the rule and its span, where each part of the query came from, and
    the near misses.

    The near misses are the rules whose words are in MESSAGE but which did
    not take it, each in two lines: what the rule needs (the rule's key or
    the pack's setting at work in brackets) and what the message lacks,
    naming the span the rule tested. What can stop a rule: its pattern does
    not match, the message's words over a rule's max_words, a guard (head_in,
    unless_name, unless_name_before), no antecedent in the conversation, the
    topic words around the match, a referent rule that found nothing, the
    message's length, a time limit. --all lists every rule of the walk
    instead.

    Works on a pack whose own examples fail (they are listed as a warning on
    stderr), which is when a designer needs it most.

    \b
    Examples:
      cleo-rules explain "Not that one, the other one." -H "Which van insurer should we use?"
      cleo-rules explain "When was the album released?" --all
    """
    found = find(pack_dir)
    pack, failing = load_lenient(found)
    ex = pack.explain(message, history)
    if as_json:
        doc = ex.to_dict()
        doc["pack"] = pack_record(pack, found)
        doc["failing_examples"] = [p.to_dict() for p in failing]
        click.echo(json.dumps(doc, ensure_ascii=False, indent=2))
        return
    if walk:
        click.echo(_walk(message, ex))
        click.echo(_human(ex.decision, pack, found))
        return
    click.echo(_brief(message, ex, pack, found))
    click.echo(f"pack:    {pack_line(pack, found)}")


def _walk(message, ex) -> str:
    """Every rule's attempt in walk order, the one that decided marked ``=>``: ``explain --all``."""
    out = [f"message:    {message!r}"]
    if ex.normalized:
        out.append(f"normalised: {ex.normalized!r}")
        out.append(f"words:      {len(ex.words)}")
    out.append("")
    decided = False
    for a in ex.attempts:
        winner = (not decided and a.fired and (a.rule == ex.decision.rule or a.stage == "length"))
        mark = "=>" if winner else ("+ " if a.fired else "  ")
        decided = decided or winner
        label = a.rule or ("(length)" if a.stage == "length" else "(vocabulary test)")
        line = f"{mark} {a.stage:<10} {label:<36} {'fired' if a.fired else '-'}"
        if a.matched is not None and a.span is not None:
            line += f"  on {a.matched!r} [{a.span[0]}:{a.span[1]}]"
        if a.note:
            line += f"  ({a.note})"
        out.append(line)
    out.append("")
    return "\n".join(out)


def near_miss_lines(misses) -> list[str]:
    """Two lines a near miss: the rule (and the span it tested) with what it needs, then what the message lacks."""
    labels = [n.rule or f"({n.stage} test)" for n in misses]
    width = max(map(len, labels), default=0)
    lines = []
    for n, label in zip(misses, labels):
        lines.append(f"  {label:<{width}}  needs {n.needs}")
        lines.append(f"  {'':<{width}}  lacks {n.lacks}")
    return lines


def _brief(message, ex, pack, found) -> str:
    """The decision, the rule and its span, the query's parts and where each came from, the near misses."""
    d = ex.decision
    rows = [("message", repr(message))]
    if d.rule is not None:
        kind = d.kind
    elif d.kind == "skip":
        kind = f"{d.kind}  ({ex.attempts[0].note})"
    else:
        searched = "the message is searched as typed" if d.query else "nothing is searched"
        kind = f"{d.kind}  (no rule took it: {searched})"
    rows.append(("kind", kind))
    if d.rule is not None:
        try:
            rule = pack.rule(d.rule)
            at = f"  ({plain(rule.file, found, pack.name)}:{rule.line})"
        except KeyError:
            at = ""
        rows.append(("rule", f"{d.rule}{at}"))
        if d.matched is not None and d.span is not None:
            rows.append(("matched", f"{d.matched!r} at {d.span[0]}..{d.span[1]} of the message"))
    if d.note:
        rows.append(("note", d.note))
    rows.append(("query", "(none: not searched)" if d.query is None else d.query))
    width = max((len(p.name) for p in d.parts), default=0)
    rows.append(("parts", "\n".join(f"{p.name:<{width}}  from {p.where}{f' (by {p.rule})' if p.rule else ''}: "
                                    f"{p.text!r}" for p in d.parts) or "(none)"))
    out = []
    for key, value in rows:
        lines = str(value).split("\n")
        out.append(f"{key + ':':8} {lines[0]}")
        out.extend(f"{'':8} {line}" for line in lines[1:])
    if ex.near_misses:
        out.append("near misses (rules whose words are in the message: what each needs, what the message lacks):")
        out += near_miss_lines(ex.near_misses)
    elif d.kind != "skip" and d.rule is None:
        out.append("near misses: none (the prefilter named no rule)")
    return "\n".join(out)
