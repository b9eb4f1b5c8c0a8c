"""Reading a pattern's parse tree: what the pattern analyses share.

The backtracking lint (:mod:`cleo_rules.reading.backtracking`) and the
prefilter's requirements (:mod:`cleo_rules.prefilter.requirements`) both walk
the tree that Python's own ``re`` parser makes of a pattern (it reads the
common subset of ``regex`` syntax). That parser is private to the standard
library (``re._parser``, ``sre_parse`` before 3.11); this module is the one
place that imports it, with the few questions both analyses ask of its items.

A parsed pattern is a list of ``(op, av)`` items, ``op`` one of the
constants in :data:`C`.
"""

from __future__ import annotations

import string
import sys
from typing import TYPE_CHECKING

if sys.version_info >= (3, 11) and not TYPE_CHECKING:
    from re import _constants as C
    from re import _parser as P
else:  # pragma: no cover - older Pythons, and the type stubs, know them by their older names
    import sre_constants as C
    import sre_parse as P

__all__ = ["ALPHABET", "C", "SINGLE", "UNBOUNDED", "class_chars", "first_chars", "is_repeat", "parse"]

#: The characters the analyses reason about: every printable ASCII character
#: and a few others a message often holds.
ALPHABET = string.printable + "éßœ’“\u00a0"
#: A repeat allowing more than this many rounds is "unbounded".
UNBOUNDED = 16
#: Items that consume exactly one character.
SINGLE = (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN, C.CATEGORY)


def parse(pattern: str):
    """The parsed pattern, or None when the ``re`` parser cannot read it.

    Its items are ``parsed.data``, its flags ``parsed.state.flags``.
    """
    try:
        return P.parse(pattern)
    except Exception:  # noqa: BLE001 - regex-only syntax
        return None


def is_repeat(op) -> bool:
    """A greedy or lazy repeat (possessive repeats cannot backtrack)."""
    return op in (C.MAX_REPEAT, C.MIN_REPEAT)


def class_chars(op, av) -> frozenset:
    """The characters of :data:`ALPHABET` one single-character item matches."""
    if op is C.LITERAL:
        return frozenset(chr(av))
    if op is C.NOT_LITERAL:
        return frozenset(c for c in ALPHABET if c != chr(av))
    if op is C.ANY:
        return frozenset(c for c in ALPHABET if c != "\n")
    if op is C.IN:
        negate = False
        chars: set[str] = set()
        for sub_op, sub_av in av:
            if sub_op is C.NEGATE:
                negate = True
            elif sub_op is C.LITERAL:
                chars.add(chr(sub_av))
            elif sub_op is C.RANGE:
                lo, hi = sub_av
                chars.update(c for c in ALPHABET if lo <= ord(c) <= hi)
            elif sub_op is C.CATEGORY:
                chars.update(_category(sub_av))
            else:
                chars.update(ALPHABET)
        if negate:
            return frozenset(c for c in ALPHABET if c not in chars)
        return frozenset(chars)
    if op is C.CATEGORY:
        return _category(av)
    return frozenset(ALPHABET)


def _category(cat) -> frozenset:
    tests = {
        C.CATEGORY_DIGIT: str.isdigit,
        C.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
        C.CATEGORY_SPACE: str.isspace,
        C.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
        C.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
        C.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
    }
    test = tests.get(cat)
    if test is None:
        return frozenset(ALPHABET)
    return frozenset(c for c in ALPHABET if test(c))


def first_chars(items) -> frozenset:
    """The characters of :data:`ALPHABET` a match of ``items`` can start with (all of them when unsure)."""
    for op, av in items:
        if op in SINGLE:
            return class_chars(op, av)
        if is_repeat(op):
            first = first_chars(av[2])
            return first if av[0] >= 1 else first | frozenset(ALPHABET)
        if op is C.SUBPATTERN:
            return first_chars(av[-1])
        if op is C.BRANCH:
            out = frozenset()
            for alt in av[1]:
                out |= first_chars(alt)
            return out
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        return frozenset(ALPHABET)
    return frozenset()
