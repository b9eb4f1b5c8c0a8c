"""How big a pattern may be before it is compiled.

``regex.compile`` expands counted repeats of groups: ``(?:(?:a{100}){100}){100}``
becomes a million copies of its body, and one more level (a 60-byte pattern)
asks for tens of gigabytes before any lint has run. :func:`size_problem` reads
the pattern's text (no parser of the standard library or of ``regex`` is
trusted with it yet) and weighs it: every character an atom of the pattern
stands for counts once for each round of every counted repeat around it
(``{m}``, ``{m,n}``, ``{m,}``; an open ``*`` or ``+`` counts one round, since
it is not expanded). A pattern longer than :data:`MAX_PATTERN_CHARS` or
weighing more than :data:`MAX_PATTERN_WEIGHT` is refused before it is compiled.

The bundled pack's heaviest pattern weighs a few hundred; the bound leaves
room for long alternations of words and for ``\\w{1,30}``-style counts, and
keeps one compiled pattern to a few megabytes.
"""

from __future__ import annotations

import re

__all__ = ["MAX_PATTERN_CHARS", "MAX_PATTERN_WEIGHT", "pattern_weight", "size_problem"]

#: Longest pattern (a list of patterns: all of them joined) a rule may have.
MAX_PATTERN_CHARS = 20_000
#: Heaviest pattern: atoms times the rounds of the counted repeats around them.
MAX_PATTERN_WEIGHT = 20_000

_COUNT = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_ESCAPE_WITH_BRACES = frozenset("pPNxuUgL")  # \p{L}, \N{name}, \x{263a}, \g<1>, \L<name>


def _count(text: str, i: int) -> tuple[int, int] | None:
    """The rounds a quantifier at ``text[i]`` allows (the most counted), and its length; None if none is there."""
    if i >= len(text):
        return None
    ch = text[i]
    if ch in "*+?":
        return 1, 1
    if ch != "{":
        return None
    m = _COUNT.match(text, i)
    if m is None or (not m.group(1) and not m.group(3)):
        return None  # a literal brace, or a fuzzy constraint such as {e<=1}
    low, high = m.group(1), m.group(3)
    most = high if m.group(2) else low
    if not most:  # {m,}: open above; the m rounds are expanded
        most = low
    # a count of more than 9 digits is past any bound: weigh it as its length says
    rounds = int(most) if len(most) <= 9 else 10 ** 10
    return max(rounds, 1), m.end() - i


def _skip_quantifier_suffix(text: str, i: int) -> int:
    return i + 1 if i < len(text) and text[i] in "?+" else i


def _escape_end(text: str, i: int) -> int:
    """Index past the escape starting with the backslash at ``text[i]``."""
    if i + 1 >= len(text):
        return i + 1
    letter = text[i + 1]
    if letter in _ESCAPE_WITH_BRACES and i + 2 < len(text) and text[i + 2] in "{<":
        close = "}" if text[i + 2] == "{" else ">"
        end = text.find(close, i + 3)
        return len(text) if end < 0 else end + 1
    return i + 2


def _class_end(text: str, i: int) -> int:
    """Index past the character class opening at ``text[i]`` (nested sets of ``regex`` counted too)."""
    j = i + 1
    if j < len(text) and text[j] == "^":
        j += 1
    if j < len(text) and text[j] == "]":
        j += 1
    depth = 1
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j = _escape_end(text, j)
            continue
        if ch == "[" and j + 1 < len(text) and text[j + 1] in "[:":
            depth += 1 if text[j + 1] == "[" else 0
            if text[j + 1] == ":":  # [:alpha:]
                end = text.find(":]", j + 2)
                j = len(text) if end < 0 else end + 2
                continue
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(text)


def pattern_weight(pattern: str) -> int:
    """The weight of ``pattern``: each atom times the rounds of every counted repeat around it.

    An unbalanced pattern is weighed as far as it goes (compiling it then
    reports the syntax error).
    """
    # Each open group holds (weight of its finished alternatives, weight of the current one).
    stack: list[list[int]] = [[0, 0]]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "(":
            stack.append([0, 0])
            i += 1
            if pattern.startswith("?#", i):  # a comment group weighs nothing
                end = pattern.find(")", i)
                stack.pop()
                i = n if end < 0 else end + 1
            continue
        if ch == "|":
            top = stack[-1]
            top[0] += top[1]
            top[1] = 0
            i += 1
            continue
        if ch == ")":
            if len(stack) == 1:  # unbalanced: let the compiler say so
                i += 1
                continue
            done = stack.pop()
            atom = done[0] + done[1] + 1
            i += 1
        elif ch == "\\":
            i = _escape_end(pattern, i)
            atom = 1
        elif ch == "[":
            i = _class_end(pattern, i)
            atom = 1
        else:
            i += 1
            atom = 1
        rounds = 1
        while True:  # a{2}{3} repeats a repeat
            q = _count(pattern, i)
            if q is None:
                break
            rounds *= q[0]
            i = _skip_quantifier_suffix(pattern, i + q[1])
            if rounds > 10 ** 12:
                break
        stack[-1][1] += min(atom * rounds, 10 ** 15)
    while len(stack) > 1:  # unclosed groups
        done = stack.pop()
        stack[-1][1] += done[0] + done[1] + 1
    return stack[0][0] + stack[0][1]


def size_problem(pattern: str) -> str | None:
    """Why ``pattern`` is too big to compile, or None."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"pattern is {len(pattern)} characters long, over the limit of {MAX_PATTERN_CHARS}"
    weight = pattern_weight(pattern)
    if weight > MAX_PATTERN_WEIGHT:
        shown = f"{weight:,}" if weight < 10 ** 15 else "over 10^15"
        return (f"pattern expands to {shown} atoms (each counted repeat multiplies what it repeats), "
                f"over the limit of {MAX_PATTERN_WEIGHT:,}")
    return None
