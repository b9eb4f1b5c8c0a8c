"""Ingesting JSON Lines: reading, checking and batching lines, and the report.

:func:`ingest_lines` reads numbered lines, turns each well-formed one into a
:class:`~cleo_rules.retrieval.records.PreparedItem`, and hands them to the
store's writer a batch at a time; it returns an :class:`IngestReport`. What
a line may hold is :func:`~cleo_rules.retrieval.records.validate_record`'s
business; how a batch is written is the store's
(:meth:`MemoryStore.ingest_jsonl <cleo_rules.retrieval.store.MemoryStore.ingest_jsonl>`
wires the two together).
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..errors import IngestError, Problem, StoreError
from ..jsonl import JsonLineError
from ..jsonl import parse_line as parse_json_line
from .records import PreparedItem, validate_record

Line = tuple[int, str | bytes]
"""``(line number, raw line)``; numbers start at 1."""


@dataclass
class IngestReport:
    """What :meth:`MemoryStore.ingest_jsonl <cleo_rules.retrieval.store.MemoryStore.ingest_jsonl>` did.

    ``added``, ``updated`` and ``unchanged`` count stored items (re-ingesting
    an id with the same content leaves it as it is); ``skipped`` counts
    malformed lines, each described in ``problems`` with its line number.
    ``timings`` splits ``seconds`` into ``parse``, ``embed``, ``sql``,
    ``index`` and ``save``, plus ``model_load`` when the model was loaded.
    """

    source: str = "<lines>"
    lines: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    problems: tuple[Problem, ...] = ()
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.summary()

    @property
    def items(self) -> int:
        """Well-formed items read (added + updated + unchanged)."""
        return self.added + self.updated + self.unchanged

    def count(self, status: str) -> None:
        """Count one item as ``"added"``, ``"updated"`` or ``"unchanged"``."""
        if status not in ("added", "updated", "unchanged"):
            raise ValueError(f"unknown ingest status {status!r}")
        setattr(self, status, getattr(self, status) + 1)

    def summary(self) -> str:
        text = (
            f"{self.source}: {self.added} added, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.skipped} skipped"
        )
        if self.skipped:
            lines = sorted({p.line for p in self.problems})
            shown = ", ".join(str(n) for n in lines[:10]) + (", ..." if len(lines) > 10 else "")
            text += f" (line{'s' if len(lines) > 1 else ''} {shown})"
        return text

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "lines": self.lines,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "problems": [p.to_dict() for p in self.problems],
            "seconds": self.seconds,
            "timings": dict(self.timings),
        }


# -- reading lines -------------------------------------------------------------


def open_lines(path_or_lines) -> tuple[Iterator[Line], str, IO[bytes] | None]:
    """``(numbered lines, display name, file to close or None)`` for a path, bytes or lines."""
    if isinstance(path_or_lines, (str, os.PathLike)):
        path = Path(path_or_lines)
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise IngestError(f"cannot read {path}: {exc.strerror or exc}") from None
        return enumerate(fh, start=1), str(path), fh
    if isinstance(path_or_lines, (bytes, bytearray)):
        path_or_lines = io.BytesIO(path_or_lines)
    return enumerate(path_or_lines, start=1), "<lines>", None


def parse_record(raw, number: int, source: str) -> tuple[dict | None, list[Problem]]:
    """``(valid record or None, problems)`` for one input line; a blank line gives ``(None, [])``.

    The line is read by :func:`cleo_rules.jsonl.parse_record` (UTF-8, one JSON
    value, bounded nesting, no lone surrogates, a byte order mark dropped on
    line 1), then checked by :func:`~cleo_rules.retrieval.records.validate_record`.
    """
    try:
        obj = parse_json_line(raw, line=number)
    except JsonLineError as exc:
        return None, [Problem(exc.code, str(exc), source, number, exc.col, pointer=exc.pointer)]
    if obj is None:
        return None, []
    found = validate_record(obj)
    if found:
        return None, [Problem(code, message, source, number, 1, pointer=pointer) for code, pointer, message in found]
    return obj, []


def problem_message(source: str, problems) -> str:
    """The message of the :class:`~cleo_rules.errors.IngestError` raised in strict mode."""
    lines = sorted({p.line for p in problems})
    head = f"{len(lines)} malformed line{'s' if len(lines) != 1 else ''} in {source}; nothing was ingested"
    return "\n".join([head] + [p.format() for p in problems])


# -- batching ----------------------------------------------------------------


def _prepared(lines: Iterable[Line], prepare: Callable[[dict], PreparedItem], report: IngestReport,
              problems: list[Problem], timings: dict) -> Iterator[tuple[int, PreparedItem | None]]:
    """``(line number, item or None)`` for every line; malformed lines go to ``problems``."""
    for number, raw in lines:
        t = time.perf_counter()
        record, found = parse_record(raw, number, report.source)
        item = prepare(record) if record is not None else None
        timings["parse"] += time.perf_counter() - t
        report.lines = number
        if found:
            problems.extend(found)
            report.skipped += 1
        yield number, item


class _Batches:
    """Items gathered into batches, each written as soon as it is full.

    A batch never holds the same item twice: a second version of an id
    first writes the batch holding the first, so the last version wins.
    """

    def __init__(self, write, checkpoint, progress, size: int, report: IngestReport, timings: dict):
        self.write = write
        self.checkpoint = checkpoint
        self.progress = progress
        self.size = size
        self.report = report
        self.timings = timings
        self.items: list[PreparedItem] = []
        self.keys: set = set()
        self.line = 0  # the last line read
        self.reported = 0  # lines already passed to progress
        self.first = 0  # the line of the batch's first item

    def add(self, item: PreparedItem) -> None:
        if item.key in self.keys:
            self.flush()
        if not self.items:
            self.first = self.line
        self.items.append(item)
        self.keys.add(item.key)
        if len(self.items) >= self.size:
            self.flush()

    def flush(self) -> None:
        if self.items:
            try:
                statuses = self.write(self.items, self.timings)
            except StoreError as exc:
                # say where the input stands: everything before this batch is stored, nothing from it on
                done = (f"lines 1-{self.first - 1} of {self.report.source} are stored"
                        if self.first > 1 else f"nothing from {self.report.source} was stored")
                raise StoreError(f"{exc} ({done}; the batch from line {self.first} on was not)",
                                 code=exc.code, stored_lines=self.first - 1) from exc
            for status in statuses:
                self.report.count(status)
            self.items, self.keys = [], set()
        if self.progress is not None and self.line > self.reported:
            self.progress(self.line - self.reported)
            self.reported = self.line
        self.checkpoint(self.timings)


def ingest_lines(
    lines: Iterable[Line],
    source: str,
    *,
    prepare: Callable[[dict], PreparedItem],
    write: Callable[[list[PreparedItem], dict], list[str]],
    checkpoint: Callable[[dict], None],
    strict: bool = False,
    progress: Callable[[int], object] | None = None,
    batch_size: int = 32,
) -> IngestReport:
    """Read numbered ``lines`` and write their items ``batch_size`` at a time.

    ``prepare`` turns a valid record into an item; ``write(items, timings)``
    stores a batch (ids unique within it) and returns each item's status;
    ``checkpoint(timings)`` runs after every batch (the store saves its
    indexes there when due). With ``strict``, every line is read first and
    any malformed one raises :class:`~cleo_rules.errors.IngestError` before
    anything is written. ``seconds`` and the final save are the caller's.
    """
    report = IngestReport(source=source)
    timings = {"parse": 0.0, "embed": 0.0, "sql": 0.0, "index": 0.0, "save": 0.0}
    problems: list[Problem] = []
    stream: Iterable[tuple[int, PreparedItem | None]] = _prepared(lines, prepare, report, problems, timings)
    if strict:
        stream = list(stream)
        if problems:
            raise IngestError(problem_message(source, problems), problems)
    batches = _Batches(write, checkpoint, progress, batch_size, report, timings)
    for number, item in stream:
        batches.line = number
        if item is not None:
            batches.add(item)
    batches.flush()
    report.problems = tuple(problems)
    report.timings = timings
    return report
