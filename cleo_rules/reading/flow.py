"""Long flow sequences of plain strings, read without the YAML scanner: the shape of generated word lists.

A generated file such as the lexicon is a few mappings whose values are flow
sequences of tens of thousands of double-quoted words::

    words: [
      "a", "ability", "able",
      ...
    ]

Scanning those character by character is most of a cold start. This module
finds such sequences (:func:`find_runs`: a ``key: [`` line whose sequence holds
only double-quoted strings without escapes, line breaks or tabs, separated by
commas, spaces and newlines), reads their strings and positions with one
regular expression, and blanks their insides (:func:`blank`) so the full
loader parses the rest of the file with every later line and column where it
was. :func:`cleo_rules.reading.load.parse_yaml` then puts the strings back into
the sequences the loader found at those ``[`` positions.

It is exact or it is not used: a match is used only when the loader, on the
blanked text, finds an empty flow sequence starting at that very ``[`` (so
the ``[`` opens a sequence, not text in a comment, a block scalar or a quoted
string); otherwise, or on any problem at all, the file is read again by the
full loader alone, so every error is placed exactly as before. Up to the
``[`` both texts are the same, and from the ``[`` to its ``]`` a double-quoted
string without escapes or breaks is its own characters, so both readings
agree. ``tests/pack/test_pack_flow.py`` checks this against the full loader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MIN_ITEMS", "Run", "blank", "find_runs"]

#: sequences shorter than this are left to the full loader (they cost it little)
MIN_ITEMS = 16

# A double-quoted string the scanner reads as its own characters: no quote, backslash, line break or
# tab, and only characters the YAML reader accepts (it would reject the others, which are blanked);
# no U+FEFF either, which the reader does not count as a column.
_CHAR = r'[^"\\\x00-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]'
_ITEM = re.compile(f'"({_CHAR}*)"')
_GAP = r"[ \n]*"
_BODY = re.compile(rf'(?:{_GAP}"{_CHAR}*"{_GAP},)*{_GAP}(?:"{_CHAR}*"{_GAP})?\]')
# a block mapping key on its own line, then its value opening a flow sequence on the same line
_START = re.compile(r"^ *[A-Za-z_][A-Za-z0-9_-]*: +\[", re.MULTILINE)


@dataclass
class Run:
    """One flow sequence of strings: where its ``[`` and ``]`` are, and its strings with their positions."""

    start: int  # offset of "["
    end: int  # offset just past "]"
    line: int  # 1-based line and column of "["
    col: int
    close: tuple[int, int]  # 1-based line and column of "]"
    items: list[str]
    places: list[tuple[int, int]]  # 1-based (line, col) of each string's opening quote
    used: bool = False


def find_runs(text: str, min_items: int = MIN_ITEMS) -> list[Run]:
    """The flow sequences of plain strings in ``text`` with at least ``min_items`` strings, in order.

    Only for text whose line breaks are all ``\\n`` (the caller checks: the
    loader also counts ``\\r`` as one). Each candidate ``[`` starts a line's
    ``key: [``; the search from one never runs past the next line that is
    not part of a sequence, so it is linear in the text.
    """
    runs: list[Run] = []
    line, line_at = 1, 0  # line number of offset line_at
    pos = 0
    while True:
        head = _START.search(text, pos)
        if head is None:
            return runs
        start = head.end() - 1
        body = _BODY.match(text, start + 1)
        if body is None:
            pos = head.end()
            continue
        end = body.end()
        line += text.count("\n", line_at, start)
        line_at = start
        items: list[str] = []
        places: list[tuple[int, int]] = []
        row, row_start, at = line, text.rfind("\n", 0, start) + 1, start
        for m in _ITEM.finditer(text, start, end):
            quote = m.start()
            breaks = text.count("\n", at, quote)
            if breaks:
                row += breaks
                row_start = text.rfind("\n", at, quote) + 1
            items.append(m.group(1))
            places.append((row, quote - row_start + 1))
            at = quote
        if len(items) >= min_items:
            col = start - (text.rfind("\n", 0, start) + 1) + 1
            bracket = end - 1
            close = (row + text.count("\n", at, bracket), bracket - (text.rfind("\n", 0, bracket) + 1) + 1)
            runs.append(Run(start, end, line, col, close, items, places))
        pos = end


def blank(text: str, runs: list[Run]) -> str:
    """``text`` with each run's strings taken out, every line and column after its ``]`` kept.

    A run on one line becomes ``[`` spaces ``]``; a longer one keeps its
    line breaks and, on its last line, spaces up to the ``]``.
    """
    out: list[str] = []
    pos = 0
    for run in runs:
        out.append(text[pos:run.start])
        inside = text[run.start + 1:run.end - 1]
        breaks = inside.count("\n")
        if breaks:
            last = len(inside) - (inside.rfind("\n") + 1)
            out.append("[" + "\n" * breaks + " " * last + "]")
        else:
            out.append("[" + " " * len(inside) + "]")
        pos = run.end
    out.append(text[pos:])
    return "".join(out)
