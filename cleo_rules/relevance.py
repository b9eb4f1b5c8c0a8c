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
   for snippets and for passages, overall and by kind, by rule and by query
   part, with counts, and for each rule and part its worst pairs (see
   :class:`PairGroup`). Each pair's kind, rule, parts, source and score are
   taken from the trace in the database, not from the judgments file.

The judge may be a person editing the file or a command
(:mod:`cleo_rules.relevance_judge`, ``cleo-rules relevance judge``).

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
from .shaping import QUERY_PARTS
from .trace import read_traces

#: the kinds of turn that search, in the order the report shows them (a skipped turn recalls nothing)
SEARCHED_KINDS = (DecisionKind.SUBSTANTIVE, DecisionKind.FOLLOW_UP, DecisionKind.CORRECTION)


def pair_id(trace_id: int, rank: int) -> str:
    """The id of the ``rank``-th (1-based) result of trace ``trace_id``: ``"<trace>:<rank>"``."""
    return f"{trace_id}:{rank}"


def query_parts(row: dict) -> list[dict] | None:
    """The query parts a trace row recorded, each ``{"name", "source", "rule"}`` (no text); ``None`` when the
    row has none (a trace written before parts were kept, or a column that cannot be read)."""
    parts = row.get("parts")
    if isinstance(parts, (str, bytes)):
        try:
            parts = json.loads(parts)
        except ValueError:
            return None
    if not isinstance(parts, list) or not parts:
        return None
    return [{"name": str(p.get("name")), "source": p.get("source"), "rule": p.get("rule")}
            for p in parts if isinstance(p, dict)] or None


