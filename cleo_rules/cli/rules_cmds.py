"""``check``, ``classify`` and ``explain``: the rule-pack commands.

None of these import torch or sentence-transformers.
"""

from __future__ import annotations

import json
import sys

import click

from ..errors import CleoError

pack_option = click.option("--pack", "pack_dir", type=click.Path(file_okay=True, dir_okay=True),
                           default=None, help="Rule pack: a directory or an installed pack's name (default: the bundled cleo-en).")
history_option = click.option("--history", "-H", multiple=True, metavar="TEXT",
                              help="An earlier user message, oldest first; repeat for more.")


def _load(pack_dir):
    from ..pack.compile import load_pack

    return load_pack(pack_dir)


@click.command()
@click.argument("pack_dir", required=False, type=click.Path(file_okay=True, dir_okay=True))
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON document.")
@click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None,
              help="Corpus to run (default: corpus/ beside the pack, when there is one).")
@click.option("--no-corpus", is_flag=True, help="Only validate and compile; do not run the corpus.")
def check(pack_dir, as_json, corpus_dir, no_corpus):
    """Validate, lint and compile a rule pack, then run its corpus; exit non-zero on any error.

    The corpus is corpus/ beside the pack directory (see `cleo-rules corpus
    check` for the per-rule table); a pack without one is only compiled.

    \b
    Examples:
      cleo-rules check
      cleo-rules check rules/
    """
    from ..corpus.run import example_problems
    from ..errors import PackError
    from ..pack.compile import load_pack

    try:
        pack = load_pack(pack_dir, check_examples=False)
    except PackError as exc:
        if as_json:
            click.echo(json.dumps({"ok": False, "problems": [p.to_dict() for p in exc.problems]}, indent=2))
        else:
            click.echo(exc.report(), err=True)
        sys.exit(1)
    # examples are checked after compiling, so the corpus still runs and one check shows everything a change broke
    examples = example_problems(pack)
    failed = PackError(examples, pack=str(pack_dir or pack.path)) if examples else None
    summary = {
        "ok": failed is None, "pack": pack.name, "version": pack.version, "hash": pack.content_hash,
        "corrections": len(pack.corrections), "follow_ups": len(pack.follow_ups),
        "vocabulary_sets": len(pack.vocab_sets),
    }
    if failed is not None:
        summary["problems"] = [p.to_dict() for p in failed.problems]
        if not as_json:
            click.echo(failed.report(), err=True)
    report, skipped = None, None
    if not no_corpus:
        from pathlib import Path

        from ..corpus import check_corpus, default_corpus_dir

        where = Path(corpus_dir) if corpus_dir is not None else default_corpus_dir(pack)
        if where.is_dir() or corpus_dir is not None:
            report = check_corpus(pack, where)
        else:
            skipped = f"no corpus at {where}; `cleo-rules corpus build` creates one"
    if report is not None:
        summary["ok"] = summary["ok"] and report.ok
        summary["corpus"] = report.to_dict()
    elif skipped or no_corpus:
        summary["corpus"] = {"skipped": skipped or "--no-corpus"}
    if as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        if failed is None:
            click.echo(f"ok: {pack.name} {pack.version} ({pack.content_hash}): {len(pack.corrections)} corrections, "
                       f"{len(pack.follow_ups)} follow-up patterns, {len(pack.vocab_sets)} vocabulary sets")
        if report is not None and report.ok:
            click.echo(f"corpus {report.summary_line()}")
        elif report is not None:
            click.echo(report.format(table=False), err=True)
            click.echo(f"corpus {report.summary_line()}")
        elif skipped:
            click.echo(f"corpus: {skipped}")
    if not summary["ok"]:
        sys.exit(1)


def _human(decision) -> str:
    rows = [("kind", decision.kind)]
    if decision.rule:
        rule = decision.rule
        if decision.matched is not None:
            rule += f"  (matched {decision.matched!r} at {decision.span[0]}..{decision.span[1]})"
        rows.append(("rule", rule))
    if decision.anchor is not None:
        rows.append(("anchor", decision.anchor))
    rows.append(("query", "(none: not searched)" if decision.query is None else decision.query))
    if decision.note:
        rows.append(("note", decision.note))
    rows.append(("pack", f"{decision.pack} {decision.pack_version} ({decision.pack_hash})"))
    out = []
    for key, value in rows:
        lines = str(value).split("\n")
        out.append(f"{key + ':':8} {lines[0]}")
        out.extend(f"{'':8} {line}" for line in lines[1:])
    return "\n".join(out)


def _record(decision) -> dict:
    d = decision.to_dict()
    d.pop("message", None)
    return d


@click.command()
@click.argument("message", required=False)
@history_option
@pack_option
@click.option("--jsonl", is_flag=True,
              help='Read JSON Lines on stdin, each {"message": str, "history": [str, ...]}; write one JSON line per input.')
@click.option("--json", "as_json", is_flag=True, help="Print the decision for MESSAGE as JSON.")
def classify(message, history, pack_dir, jsonl, as_json):
    """Classify MESSAGE and show the query retrieval should search.

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
    pack = _load(pack_dir)
    if not jsonl:
        decision = pack.classify(message, list(history))
        click.echo(json.dumps(_record(decision), ensure_ascii=False) if as_json else _human(decision))
        return
    failed = 0
    out = sys.stdout
    for number, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise ValueError("each line must be a JSON object")
            msg = item.get("message")
            hist = item.get("history", [])
            if not isinstance(msg, str):
                raise ValueError('"message" must be a string')
            if hist is None:
                hist = []
            if not isinstance(hist, list) or not all(isinstance(h, str) for h in hist):
                raise ValueError('"history" must be a list of strings')
            record = _record(pack.classify(msg, hist))
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            failed += 1
            record = {"line": number, "error": str(exc)}
            click.echo(f"line {number}: {exc}", err=True)
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    out.flush()
    if failed:
        sys.exit(1)


@click.command()
@click.argument("message")
@history_option
@pack_option
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
def explain(message, history, pack_dir, as_json):
    """Show which rules were tried on MESSAGE, which fired, on which span, and the query.

    \b
    Example:
      cleo-rules explain "Not that one, the other one." -H "Which van insurer should we use?"
    """
    pack = _load(pack_dir)
    ex = pack.explain(message, list(history))
    if as_json:
        click.echo(json.dumps(ex.to_dict(), ensure_ascii=False, indent=2))
        return
    click.echo(f"message:    {message!r}")
    if ex.normalized:
        click.echo(f"normalised: {ex.normalized!r}")
        click.echo(f"words:      {len(ex.words)}")
    click.echo("")
    decided = False
    for a in ex.attempts:
        winner = (not decided and a.fired and (a.rule == ex.decision.rule or a.stage == "length"))
        mark = "=>" if winner else ("+ " if a.fired else "  ")
        decided = decided or winner
        label = a.rule or ("(length)" if a.stage == "length" else "(vocabulary test)")
        line = f"{mark} {a.stage:<10} {label:<36} {'fired' if a.fired else '-'}"
        if a.matched is not None:
            line += f"  on {a.matched!r} [{a.span[0]}:{a.span[1]}]"
        if a.note:
            line += f"  ({a.note})"
        click.echo(line)
    click.echo("")
    click.echo(_human(ex.decision))
