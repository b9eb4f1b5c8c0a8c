"""``cleo-rules turn``, ``cleo-rules demo`` and ``cleo-rules relevance``.

Thin click wrappers over :mod:`cleo_rules.turn` and :mod:`cleo_rules.relevance`;
the store is ``--db`` (or ``$CLEO_MEMORY_DB``), opened by :mod:`.store`, and
``-H`` is the history option every command shares. Library errors are
:class:`~cleo_rules.errors.CleoError` and become ``Error: ...`` with the exit
code of their category in :func:`cleo_rules.cli.main`.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import textwrap
from datetime import date, datetime, timezone
from pathlib import Path

import click

from ..errors import UsageError
from ..shaping import as_follow_up
from .common import (
    EXIT_CODES_HELP, PACK_HELP, SuggestingGroup, error_line, find, history_error, history_option, pack_line, pack_record,
    stream_lines,
)
from .db_option import db_option, open_store


def _load_pack(pack):
    """``(pack, found)``: the pack a command uses (see :func:`cleo_rules.pack.discovery.find_pack`)."""
    from ..pack.compile import compile_pack

    found = find(pack)
    return compile_pack(found.path), found


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("message", required=False)
@db_option
@click.option("--jsonl", is_flag=True, help="Read {\"message\", \"history\"} JSON lines from stdin, write one JSON line "
                                            "per turn; a line that cannot be run gets {\"error\": {...}, \"line\": n} "
                                            "and the stream goes on (exit 2 at the end).")
@history_option
@click.option("--k", "-k", default=5, show_default=True, type=click.IntRange(1, 100), help="Results per search.")
@click.option("--pack", default=None, metavar="DIR|NAME", help=PACK_HELP)
@click.option("--no-trace", is_flag=True, help="Do not record traces in the store (it is then opened read-only).")
@click.option("--trace-redact", is_flag=True,
              help="Keep no message, query or anchor text in the traces (kinds, rules, ids, scores, timings stay).")
@click.option("--trace-max-chars", type=click.IntRange(1), default=None, metavar="N",
              help="Keep at most N characters of each traced text (default 2000).")
@click.option("--timings", is_flag=True, help="Add per-stage timings (seconds) to each output line.")
def turn(message, db, jsonl, history, k, pack, no_trace, trace_redact, trace_max_chars, timings):
    """Run turns end to end: classify, shape the query, search, build the context.

    Each output line has kind, rule, query (null when no search was made),
    anchor, results (source, id, item, title, date, text, score), context and
    the pack used (name, version, hash, path, how it was found). Needs the
    [memory] extra.

    \b
    Examples:
      echo '{"message": "Yes, the second one.", "history": ["Compare the two kiln quotes"]}' \\
        | cleo-rules turn --db memory/ --jsonl
      cleo-rules turn --db memory/ "What about the other one?" -H "Compare the two kiln quotes"
    """
    from ..turn import Recall

    if jsonl and message is not None:
        raise UsageError("give a MESSAGE or --jsonl, not both")
    if not jsonl and message is None:
        raise UsageError("give a MESSAGE, or --jsonl to read turns from stdin")
    pack_obj, found = _load_pack(pack)
    used = pack_record(pack_obj, found)
    from ..trace import DEFAULT_MAX_CHARS

    trace = {"enabled": not no_trace, "redact": trace_redact, "max_chars": trace_max_chars or DEFAULT_MAX_CHARS}
    failed = 0

    def report(error) -> None:
        click.echo(f"line {error.line}: {error}", err=True)
        click.echo(error_line(error))

    def line_for(t) -> str:
        return json.dumps({**t.to_dict(timings=timings), "pack": used}, ensure_ascii=False)

    with open_store(db, read_only=no_trace) as store:
        recall = Recall(store, pack_obj, k=k, trace=trace)
        if message is not None:
            click.echo(line_for(recall.turn(message, history)))
            return
        for number, item in stream_lines(sys.stdin):
            if not isinstance(item, tuple):
                failed += 1
                report(item)
                continue
            msg, hist = item
            try:
                out = line_for(recall.turn(msg, hist))
            except (TypeError, ValueError) as exc:  # a history item the library refuses
                failed += 1
                report(history_error(exc, number))
                continue
            click.echo(out)
    if failed:
        sys.exit(2)


# --------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------

def _demo_paths():
    from ..resources import data_dir

    data = data_dir()
    memory = data / "sample_memory.jsonl"
    conversation = data / "demo_conversation.jsonl"
    for path in (memory, conversation):
        if not path.is_file():
            raise UsageError(f"bundled demo data missing: {path}")
    return memory, conversation


def _demo_messages(path: Path) -> list[dict]:
    from ..jsonl import JsonLineError, read_lines

    rows = []
    with path.open("rb") as fh:
        for number, value in read_lines(fh):
            if isinstance(value, JsonLineError) or not isinstance(value, dict) or "message" not in value:
                raise UsageError(f"bundled demo data {path}:{number} is damaged: reinstall cleo-rules")
            rows.append(value)
    return rows


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _print_turn(n: int, t, *, width: int, context: bool, compare=None, reply: str | None = None) -> None:
    echo = click.echo
    echo(click.style(f"Turn {n}", bold=True) + f"  user: {t.decision.message}")
    echo(f"  kind: {t.kind}   rule: {t.rule or '-'}")
    if t.query is None:
        echo("  searched: nothing (no memory search was made for this turn)")
    else:
        label = "searched (combined with an earlier message)" if t.decision.anchor else "searched"
        echo(f"  {label}: {t.query.replace(chr(10), ' / ')}")
        if not t.results:
            echo("  recalled: nothing above the score floor")
        for i, r in enumerate(t.results, 1):
            echo(f"  {i}. {r.title} ({r.date})  [{r.source} {r.id}, score {r.score:.2f}]")
            echo(click.style(f"     {_short(r.text, width - 5)}", dim=True))
    if compare is not None:
        label, results = compare
        echo(f"  {label}, it would have recalled:")
        for i, r in enumerate(results, 1):
            echo(f"  {i}. {r.title} ({r.date})  [score {r.score:.2f}]")
    if context:
        echo("  context block:")
        echo(textwrap.indent(t.context, "    | "))
    if reply:
        echo(click.style(f"  assistant: {reply}", italic=True))
    echo("")


@click.command()
@click.option("--db", type=click.Path(file_okay=False), default=None,
              help="Build the sample memory here and keep it (default: a temporary directory, removed afterwards; "
                   "$CLEO_MEMORY_DB is not read, so the sample never lands in a store by accident).")
@click.option("--k", "-k", default=3, show_default=True, type=click.IntRange(1, 20), help="Results per search.")
@click.option("--pack", default=None, metavar="DIR|NAME", help=PACK_HELP)
@click.option("--context", "show_context", is_flag=True, help="Also print each turn's context block.")
@click.option("--compare/--no-compare", default=True, show_default=True,
              help="For a combined turn, also show what the raw message would have recalled; "
                   "for a correction, what combining it would have recalled.")
def demo(db, k, pack, show_context, compare):
    """Build the sample memory and replay a sample conversation.

    The sample memory is a small plumbing and heating business's past
    conversations and documents. Each turn of the sample conversation is
    classified, its query shaped and searched, and the recalled items are
    printed with the title and date of the conversation or document they
    come from. The assistant's replies (abridged) are printed for reading
    only; they are not part of any search.

    Needs the [memory] extra.

    \b
    Examples:
      cleo-rules demo
      cleo-rules demo --db ./sample-memory --context
    """
    from ..turn import Recall

    memory_path, conversation_path = _demo_paths()
    rows = _demo_messages(conversation_path)
    tmp = None
    if db is None:
        tmp = tempfile.mkdtemp(prefix="cleo-demo-")
        db = tmp
    try:
        started = time.perf_counter()
        pack_obj, found = _load_pack(pack)
        click.echo(f"Building the sample memory in {db} (loading the embedding model) ...", err=True)
        total = sum(1 for line in memory_path.open(encoding="utf-8") if line.strip())
        done = 0

        def progress(lines: int) -> None:
            nonlocal done
            done += lines
            click.echo(f"  {min(done, total)}/{total} items embedded", err=True)

        with open_store(db, create=True) as store:
            report = store.ingest_jsonl(memory_path, progress=progress)
            click.echo(f"  {_ingest_summary(report)} in {time.perf_counter() - started:.1f} s", err=True)
            click.echo(f"Replaying {len(rows)} turns with pack {pack_line(pack_obj, found)}, k={k}\n", err=True)
            width = min(shutil.get_terminal_size((100, 20)).columns, 110)
            recall = Recall(store, pack_obj, k=k)
            history: list[str] = []  # the user's messages: the replies are for reading only
            for n, row in enumerate(rows, 1):
                t = recall.turn(row["message"], history)
                _print_turn(n, t, width=width, context=show_context, reply=row.get("assistant"),
                            compare=_comparison(store, pack_obj, t, history, k) if compare else None)
                history.append(row["message"])
        click.echo(f"Done in {time.perf_counter() - started:.1f} s.", err=True)
        if tmp is None:
            click.echo(f"The memory and its traces are kept in {db}. Try:\n"
                       f"  cleo-rules turn --db {db} \"Yes, the second one.\" -H \"{rows[0]['message']}\"", err=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _comparison(store, pack, t, history, k: int):
    """What the other choice would have recalled: ``(label, results)`` or ``None``.

    A combined follow-up is compared with its raw message searched as typed;
    a correction with the query the library would have shaped for it as a
    follow-up (:func:`cleo_rules.shaping.as_follow_up`), when there is
    anything to combine it with.
    """
    if t.decision.anchor:
        return "searched as typed", store.search(t.decision.message, k=k).results
    if t.kind == "correction":
        query, parts, _ = as_follow_up(pack, t.decision.message, history)
        if any(part.name != "message" for part in parts):
            return "combined with the earlier message", store.search(query, k=k).results
    return None


def _ingest_summary(report) -> str:
    """One line about what ``ingest_jsonl`` did."""
    summary = getattr(report, "summary", None)
    return str(summary()) if callable(summary) else str(report)


# --------------------------------------------------------------------------
# relevance
# --------------------------------------------------------------------------

def _since(value: str | None) -> str | None:
    """``--since`` as a string comparable with trace times (ISO 8601, UTC)."""
    if value is None:
        return None
    try:
        if len(value) == 10:
            return date.fromisoformat(value).isoformat()
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since must be an ISO date or time such as 2024-06-01, not {value!r}") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment.isoformat()


@click.group(cls=SuggestingGroup)
def relevance():
    """Sample traced retrievals for judging, and score the judgments.

    The pair judged is always the query that was searched against the item it
    recalled, as recorded in the trace; never the raw message.

    \b
    Example (nightly):
      cleo-rules relevance sample --db memory/ --n 200 --since 2024-06-01 --out sample.jsonl
      # judges set "relevant": true or false on every line, or a command does:
      cleo-rules relevance judge --sample sample.jsonl --command "python judge.py" --out judged.jsonl
      cleo-rules relevance score --db memory/ --judgments judged.jsonl
    """


@relevance.command("sample")
@db_option
@click.option("--n", "n", required=True, type=click.IntRange(1), help="How many pairs to draw.")
@click.option("--since", default=None, help="Only turns at or after this ISO date or time.")
@click.option("--seed", default=0, show_default=True, type=int, help="Random seed; same seed, same sample.")
@click.option("--out", "-o", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="JSONL file to write ('-' for stdout).")
def relevance_sample(db, n, since, seed, out):
    """Draw a reproducible sample of (searched query, recalled item) pairs.

    Each line has pair, kind, rule, pack, query, source, id, item, score,
    title, date, text and "relevant": null for the judge to fill in.

    \b
    Example:
      cleo-rules relevance sample --db memory/ --n 200 --since 2024-06-01 --out sample.jsonl
    """
    from ..relevance import sample_pairs

    with open_store(db, read_only=True) as store:
        pairs = sample_pairs(store, n, since=_since(since), seed=seed)
    text = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)
    if out == "-":
        click.echo(text, nl=False)
    else:
        try:
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write --out {out}: {exc.strerror or exc}") from None
    click.echo(f"{len(pairs)} pairs sampled" + ("" if out == "-" else f" to {out}"), err=True)


@relevance.command("score")
@db_option
@click.option("--judgments", required=True, type=click.Path(dir_okay=False), help="Judged JSONL file.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON: by_kind, by_rule, by_part.")
def relevance_score(db, judgments, as_json):
    """Print the irrelevant share of judged pairs, for snippets and passages: by kind, by rule and by query part.

    A pair counts under the rule that decided its turn and under the rule that
    found its referent, and under each part of its query (anchor, topic,
    referent, message, reply). Rules come most irrelevant pairs first; the
    three worst pairs of each rule and part follow (judged irrelevant, the
    highest retrieval score first).

    \b
    Example:
      cleo-rules relevance score --db memory/ --judgments sample.jsonl
    """
    from ..relevance import score_judgments

    with open_store(db, read_only=True) as store:
        report = score_judgments(store, judgments)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.format())


def _write_jsonl(out: str, rows: list[dict], what: str) -> None:
    text = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in rows)
    if out == "-":
        click.echo(text, nl=False)
        return
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {what} {out}: {exc.strerror or exc}") from None


@relevance.command("judge")
@click.option("--sample", "sample", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="The JSONL file 'relevance sample' wrote ('-' for stdin).")
@click.option("--command", "command", required=True, metavar="CMD",
              help="The judge's command line, run once without a shell (split as a POSIX shell would).")
@click.option("--out", "-o", type=click.Path(dir_okay=False, allow_dash=True), default="-", show_default=True,
              help="Where the judged pairs go ('-' for stdout): the sample's lines with \"relevant\" set.")
@click.option("--unjudged", type=click.Path(dir_okay=False), default=None,
              help="Also write the pairs left unjudged here, with \"relevant\": null and \"judge_error\".")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Seconds the judge has to answer each pair.")
def relevance_judge(sample, command, out, unjudged, timeout):
    """Have a command judge each sampled pair, for 'relevance score'.

    CMD gets one JSON line per pair on its stdin ({"pair", "query", "source",
    "id", "item", "title", "date", "text"}) and answers each with one line on
    its stdout, {"relevant": true} or {"relevant": false}, flushed before the
    next pair comes. Its stderr is passed through. A pair whose answer is not
    such a line, is over 4096 bytes, is late or never comes (the command
    exited) stays unjudged: it is named on stderr with what was wrong and is
    counted neither way; the command is started again for the next pair, and
    after three such failures in a row the rest are not sent. Pairs the
    sample already judged are kept. Exits 1 when a pair was left unjudged.

    \b
    Example:
      cleo-rules relevance judge --sample sample.jsonl --command "python judge.py" --out judged.jsonl
    """
    from ..relevance_judge import judge_pairs, read_sample

    pairs = read_sample(sys.stdin.buffer if sample == "-" else sample)

    def report(problem):
        click.echo(f"pair {problem.pair}: {problem.reason}", err=True)

    run = judge_pairs(pairs, command, timeout=timeout, on_problem=report)
    _write_jsonl(out, run.judged, "--out")
    if unjudged is not None:
        _write_jsonl(unjudged, run.unjudged, "--unjudged")
    click.echo(run.summary() + ("" if out == "-" else f", judged written to {out}"), err=True)
    if run.unjudged:
        sys.exit(1)
