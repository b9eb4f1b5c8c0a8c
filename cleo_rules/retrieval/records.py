"""Ingest records: checked, normalised and cut into pieces before anything is stored.

A record is one conversation or one document as a JSON object (see
:func:`validate_record`). :func:`validate_record` lists what is wrong with
one; :func:`prepare` turns a valid one into a :class:`PreparedItem`, the
frozen value the store writes: the stripped fields, the pieces to embed
(snippets or passages, see :mod:`~cleo_rules.retrieval.chunk`) and a content
hash, so re-ingesting the same content is recognised and left alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date as _date
from datetime import datetime

from ..errors import Problem
from ..jsonl import lone_surrogate
from .chunk import DEFAULT_CHUNK_MAX_CHARS, chunk_text, conversation_snippets
from .tables import Source

RecordProblem = tuple[str, str, str]
"""``(code, JSON pointer, message)``: one thing wrong with a record."""

_SOURCES = {s.value: s for s in Source}


def date_problem(value) -> str | None:
    """An error message, or None when ``value`` is an ISO 8601 date or date-time."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    text = value.strip()
    if not text:
        return "must not be empty"
    try:
        if len(text) == 10:
            _date.fromisoformat(text)
        else:
            datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return f"must be an ISO 8601 date such as 2024-03-15, not {value!r}"
    return None


def _nonempty_string(value) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value.strip():
        return "must not be empty"
    return None


def _nul_problem(key: str, where: str, value: str) -> list[RecordProblem]:
    """A NUL character (U+0000): valid Unicode, but no PostgreSQL text holds one, so neither store takes it."""
    at = value.find("\x00")
    if at < 0:
        return []
    return [("E322", where, f"{key!r} at {where} holds a NUL character (U+0000 at character {at}), which the "
                            "memory does not store")]


def _string_problem(key: str, where: str, value) -> list[RecordProblem]:
    msg = _nonempty_string(value)
    if msg is None:
        at = lone_surrogate(value)
        if at is None:
            return _nul_problem(key, where, value)
        return [("E319", where, f"{key!r} at {where} holds a lone surrogate (U+{ord(value[at]):04X} at character "
                                f"{at}), which is not valid Unicode")]
    return [("E314" if "string" in msg else "E315", where, f"{key!r} {msg}")]


def validate_record(obj) -> list[RecordProblem]:
    """Check one ingest record; return ``(code, pointer, message)`` for each problem.

    A record is ``{"type": "conversation", "id", "title", "date", "messages":
    [{"role", "text"}, ...]}`` or ``{"type": "document", "id", "title",
    "date", "text"}``. Strings must not be empty nor hold a lone surrogate
    (such text is not Unicode) or a NUL character (which no PostgreSQL text
    holds: both stores refuse it, so a line means the same to either); dates
    are ISO 8601.
    """
    if not isinstance(obj, dict):
        return [("E312", "", f"a line must hold a JSON object, not {type(obj).__name__}")]
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in _SOURCES:
        if "type" not in obj:
            return [("E313", "/type", 'missing field "type" ("conversation" or "document")')]
        return [("E316", "/type", f'"type" must be "conversation" or "document", not {kind!r}')]
    problems: list[RecordProblem] = []
    required = ["id", "title", "date"] + (["messages"] if kind == Source.CONVERSATION else ["text"])
    for key in required:
        if key not in obj:
            problems.append(("E313", f"/{key}", f"missing field {key!r}"))
    for key in ("id", "title"):
        if key in obj:
            problems += _string_problem(key, f"/{key}", obj[key])
    if "date" in obj and isinstance(obj["date"], str) and (nul := _nul_problem("date", "/date", obj["date"])):
        problems += nul  # datetime.fromisoformat lets a trailing NUL through some forms
    elif "date" in obj and (msg := date_problem(obj["date"])):  # an ISO date is ASCII: no surrogate passes
        problems.append(("E317", "/date", f"'date' {msg}"))
    if kind == Source.DOCUMENT and "text" in obj:
        problems += _string_problem("text", "/text", obj["text"])
    if kind == Source.CONVERSATION and "messages" in obj:
        problems += _message_problems(obj["messages"])
    return problems


def _message_problems(messages) -> list[RecordProblem]:
    if not isinstance(messages, list):
        return [("E314", "/messages", f"'messages' must be a list, not {type(messages).__name__}")]
    if not messages:
        return [("E315", "/messages", "'messages' must not be empty")]
    problems: list[RecordProblem] = []
    for n, message in enumerate(messages):
        where = f"/messages/{n}"
        if not isinstance(message, dict):
            problems.append(("E314", where, f"a message must be an object, not {type(message).__name__}"))
            continue
        for key in ("role", "text"):
            if key not in message:
                problems.append(("E313", f"{where}/{key}", f"missing field {key!r}"))
            else:
                problems += _string_problem(key, f"{where}/{key}", message[key])
    return problems


