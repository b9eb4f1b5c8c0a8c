"""Traces: one row per turn, kept beside the memory the turn searched.

A trace records what actually happened on a turn, so that the nightly
relevance check (:mod:`cleo_rules.relevance`) scores the pair that really
existed: the query that was searched, not the raw message.

This module is the row and the protocol of where rows go, a
:class:`TraceSink`: something that writes a row and reads rows back. Every
memory has one as its ``traces`` (:attr:`Memory.traces
<cleo_rules.retrieval.memory.Memory.traces>`); both backends keep the rows
in a table ``traces`` beside the memory (:mod:`cleo_rules.retrieval.trace_sinks`:
the embedded store's in its SQLite database, created on the first write, a
PostgreSQL tenant's in its schema). :class:`Tracer` and :func:`read_traces`
take a sink, or a memory, whose sink they use.

A row's columns (:data:`COLUMNS`)::

    id            integer primary key
    time          ISO 8601 UTC time the turn started, e.g. 2024-06-01T09:30:00.123456+00:00
    message       the user's message as typed
    kind, rule    the classifier's decision
    pack, pack_version, pack_hash
    pack_bases    JSON list of {"name", "version", "hash"}: the packs the pack is built on
                  (``extends:``), in the order they apply; NULL for a pack that extends nothing
                  (and in rows an earlier version wrote: read back as [])
    query         the query searched; NULL when no search was made
    anchor        the earlier message combined into the query, if any
    parts         JSON list of the query's parts, in template order: {"name" (anchor,
                  referent, message), "text", "source" (message, user, assistant),
                  "turn", "index", "span", "rule"}: where each came from
    k             how many results were asked for
    results       JSON list of {"source", "id", "item", "score"}, best first
    n_results     len(results)
    classify_s, embed_s, search_s, metadata_s, context_s   stage timings in seconds
    note          the decision's note (e.g. a rule that timed out), if any

Writing a trace never fails a turn: any error is logged as a warning on the
``cleo_rules`` logger and :meth:`Tracer.record` returns ``None``. A disabled
tracer writes nothing and creates no table.

What a trace keeps of the user's text is bounded and can be withheld
(:class:`TraceSettings`, given to :class:`~cleo_rules.turn.Recall` as
``trace={"redact": True}`` or ``trace={"max_chars": 500}``):

* ``max_chars`` (default :data:`DEFAULT_MAX_CHARS`): the message, the query,
  the anchor and each part's text are each cut to at most this many characters (the last one
  an ellipsis), and ``note`` says so; a 10 MB message costs the database a
  few kilobytes, not 40 MB;
* ``redact``: the message, the query, the anchor and each part's text are
  stored as ``"[redacted]"`` (the query stays NULL when no search was made);
  kinds, rules, pack, where each part came from, result ids, scores and
  timings are kept. Redacted traces
  cannot be judged by :mod:`cleo_rules.relevance`, which shows the query.

Lone surrogates (text that is not Unicode) and NUL characters (U+0000,
which no PostgreSQL text can hold) are stored as U+FFFD, on both backends,
so a turn whose message holds one still gets its trace.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol, runtime_checkable

from .jsonl import without_lone_surrogates

log = logging.getLogger("cleo_rules")

TABLE = "traces"

COLUMNS = {
    "id": int,
    "time": str,
    "message": str,
    "kind": str,
    "rule": str,
    "pack": str,
    "pack_version": str,
    "pack_hash": str,
    "pack_bases": str,
    "query": str,
    "anchor": str,
    "parts": str,
    "k": int,
    "results": str,
    "n_results": int,
    "classify_s": float,
    "embed_s": float,
    "search_s": float,
    "metadata_s": float,
    "context_s": float,
    "note": str,
}

TIMING_COLUMNS = ("classify", "embed", "search", "metadata", "context")

DEFAULT_MAX_CHARS = 2_000
"""Characters of the message, the query and the anchor a trace keeps, each."""

REDACTED = "[redacted]"


@dataclass(frozen=True)
class TraceSettings:
    """How turns are traced: ``enabled``, ``redact`` the user's text, keep at most ``max_chars`` of it."""

    enabled: bool = True
    redact: bool = False
    max_chars: int = DEFAULT_MAX_CHARS

    def __post_init__(self):
        if not isinstance(self.max_chars, int) or isinstance(self.max_chars, bool) or self.max_chars < 1:
            raise ValueError(f"trace max_chars must be a positive number of characters, not {self.max_chars!r}")

    @classmethod
    def of(cls, value) -> "TraceSettings":
        """Settings from ``True``/``False``, a mapping such as ``{"redact": True}``, or settings."""
        if isinstance(value, TraceSettings):
            return value
        if isinstance(value, bool) or value is None:
            return cls(enabled=bool(value))
        if isinstance(value, Mapping):
            unknown = set(value) - {"enabled", "redact", "max_chars"}
            if unknown:
                raise ValueError(f"unknown trace setting(s) {', '.join(sorted(map(str, unknown)))}; "
                                 "known: enabled, redact, max_chars")
            return cls(**{str(k): v for k, v in value.items()})
        raise TypeError(f"trace must be True, False or a mapping of settings, not {type(value).__name__}")


