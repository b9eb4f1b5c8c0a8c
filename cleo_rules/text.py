"""Normalisation shared by the pack compiler and the matcher.

Rules are written against normalised text, and every message is normalised
the same way before matching: NFKC, zero-width and soft-hyphen characters
removed, curly quotes/apostrophes and dashes made plain, case folded, and
runs of white space collapsed to one space, stripped.

:func:`normalize` is the fast path used on every message. :func:`normalize_map`
also returns, for each normalised character, the span of the original text it
came from, so a match can be reported in the user's own words.
"""

from __future__ import annotations

import re
import unicodedata

import regex

_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"
_APOSTROPHES = "\u2018\u2019\u201a\u201b\u2032\u2035\u02bc\u02bb\u02bd\u0060\u00b4\uff07"
_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\uff02"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"

_TABLE: dict[int, str | None] = {ord(c): None for c in _ZERO_WIDTH}
_TABLE.update({ord(c): "'" for c in _APOSTROPHES})
_TABLE.update({ord(c): '"' for c in _QUOTES})
_TABLE.update({ord(c): "-" for c in _DASHES})
_ASCII_KEYS = "".join(chr(k) for k in _TABLE if k < 128)  # the backtick

# A word: letters/digits/underscore, with inner apostrophes ("let's", "don't").
WORD = regex.compile(r"\w+(?:'\w+)*")
# The same words in ASCII text, found by the standard library's engine: for
# ASCII, ``\w`` means the same to both, and ``re`` is the lighter call.
WORD_ASCII = re.compile(r"\w+(?:'\w+)*", re.ASCII)


# Unicode format characters (category Cf: zero-width spaces and joiners, the
# BOM, bidirectional marks, invisible operators…): they take no room on screen
_FORMAT = regex.compile(r"\p{Cf}+")


def visible_length(message: str) -> int:
    """How many characters of ``message`` a reader sees: the length after
    removing Unicode format characters (category Cf) anywhere and white space
    at both ends. Inner white space counts.

    Never more than ``len(message.strip())``: removing characters can only
    shorten the text, and what :meth:`str.strip` removed is still at the ends.
    """
    if message.isascii():  # ASCII has no format characters
        return len(message.strip())
    return len(_FORMAT.sub("", message).strip())


def word_pattern(normalized: str):
    """The compiled word pattern for an already normalised text (ASCII or not)."""
    return WORD_ASCII if normalized.isascii() else WORD


def normalize(text: str) -> str:
    """Normalise ``text`` for matching (see the module docstring)."""
    if text.isascii():
        # ASCII: NFKC is the identity, and few of the table's keys are ASCII
        text = text.lower()
        if any(c in text for c in _ASCII_KEYS):
            text = text.translate(_TABLE)
    else:
        text = unicodedata.normalize("NFKC", text).translate(_TABLE).casefold()
        # casefold can produce characters NFKC would change again (rare)
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.split())  # str.split: the same white space as str.isspace


def words(normalized: str) -> list[str]:
    """The words of an already normalised text."""
    return WORD.findall(normalized)


def normalize_map(text: str) -> tuple[str, list[int], list[int]]:
    """Normalise ``text`` and map every output character back to the input.

    Returns ``(normalized, starts, ends)`` where normalised character ``i``
    came from ``text[starts[i]:ends[i]]``. Works on clusters (a character and
    its combining marks) so that composition is preserved; the result equals
    :func:`normalize` for all practical input.
    """
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    n = len(text)
    i = 0
    pending_space = False
    while i < n:
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        piece = text[i:j]
        if piece.isspace():
            pending_space = bool(out)
            i = j
            continue
        norm = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", piece).translate(_TABLE).casefold())
        for ch in norm:
            if ch.isspace():
                pending_space = bool(out)
                continue
            if pending_space:
                out.append(" ")
                starts.append(i)
                ends.append(i)
                pending_space = False
            out.append(ch)
            starts.append(i)
            ends.append(j)
        i = j
    return "".join(out), starts, ends


# For ASCII, normalisation maps characters one to one except white space,
# whose runs (as str.split sees them) become one space.
_ASCII_RUN = re.compile(r"[^ \t\n\r\x0b\x0c\x1c-\x1f]+")


def _ascii_span(text: str, start: int, end: int) -> tuple[int, int]:
    def locate(k: int, as_end: bool) -> int:
        pos = 0
        last_end = 0
        for m in _ASCII_RUN.finditer(text):
            if pos and k == pos - 1:  # the space before this run maps to its start
                return m.start()
            length = m.end() - m.start()
            if k < pos + length or (as_end and k == pos + length):
                return m.start() + (k - pos)
            pos += length + 1
            last_end = m.end()
        return last_end

    return locate(start, False), locate(end, True)


def original_span(text: str, start: int, end: int, normalized: str | None = None) -> tuple[int, int]:
    """Map a span of ``normalize(text)`` back to a span of ``text``.

    ``normalized``, when given, must be ``normalize(text)``: for ASCII text of
    the same length, normalising changed no position and the span is kept.
    """
    if start >= end:
        return (0, 0)
    if text.isascii():
        if normalized is not None and len(normalized) == len(text):
            # normalising changed no position; a span starting at a space
            # starts at the word after it, as the general map has it
            return (start + 1 if normalized[start] == " " else start, end)
        return _ascii_span(text, start, end)
    _, starts, ends = normalize_map(text)
    if not starts or start >= end:
        return (0, 0)
    start = min(start, len(starts) - 1)
    end = min(end, len(ends))
    return (starts[start], ends[end - 1])
