"""The items of a list typed in a turn: lines that start with a marker ("-", "*", "\u2022", "1.", "a)", "(i)").

The referent finder (:mod:`cleo_rules.referent_finder`) reads a reply's list items as
the options it offers ("Option B, please" picks the second).
"""

from __future__ import annotations

import re

__all__ = ["clip", "list_items", "words_before"]

# a list item's marker at the start of a line, and the spaces or tabs after it
_ITEM_MARKER = re.compile(r"[ \t]*(?:[-*\u2022\u25aa\u2013]|\d{1,2}[.)]|[a-hA-H][.)]|\(\w\))[ \t]+")


def list_items(text: str, most: int) -> list[tuple[int, str]]:
    """The first ``most`` list items of ``text``: ``(start, text)`` of each line that starts with a marker
    ("-", "*", "•", "1.", "a)", "(i)") and spaces, from its first character after them to its last that is
    not white space (at least one character).

    What ``^[ \\t]*MARKER[ \\t]+(.+?)\\s*$`` finds line by line (multi-line mode), in one pass: that
    pattern tries the rest of the line at every character of the item, which takes the square of a line's
    length when it holds long runs of spaces.
    """
    out: list[tuple[int, str]] = []
    start = 0
    for line in text.split("\n"):
        m = _ITEM_MARKER.match(line)
        if m is not None:
            after = m.end()
            if after < len(line):
                end = max(after + 1, len(line.rstrip()))
                out.append((start + after, line[after:end]))
            elif line[after - 2] in " \t":
                out.append((start + after - 1, line[after - 1:after]))  # a marker, then only spaces: one of them
            if len(out) >= most:
                break
        start += len(line) + 1
    return out


def clip(item: str, words: int = 8) -> str:
    """A list item's leading words, up to a colon or dash that starts its details."""
    head = re.split(r"\s[-\u2013\u2014:]\s|:\s", item, maxsplit=1)[0]
    return " ".join(head.split()[:words]).rstrip(",;.")


def words_before(text: str, start: int, at: int, count: int) -> int:
    """Where the ``count``-th word before ``at`` starts (not before ``start``)."""
    for _ in range(count):
        end = start + len(text[start:at].rstrip())
        at = text.rfind(" ", start, end) + 1
        if at <= start:
            return start
    return at