def now_iso() -> str:
    """The current UTC time as ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def result_refs(results: Sequence) -> list[dict]:
    """The part of each result a trace keeps: source, ids and score."""
    return [
        {"source": r.source, "id": r.id, "item": r.item, "score": round(float(r.score), 6)}
        for r in results
    ]


@runtime_checkable
class TraceSink(Protocol):
    """Where a memory keeps its turn traces.

    ``write(row)`` stores one row (the columns above, ``id`` left out) and
    returns its id; ``read(since=..., searched_only=...)`` yields the rows
    oldest first with ``results`` decoded from JSON (see :func:`read_traces`).
    A failed read raises :class:`~cleo_rules.errors.StoreError`.
    """

    def write(self, row: dict) -> int: ...

    def read(self, *, since: str | None = None, searched_only: bool = False) -> Iterator[dict]: ...


def as_sink(target) -> TraceSink | None:
    """Where ``target`` keeps its traces: a :class:`TraceSink` is its own; a memory's is its ``traces``.

    ``None`` is ``None`` (nowhere). Anything else is a ``TypeError``.
    """
    if target is None or isinstance(target, TraceSink):
        return target
    sink = getattr(target, "traces", None)  # a memory (the Memory protocol's ``traces``)
    if isinstance(sink, TraceSink):
        return sink
    hint = ""
    if hasattr(target, "conn") and hasattr(target, "table_names"):  # a sqlite_utils.Database, as taken before
        hint = ("; give the memory store that holds this database, or its sink "
                "cleo_rules.retrieval.trace_sinks.SqliteTraces(db)")
    raise TypeError(f"traces are kept by a memory or a trace sink, not {type(target).__name__}{hint}")


class Tracer:
    """Writes one row per turn into ``sink``: a :class:`TraceSink`, or a memory (its ``traces``).

    ``enabled=False`` makes :meth:`record` a no-op. ``redact`` and
    ``max_chars`` bound what is kept of the user's text (see the module's
    notes). In SQLite the table is created on the first write, not before,
    so a store that never traces has no table.
    """

    def __init__(self, sink, *, enabled: bool = True, redact: bool = False, max_chars: int = DEFAULT_MAX_CHARS):
        self.settings = TraceSettings(enabled=bool(enabled), redact=bool(redact), max_chars=max_chars)
        self.sink = as_sink(sink)
        self.enabled = self.settings.enabled and self.sink is not None
        self.failures = 0  # writes that failed and were logged

    @classmethod
    def from_settings(cls, sink, settings) -> "Tracer":
        """A tracer for ``settings``: anything :meth:`TraceSettings.of` takes."""
        s = TraceSettings.of(settings)
        return cls(sink, enabled=s.enabled, redact=s.redact, max_chars=s.max_chars)

    def _text(self, value: str | None, cut: list[str], name: str) -> str | None:
        if value is None:
            return None
        if self.settings.redact:
            return REDACTED
        value = without_lone_surrogates(value).replace("\x00", "\ufffd")
        limit = self.settings.max_chars
        if len(value) > limit:
            cut.append(name)
            return value[: limit - 1] + "\u2026"
        return value

    def row(self, *, time: str, decision, results: Sequence, timings: Mapping[str, float], k: int,
            bases: Sequence = ()) -> dict:
        """The row that :meth:`record` would write (no database access). ``bases`` are the packs the pack that
        made ``decision`` is built on (:attr:`Composition.bases <cleo_rules.pack.model.Composition.bases>`)."""
        cut: list[str] = []
        row = {
            "time": time,
            "message": self._text(decision.message, cut, "message"),
            "kind": decision.kind,
            "rule": decision.rule,
            "pack": decision.pack,
            "pack_version": decision.pack_version,
            "pack_hash": decision.pack_hash,
            "pack_bases": json.dumps([b.record() for b in bases], ensure_ascii=False) if bases else None,
            "query": self._text(decision.query, cut, "query"),
            "anchor": self._text(decision.anchor, cut, "anchor"),
            "parts": json.dumps([dict(p.to_dict(), text=self._text(p.text, cut, f"{p.name} part"))
                                 for p in getattr(decision, "parts", ())], ensure_ascii=False),
            "k": int(k),
            "results": json.dumps(result_refs(results), ensure_ascii=False),
            "n_results": len(results),
            "note": decision.note,
        }
        if cut:
            what = f"{', '.join(cut)} cut to {self.settings.max_chars} characters in this trace"
            row["note"] = f"{row['note']}; {what}" if row["note"] else what
        for stage in TIMING_COLUMNS:
            value = timings.get(stage)
            row[f"{stage}_s"] = None if value is None else float(value)
        for name, value in row.items():  # the note, the rule: not the user's text, but no NUL reaches a database
            if isinstance(value, str) and "\x00" in value:
                row[name] = value.replace("\x00", "\ufffd")
        return row

    def record(self, *, time: str, decision, results: Sequence, timings: Mapping[str, float], k: int,
               bases: Sequence = ()) -> int | None:
        """Insert the trace of one turn; return its id, or ``None`` if disabled or failed."""
        if not self.enabled:
            return None
        assert self.sink is not None
        try:
            row = self.row(time=time, decision=decision, results=results, timings=timings, k=k, bases=bases)
            return self.sink.write(row)
        except Exception as exc:  # a trace must never fail the turn
            self.failures += 1
            log.warning("could not write the turn trace: %s: %s", type(exc).__name__, exc)
            return None


def read_traces(source, *, since: str | None = None, searched_only: bool = False) -> Iterator[dict]:
    """Yield trace rows oldest first, with ``results`` and ``pack_bases`` decoded from JSON.

    ``source`` is a memory or a :class:`TraceSink`.
    ``since`` is an ISO date or time (``2024-06-01`` or a full timestamp);
    rows whose ``time`` sorts at or after it are kept.
    """
    sink = as_sink(source)
    if sink is not None:
        yield from sink.read(since=since, searched_only=searched_only)