def traced_pairs(traces, *, since: str | None = None, parts: bool = False) -> list[dict]:
    """Every (searched query, recalled item) pair in the traces, oldest first.

    ``traces`` is a memory or its trace sink (see :func:`~cleo_rules.trace.read_traces`).
    With ``parts``, each pair also has ``"parts"``: :func:`query_parts` of its trace.
    """
    pairs = []
    for row in read_traces(traces, since=since, searched_only=True):
        recorded = query_parts(row) if parts else None
        for rank, ref in enumerate(row["results"], 1):
            pairs.append({**({"parts": recorded} if parts else {}),
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


#: how many of a rule's or a part's irrelevant pairs the report shows
WORST = 3
#: the rule row of a turn no rule decided (substantive by default)
NO_RULE_LABEL = "(no rule)"
#: the part row of a pair whose trace recorded no parts (written before parts were kept)
NOT_RECORDED = "(not recorded)"


def _worst_key(pair: dict):
    """Worst first: the highest retrieval score (retrieval was surest, and wrong), then the oldest pair."""
    return (-float(pair["score"] or 0), pair["trace_id"], pair["rank"])


@dataclass
class PairGroup:
    """The judged pairs of one rule or one query part.

    ``shares`` holds a :class:`Share` per source (``conversation``,
    ``document``); ``worst`` the :data:`WORST` worst pairs judged irrelevant:
    those retrieval ranked with the highest score, so the ones it was surest
    of, oldest first on a tie.
    """

    shares: dict = field(default_factory=dict)  # source -> Share
    worst: list = field(default_factory=list)

    def share(self, source: str) -> Share:
        return self.shares.setdefault(source, Share())

    @property
    def total(self) -> Share:
        return Share(sum(s.judged for s in self.shares.values()), sum(s.irrelevant for s in self.shares.values()))

    def add(self, pair: dict, relevant: bool) -> None:
        cell = self.share(pair["source"])
        cell.judged += 1
        if not relevant:
            cell.irrelevant += 1
            self.worst.append(pair)
            self.worst.sort(key=_worst_key)
            del self.worst[WORST:]

    def to_dict(self) -> dict:
        total = self.total
        return {
            "judged": total.judged, "irrelevant": total.irrelevant, "share": total.share,
            **{table.pieces: _share_dict(self.share(source.value)) for source, table in TABLES.items()},
            "worst": [{k: p[k] for k in ("pair", "kind", "rule", "source", "item", "score", "query")}
                      for p in self.worst],
        }


def _share_dict(cell: Share) -> dict:
    return {"judged": cell.judged, "irrelevant": cell.irrelevant, "share": cell.share}


def _rules_of(pair: dict) -> list[str]:
    """The rules a pair counts under: the one that decided its turn, and each that found a part of its query."""
    rules = [pair["rule"] or NO_RULE_LABEL]
    for part in pair.get("parts") or ():
        if part.get("rule") and part["rule"] not in rules:
            rules.append(str(part["rule"]))
    return rules


def _parts_of(pair: dict) -> list[str]:
    """The query parts a pair counts under: each part its query had, once."""
    names = list(dict.fromkeys(part["name"] for part in pair.get("parts") or ()))
    return names or [NOT_RECORDED]


@dataclass
class RelevanceReport:
    """Irrelevant share by kind (rows, plus ``all``) and source (snippets, passages), by rule and by query part.

    A pair counts under the rule that decided its turn and under each rule
    that found a part of its query (a referent rule), and under each part its
    query had (``anchor``, ``topic``, ``referent``, ``message``, ``reply``);
    so the rule and part rows overlap, and each says how the pairs that rule
    or part went into fared.
    """

    cells: dict = field(default_factory=dict)  # (kind, source) -> Share
    by_rule: dict = field(default_factory=dict)  # rule -> Group
    by_part: dict = field(default_factory=dict)  # part name -> Group

    def cell(self, kind: str, source: str) -> Share:
        return self.cells.setdefault((kind, source), Share())

    def add(self, kind: str, source: str, relevant: bool, pair: dict | None = None) -> None:
        """Count one judged pair; ``pair`` (a :func:`traced_pairs` pair with ``parts``) also counts it by rule
        and by part."""
        for k in ("all", kind):
            cell = self.cell(k, source)
            cell.judged += 1
            cell.irrelevant += 0 if relevant else 1
        if pair is not None:
            for rule in _rules_of(pair):
                self.by_rule.setdefault(rule, PairGroup()).add(pair, relevant)
            for name in _parts_of(pair):
                self.by_part.setdefault(name, PairGroup()).add(pair, relevant)

    def rows(self) -> list[str]:
        extra = sorted({k for k, _ in self.cells} - set(SEARCHED_KINDS) - {"all"})
        return ["all", *SEARCHED_KINDS, *extra]

    def rule_rows(self) -> list[str]:
        """Rules, the one with the most irrelevant pairs first (then the highest share, then by name)."""
        return sorted(self.by_rule, key=lambda r: (-self.by_rule[r].total.irrelevant,
                                                   -(self.by_rule[r].total.share or 0), r))

    def part_rows(self) -> list[str]:
        """Parts in the order a query template has them, then any other name, then :data:`NOT_RECORDED`."""
        known = [p for p in QUERY_PARTS if p in self.by_part]
        rest = sorted(set(self.by_part) - set(QUERY_PARTS) - {NOT_RECORDED})
        return known + rest + ([NOT_RECORDED] if NOT_RECORDED in self.by_part else [])

    def to_dict(self) -> dict:
        return {
            "by_kind": {kind: {table.pieces: _share_dict(self.cell(kind, source.value))
                               for source, table in TABLES.items()}
                        for kind in self.rows()},
            "by_rule": [{"rule": r, **self.by_rule[r].to_dict()} for r in self.rule_rows()],
            "by_part": [{"part": p, **self.by_part[p].to_dict()} for p in self.part_rows()],
        }

    def format(self) -> str:
        """Plain text: a table by kind, one by rule and one by query part (snippets and passages as columns),
        then the worst pairs of each rule and part."""
        kinds = [(kind, *(self.cell(kind, source.value).format() for source in Source)) for kind in self.rows()]
        rules = [(r, *(self.by_rule[r].share(source.value).format() for source in Source))
                 for r in self.rule_rows()]
        parts = [(p, *(self.by_part[p].share(source.value).format() for source in Source))
                 for p in self.part_rows()]
        blocks = [_table("kind", kinds), _table("rule", rules), _table("query part", parts)]
        for axis, groups, names in (("rule", self.by_rule, self.rule_rows()),
                                    ("query part", self.by_part, self.part_rows())):
            worst = [line for name in names if groups[name].worst
                     for line in [f"{name}:", *(_worst_line(p) for p in groups[name].worst)]]
            if worst:
                blocks.append("\n".join([f"worst irrelevant pairs by {axis} (highest retrieval score first)",
                                         *worst]))
        return "\n\n".join(blocks)


def _table(head: str, body: list[tuple]) -> str:
    """Rows under ``head``, ``snippets irrelevant`` and ``passages irrelevant``, aligned."""
    rows = [(head, "snippets irrelevant", "passages irrelevant"), *body]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _worst_line(pair: dict) -> str:
    """One worst pair on one line: id, score, source, item and the query (cut, quoted as JSON)."""
    query = pair["query"] or ""
    query = query if len(query) <= 80 else query[:79] + "\u2026"
    table = next((t for src, t in TABLES.items() if src.value == pair["source"]), None)
    piece = table.label if table is not None else str(pair["source"])
    return (f"  {pair['pair']}  score {float(pair['score'] or 0):.3f}  {piece} {pair['item']}  "
            f"query {json.dumps(query, ensure_ascii=False)}")


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
    known = {p["pair"]: p for p in traced_pairs(traces, parts=True)}
    report = RelevanceReport()
    for row in rows:
        pair = known.get(row["pair"])
        if pair is None:
            where = f"line {row['line']}: " if "line" in row else ""
            raise UsageError(f"{where}pair {row['pair']} is not in the traces of this database")
        report.add(pair["kind"], pair["source"], bool(row["relevant"]), pair)
    return report
