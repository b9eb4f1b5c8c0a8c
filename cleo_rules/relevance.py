"""The nightly relevance check over traced turns.

Two steps, with a person (or any judge) in between:

1. :func:`sample_pairs` draws a reproducible sample of *(searched query,
   recalled item)* pairs from the traces. A pair is always the query that was
   actually searched, as recorded in the trace, against one recalled snippet
   or passage, whose current text the memory gives
   (:meth:`~cleo_rules.retrieval.memory.Memory.get`). The traces come from
   the memory's trace sink (:attr:`~cleo_rules.retrieval.memory.Memory.traces`),
   whichever backend keeps them. The raw message is
   deliberately left out of the sample, so a judge cannot score the wrong
   pair.
2. :func:`score_judgments` reads the judged file (each line the sampled pair
   with ``"relevant": true`` or ``false``) and reports the irrelevant share
   for snippets and for passages, overall and by kind, with counts. Each
   pair's kind and source are taken from the trace in the database, not from
   the judgments file.

The sample is a function of the traces present, ``n``, ``since`` and
``seed``: the same database and arguments give the same pairs in the same
order.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .jsonl import JsonLineError, read_lines
from .kinds import DecisionKind
from .retrieval.memory import Memory
from .retrieval.tables import TABLES, Source
from .trace import read_traces

#: the kinds of turn that search, in the order the report shows them (a skipped turn recalls nothing)
SEARCHED_KINDS = (DecisionKind.SUBSTANTIVE, DecisionKind.FOLLOW_UP, DecisionKind.CORRECTION)


def pair_id(trace_id: int, rank: int) -> str:
    """The id of the ``rank``-th (1-based) result of trace ``trace_id``: ``"<trace>:<rank>"``."""
    return f"{trace_id}:{rank}"


def traced_pairs(traces, *, since: str | None = None) -> list[dict]:
    """Every (searched query, recalled item) pair in the traces, oldest first.

    ``traces`` is a memory or its trace sink (see :func:`~cleo_rules.trace.read_traces`).
    """
    pairs = []
    for row in read_traces(traces, since=since, searched_only=True):
        for rank, ref in enumerate(row["results"], 1):
            pairs.append({
                "pair": pair_id(row["id"], rank),
                "trace_id": row["id"],
                "rank": rank,
                "time": row["time"],
                "kind": row["kind"],
                "rule": row["rule"],
                "pack": row["pack"],
                "pack_version": row["pack_version"],
                "query": row["query"],
                "source": ref["source"],
                "id": ref["id"],
                "item": ref["item"],
                "score": ref["score"],
            })
    return pairs


def sample_pairs(memory: Memory, n: int, *, since: str | None = None, seed: int = 0) -> list[dict]:
    """Draw up to ``n`` traced pairs, reproducibly, for judging.

    ``memory`` is the memory store the turns were traced in. Each pair
    carries the item's current ``title``, ``date`` and ``text`` (``null`` if
    it has been deleted since), all fetched at once, and ``"relevant": null``
    for the judge to fill in.
    """
    if n < 1:
        raise UsageError(f"--n must be at least 1, not {n}")
    pairs = traced_pairs(memory, since=since)
    rng = random.Random(seed)
    chosen = rng.sample(pairs, min(n, len(pairs)))
    chosen.sort(key=lambda p: (p["trace_id"], p["rank"]))
    items = memory.get(p["item"] for p in chosen)
    for p in chosen:
        item = items.get(p["item"])
        if item is not None and item.source == p["source"]:
            p["title"], p["date"], p["text"] = item.title, item.date, item.text
        else:
            p["title"], p["date"], p["text"] = None, None, None
        p["relevant"] = None
    return chosen


@dataclass
class Share:
    """Judged pairs in one cell of the report, and how many were irrelevant."""

    judged: int = 0
    irrelevant: int = 0

    @property
    def share(self) -> float | None:
        return self.irrelevant / self.judged if self.judged else None

    def format(self) -> str:
        if not self.judged:
            return "-"
        return f"{100 * self.irrelevant / self.judged:.1f}% ({self.irrelevant}/{self.judged})"


@dataclass
class RelevanceReport:
    """Irrelevant share by kind (rows, plus ``all``) and source (snippets, passages)."""

    cells: dict = field(default_factory=dict)  # (kind, source) -> Share

    def cell(self, kind: str, source: str) -> Share:
        return self.cells.setdefault((kind, source), Share())

    def add(self, kind: str, source: str, relevant: bool) -> None:
        for k in ("all", kind):
            cell = self.cell(k, source)
            cell.judged += 1
            cell.irrelevant += 0 if relevant else 1

    def rows(self) -> list[str]:
        extra = sorted({k for k, _ in self.cells} - set(SEARCHED_KINDS) - {"all"})
        return ["all", *SEARCHED_KINDS, *extra]

    def to_dict(self) -> dict:
        return {
            kind: {
                table.pieces: {"judged": c.judged, "irrelevant": c.irrelevant, "share": c.share}
                for source, table in TABLES.items()
                for c in [self.cell(kind, source.value)]
            }
            for kind in self.rows()
        }

    def format(self) -> str:
        """A plain-text table: one row per kind, snippets and passages as columns."""
        head = ("kind", "snippets irrelevant", "passages irrelevant")
        body = [(kind, *(self.cell(kind, source.value).format() for source in Source)) for kind in self.rows()]
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(3)]
        lines = ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
                 for r in [head, *body]]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(line.rstrip() for line in lines)


def _judgment(row, where: str) -> dict:
    """One judgment checked: ``{"pair": str, "relevant": bool}``; ``where`` prefixes the error."""
    if not isinstance(row, dict) or "pair" not in row:
        raise UsageError(f"{where}each line needs a \"pair\" id as written by 'relevance sample'")
    pair = row["pair"]
    if not isinstance(pair, str) or not pair:
        raise UsageError(f"{where}\"pair\" must be the id string 'relevance sample' wrote (such as \"12:1\"), "
                         f"not {json.dumps(pair)[:60]}")
    if not isinstance(row.get("relevant"), bool):
        raise UsageError(f"{where}pair {pair}: \"relevant\" must be true or false, "
                         f"not {json.dumps(row.get('relevant'))[:60]}")
    return {"pair": pair, "relevant": row["relevant"]}


def read_judgments(path: str | Path) -> list[dict]:
    """Read a judgments JSONL file; every line needs a ``pair`` id string and a boolean ``relevant``.

    Lines are read by :func:`cleo_rules.jsonl.read_lines` (UTF-8, bounded
    nesting, a byte order mark dropped). Any bad line, a pair judged twice,
    or a file with no judgments at all is a :class:`~cleo_rules.errors.UsageError`
    that names the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"judgments file not found: {path}")
    rows, seen = [], set()
    try:
        with path.open("rb") as fh:
            for lineno, value in read_lines(fh):
                if isinstance(value, JsonLineError):
                    raise UsageError(f"{path}:{lineno}: {value}", code=value.code)
                row = _judgment(value, f"{path}:{lineno}: ")
                if row["pair"] in seen:
                    raise UsageError(f"{path}:{lineno}: pair {row['pair']} is judged twice")
                seen.add(row["pair"])
                rows.append({**row, "line": lineno})
    except OSError as exc:
        raise UsageError(f"cannot read judgments file {path}: {exc.strerror or exc}") from None
    if not rows:
        raise UsageError(f"no judgments in {path}: it has no lines; judge the lines 'relevance sample' wrote")
    return rows


def score_judgments(traces, judgments: str | Path | Iterable[dict]) -> RelevanceReport:
    """Score judged pairs against the traces of a memory (or its trace sink, or a SQLite database).

    ``judgments`` is a path to a JSONL file or an iterable of
    ``{"pair", "relevant"}`` dicts. A pair that is not in the traces is an
    error: it would mean the file was sampled from a different database.
    Malformed judgments, and no judgments at all, raise
    :class:`~cleo_rules.errors.UsageError`.
    """
    if isinstance(judgments, (str, Path)):
        rows = read_judgments(judgments)
    else:
        rows = [{**_judgment(row, f"judgment {n}: "), **({"line": row["line"]} if "line" in row else {})}
                for n, row in enumerate(judgments, 1)]
        if not rows:
            raise UsageError("no judgments to score")
    known = {p["pair"]: p for p in traced_pairs(traces)}
    report = RelevanceReport()
    for row in rows:
        pair = known.get(row["pair"])
        if pair is None:
            where = f"line {row['line']}: " if "line" in row else ""
            raise UsageError(f"{where}pair {row['pair']} is not in the traces of this database")
        report.add(pair["kind"], pair["source"], bool(row["relevant"]))
    return report
