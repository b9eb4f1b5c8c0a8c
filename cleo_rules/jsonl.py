"""Reading JSON Lines: one helper for every command and module that reads them.

Ingest files, ``classify --jsonl`` and ``turn --jsonl`` streams, judgments
files and ``corpus diff --jsonl`` traffic all go through :func:`parse_line`
(or :func:`read_lines`, which numbers the lines of a file or stream), so a
line is judged the same way everywhere:

* the first line may start with a UTF-8 byte order mark, which is dropped
  (editors on some systems write one);
* a line must be UTF-8 and hold one JSON value (E311);
* it may nest at most :data:`MAX_DEPTH` arrays and objects (E318): JSON Lines
  that cleo-rules reads need three or four levels, and a deeper line would
  otherwise end the whole read with a ``RecursionError``;
* no string in it, key or value, may hold a lone surrogate such as
  ``"\\ud800"`` (E319): JSON allows the escape, but the text is not Unicode,
  cannot be written to SQLite, to a UTF-8 stream or to a tokenizer.

A line that breaks one of these raises :class:`JsonLineError`, which says
where (line, column, JSON pointer) and carries its code; the caller decides
whether to skip the line, report it on its own output line or stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import IO

from .errors import UsageError

__all__ = ["BOM", "MAX_DEPTH", "JsonLineError", "json_type", "parse_line", "read_lines", "pointer", "lone_surrogate",
           "without_lone_surrogates"]

BOM = "\ufeff"
MAX_DEPTH = 32
"""Arrays and objects a line may nest (a conversation record needs three)."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonLineError(UsageError):
    """One JSON Lines line that cannot be read: ``code``, ``message``, ``line``, ``col``, ``pointer``."""

    def __init__(self, code: str, message: str, *, line: int = 0, col: int = 1, pointer: str = ""):
        super().__init__(message, code=code)
        self.line = line
        self.col = col
        self.pointer = pointer

    @property
    def reason(self) -> str:
        return str(self)

    def to_dict(self) -> dict:
        """The error as the object a stream writes: ``{"code", "message"}``, and ``"pointer"`` when known."""
        out = {"code": self.code, "message": str(self)}
        if self.pointer:
            out["pointer"] = self.pointer
        return out


def pointer(path: Iterable[str | int]) -> str:
    """A JSON pointer (RFC 6901) for a path of keys and indexes."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def lone_surrogate(text: str) -> int | None:
    """Where ``text`` holds its first lone surrogate (a character in U+D800..U+DFFF), or None."""
    if text.isascii():
        return None
    m = _LONE_SURROGATE.search(text)
    return None if m is None else m.start()


def check_value(value, *, line: int = 0) -> None:
    """Raise :class:`JsonLineError` when ``value`` nests too deep or holds a lone surrogate.

    Walks the value without recursion, so any depth is safe to look at.
    """
    stack: list[tuple[object, int, tuple]] = [(value, 0, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            at = lone_surrogate(item)
            if at is not None:
                where = pointer(path) or "the line"
                raise JsonLineError(
                    "E319", f"string at {where} holds a lone surrogate (U+{ord(item[at]):04X} at character {at}), "
                    "which is not valid Unicode", line=line, pointer=pointer(path))
            continue
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                raise JsonLineError("E318", f"line is nested deeper than {MAX_DEPTH} levels", line=line,
                                    pointer=pointer(path))
            if isinstance(item, dict):
                for key, sub in item.items():
                    at = lone_surrogate(key)
                    if at is not None:
                        raise JsonLineError(
                            "E319", f"key at {pointer(path) or 'the top'} holds a lone surrogate "
                            f"(U+{ord(key[at]):04X} at character {at}), which is not valid Unicode",
                            line=line, pointer=pointer(path))
                    stack.append((sub, depth + 1, (*path, key)))
            else:
                stack.extend((sub, depth + 1, (*path, n)) for n, sub in enumerate(item))


def parse_line(raw: str | bytes, *, line: int = 0, first: bool | None = None):
    """The JSON value on one line; ``None`` for a blank line.

    ``raw`` is the line as read (bytes are decoded as UTF-8). ``first`` says
    whether it is the first line of its file or stream, where a byte order
    mark is dropped (default: ``line == 1``). Raises :class:`JsonLineError`.
    """
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonLineError("E311", f"line is not valid UTF-8 ({exc.reason} at byte {exc.start + 1})",
                                line=line, col=exc.start + 1) from None
    if (line == 1 if first is None else first) and raw.startswith(BOM):
        raw = raw[1:]
    text = raw.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonLineError("E318", f"line is nested deeper than {MAX_DEPTH} levels", line=line) from None
    except ValueError as exc:  # json.JSONDecodeError
        col = getattr(exc, "colno", 1)
        raise JsonLineError("E311", f"not valid JSON at column {col}: {getattr(exc, 'msg', str(exc))}", line=line,
                            col=col) from None
    check_value(value, line=line)
    return value


def read_lines(source: IO | Iterable) -> Iterator[tuple[int, object]]:
    """``(line number, value or JsonLineError)`` for every non-blank line of ``source``, numbered from 1.

    ``source`` is a file (text or binary) or any iterable of lines; each line
    is read only when the one before has been handled, so a co-process can
    write a line and wait for its answer.
    """
    number = 0
    for raw in _lines(source):
        number += 1
        try:
            value = parse_line(raw, line=number)
        except JsonLineError as exc:
            yield number, exc
            continue
        if value is not None:
            yield number, value


def _lines(source) -> Iterator:
    if not hasattr(source, "readline"):
        yield from source
        return
    while True:  # readline, not iteration: a file's iterator may read ahead
        raw = source.readline()
        if not raw:
            return
        yield raw


def without_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so it can be encoded as UTF-8."""
    if lone_surrogate(text) is None:
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def json_type(value, *, as_yaml: bool = False) -> str:
    """What a decoded JSON value is, as an error message names it ("a string", "an array", "null"); ``as_yaml``:
    a value read from YAML (a rule file), in YAML's words ("a list", "a mapping", "nothing", else its type)."""
    if value is None:
        return "nothing" if as_yaml else "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list" if as_yaml else "an array"
    if as_yaml:
        return "a mapping" if isinstance(value, dict) else type(value).__name__
    return "an object"