def invalid_argument(record, problems: list[RecordProblem]) -> tuple[str, list[Problem]]:
    """The message and problems of the error for a malformed record passed as arguments."""
    described = [Problem(code, message, "<argument>", pointer=pointer) for code, pointer, message in problems]
    what = record.get("type", "item") if isinstance(record, dict) else "item"
    return f"invalid {what}: " + "; ".join(f"{p.pointer or '/'}: {p.message}" for p in described), described


@dataclass(frozen=True)
class Piece:
    """One snippet or passage to embed: its text and where it sits in its item.

    ``bounds`` are the first and last message a snippet covers (0-based,
    inclusive), or the ``[start, end)`` characters of a passage in its
    document's text: the source's :attr:`SourceTable.bounds
    <cleo_rules.retrieval.tables.SourceTable.bounds>` columns.
    """

    text: str
    bounds: tuple[int, int]


@dataclass(frozen=True)
class PreparedItem:
    """A valid record, normalised and cut into pieces, ready to be written.

    ``text`` is a document's text (``None`` for a conversation) and
    ``messages`` a conversation's ``(role, text)`` pairs (empty for a
    document); ``content_hash`` covers everything stored, chunking included.
    """

    source: Source
    id: str
    title: str
    date: str
    pieces: tuple[Piece, ...]
    content_hash: str
    text: str | None = None
    messages: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> tuple[Source, str]:
        return (self.source, self.id)


def content_hash(
    source: Source, title: str, date: str, *, messages=None, text: str | None = None,
    chunk_size: int, chunk_overlap: int, chunk_max_chars: int = DEFAULT_CHUNK_MAX_CHARS,
) -> str:
    """SHA-256 of what an item stores, and of how it is cut into pieces (not of its id).

    The default ``chunk_max_chars`` is left out of the hash, so items stored
    before that bound existed keep their hashes (their pieces are the same
    unless a run without white space was longer than the bound).
    """
    body: dict = {"type": source.value, "title": title, "date": date}
    if messages is not None:
        body["messages"] = [{"role": role, "text": said} for role, said in messages]
    if text is not None:
        body["text"] = text
    body["chunking"] = [chunk_size, chunk_overlap] + ([chunk_max_chars] if chunk_max_chars != DEFAULT_CHUNK_MAX_CHARS
                                                      else [])
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def prepare(record: dict, chunk_size: int, chunk_overlap: int,
            chunk_max_chars: int = DEFAULT_CHUNK_MAX_CHARS) -> PreparedItem:
    """Normalise a valid record (see :func:`validate_record`) and cut it into pieces.

    Ids, titles, dates, roles and message texts are stripped; a document's
    text is kept as given, so passage spans index into it.
    """
    source = _SOURCES[record["type"]]
    title, date = record["title"].strip(), record["date"].strip()
    if source is Source.CONVERSATION:
        messages = tuple((m["role"].strip(), m["text"].strip()) for m in record["messages"])
        snippets = conversation_snippets([{"role": r, "text": t} for r, t in messages], chunk_size, chunk_overlap,
                                         chunk_max_chars)
        pieces = tuple(Piece(s.text, (s.first_message, s.last_message)) for s in snippets)
        digest = content_hash(source, title, date, messages=messages, chunk_size=chunk_size,
                              chunk_overlap=chunk_overlap, chunk_max_chars=chunk_max_chars)
        return PreparedItem(source, record["id"].strip(), title, date, pieces, digest, messages=messages)
    text = record["text"]
    pieces = tuple(Piece(c.text, (c.start, c.end)) for c in chunk_text(text, chunk_size, chunk_overlap, chunk_max_chars))
    digest = content_hash(source, title, date, text=text, chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                          chunk_max_chars=chunk_max_chars)
    return PreparedItem(source, record["id"].strip(), title, date, pieces, digest, text=text)


def plan_writes(items, existing) -> tuple[list[str], list[PreparedItem]]:
    """Each item's status against the stored content hashes ``existing`` (by :attr:`PreparedItem.key`):
    ``"added"``, ``"updated"`` or ``"unchanged"``, and the items to write (the added and updated ones)."""
    statuses: list[str] = []
    todo: list[PreparedItem] = []
    for item in items:
        old = existing.get(item.key)
        statuses.append("added" if old is None else "unchanged" if old == item.content_hash else "updated")
        if old != item.content_hash:
            todo.append(item)
    return statuses, todo
