"""Find patterns that can backtrack catastrophically.

Two checks, both cheap:

* **Static**: the pattern is parsed (Python's ``re`` parser understands the
  common subset of ``regex`` syntax) and walked. An unbounded repeat whose
  body holds another unbounded repeat is flagged, unless the body also has a
  mandatory character that none of the inner repeats can match (``(?:\\w+ )*``
  is safe: each round must end at a space). An unbounded repeat over
  alternatives that can split the same text two ways (``(?:a|aa)+``) is
  flagged too.
* **Dynamic**: the pattern is run, under a time limit, on strings that pump
  characters it uses and then fail; a pattern that runs out of time on a
  few dozen characters is catastrophic whatever the static check said.
"""

from __future__ import annotations

import string

import regex

try:  # Python 3.11+
    from re import _constants as C
    from re import _parser as P
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as C  # type: ignore
    import sre_parse as P  # type: ignore

_ALPHABET = string.printable + "éßœ’“\u00a0"
_UNBOUNDED = 16  # a repeat allowing more than this many rounds is "unbounded"


def _class_chars(op, av) -> frozenset:
    """The characters of the probe alphabet one single-character item matches."""
    if op is C.LITERAL:
        return frozenset(chr(av))
    if op is C.NOT_LITERAL:
        return frozenset(c for c in _ALPHABET if c != chr(av))
    if op is C.ANY:
        return frozenset(c for c in _ALPHABET if c != "\n")
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
                chars.update(c for c in _ALPHABET if lo <= ord(c) <= hi)
            elif sub_op is C.CATEGORY:
                chars.update(_category(sub_av))
            else:
                chars.update(_ALPHABET)
        if negate:
            return frozenset(c for c in _ALPHABET if c not in chars)
        return frozenset(chars)
    if op is C.CATEGORY:
        return _category(av)
    return frozenset(_ALPHABET)


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
        return frozenset(_ALPHABET)
    return frozenset(c for c in _ALPHABET if test(c))


_SINGLE = (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN, C.CATEGORY)


def _chars_of(items) -> frozenset:
    """Every probe character any part of ``items`` can consume."""
    out: set[str] = set()
    for op, av in items:
        if op in _SINGLE:
            out |= _class_chars(op, av)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            out |= _chars_of(av[2])
        elif op is C.SUBPATTERN:
            out |= _chars_of(av[-1])
        elif op is C.BRANCH:
            for alt in av[1]:
                out |= _chars_of(alt)
        elif op is getattr(C, "ATOMIC_GROUP", None):
            out |= _chars_of(av)
        elif op is C.GROUPREF:
            out |= set(_ALPHABET)
    return frozenset(out)


def _is_repeat(op) -> bool:
    return op in (C.MAX_REPEAT, C.MIN_REPEAT)


def _inner_unbounded(items) -> list:
    """Unbounded (non-possessive) repeats nested anywhere in ``items``."""
    found = []
    for op, av in items:
        if _is_repeat(op):
            lo, hi, sub = av
            if hi is C.MAXREPEAT or hi > _UNBOUNDED:
                found.append(sub)
            found.extend(_inner_unbounded(sub))
        elif op is C.SUBPATTERN:
            found.extend(_inner_unbounded(av[-1]))
        elif op is C.BRANCH:
            for alt in av[1]:
                found.extend(_inner_unbounded(alt))
    return found


def _mandatory_singles(items) -> list[frozenset]:
    """Character sets of single-character items every match of ``items`` consumes."""
    out = []
    for op, av in items:
        if op in _SINGLE:
            out.append(_class_chars(op, av))
        elif _is_repeat(op) and av[0] >= 1:
            out.extend(_mandatory_singles(av[2]))
        elif op is C.SUBPATTERN:
            out.extend(_mandatory_singles(av[-1]))
    return out


def _literal_string(items) -> str | None:
    chars = []
    for op, av in items:
        if op is not C.LITERAL:
            return None
        chars.append(chr(av))
    return "".join(chars)


def _splits_two_ways(words: list[str]) -> bool:
    """True if some alternative can also be spelled by concatenating others."""
    for i, w in enumerate(words):
        others = [x for j, x in enumerate(words) if j != i and x]
        if not w or not others:
            continue
        reach = [True] + [False] * len(w)
        for pos in range(len(w)):
            if reach[pos]:
                for o in others:
                    if w.startswith(o, pos):
                        reach[pos + len(o)] = True
        if reach[len(w)]:
            return True
    return False


def _first_chars(items) -> frozenset:
    for op, av in items:
        if op in _SINGLE:
            return _class_chars(op, av)
        if _is_repeat(op):
            first = _first_chars(av[2])
            return first if av[0] >= 1 else first | frozenset(_ALPHABET)
        if op is C.SUBPATTERN:
            return _first_chars(av[-1])
        if op is C.BRANCH:
            out = frozenset()
            for alt in av[1]:
                out |= _first_chars(alt)
            return out
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        return frozenset(_ALPHABET)
    return frozenset()


def _check_branch(alts) -> str | None:
    literals = [_literal_string(a) for a in alts]
    if all(s is not None for s in literals):
        if _splits_two_ways(literals):  # type: ignore[arg-type]
            return "alternatives inside a repeat can split the same text two ways"
        return None
    firsts = [_first_chars(a) for a in alts]
    for i in range(len(alts)):
        for j in range(i + 1, len(alts)):
            if firsts[i] & firsts[j] and (_inner_unbounded(alts[i]) or _inner_unbounded(alts[j])):
                return "repeated alternatives overlap and one of them repeats itself"
    return None


def _walk(items) -> str | None:
    for op, av in items:
        if _is_repeat(op):
            lo, hi, body = av
            if hi is C.MAXREPEAT or hi > _UNBOUNDED:
                inner = _inner_unbounded(body)
                if inner:
                    inner_chars = frozenset().union(*(_chars_of(s) for s in inner))
                    separators = _mandatory_singles(body)
                    if not any(sep and not (sep & inner_chars) for sep in separators):
                        return "a repeat nested inside another repeat, with nothing between rounds to tell them apart"
                for sub_op, sub_av in body:
                    if sub_op is C.SUBPATTERN:
                        for o, a in sub_av[-1]:
                            if o is C.BRANCH:
                                why = _check_branch(a[1])
                                if why:
                                    return why
                    if sub_op is C.BRANCH:
                        why = _check_branch(sub_av[1])
                        if why:
                            return why
            why = _walk(body)
            if why:
                return why
        elif op is C.SUBPATTERN:
            why = _walk(av[-1])
            if why:
                return why
        elif op is C.BRANCH:
            for alt in av[1]:
                why = _walk(alt)
                if why:
                    return why
        elif op in (C.ASSERT, C.ASSERT_NOT):
            why = _walk(av[1])
            if why:
                return why
    return None


def static_risk(pattern: str) -> str | None:
    """Why ``pattern`` can backtrack catastrophically, or None.

    Patterns the ``re`` parser cannot read (``regex``-only syntax) are left
    to :func:`probe`.
    """
    try:
        parsed = P.parse(pattern)
    except Exception:  # noqa: BLE001 - regex-only syntax: dynamic check decides
        return None
    return _walk(list(parsed))


def probe(compiled, pattern: str, *, budget: float = 0.25) -> str | None:
    """Run ``compiled`` on pumped failing strings; report the first that times out."""
    pumps = {"a", " ", "1", "ab", "a ", ", "}
    pumps.update(c for c in pattern if c.isalnum())
    tail = "\u0000!"
    for pump in sorted(pumps):
        text = pump * 40 + tail
        try:
            compiled.search(text, timeout=budget)
        except TimeoutError:
            return f"took over {budget:.2f}s on {pump!r} repeated 40 times"
    return None


def compile_pattern(pattern: str):
    """Compile as the matcher does (``regex`` V0 semantics)."""
    return regex.compile(pattern)


# --------------------------------------------------------------------------
# Prefilter: literal strings at least one of which every match contains.
# --------------------------------------------------------------------------

def _required(items):
    """Required-literal set of a sequence of parsed items, or None if unknown."""
    candidates = []
    run: list[str] = []

    def close_run():
        if run:
            candidates.append(frozenset(["".join(run)]))
            run.clear()

    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
            continue
        close_run()
        sub = None
        if op is C.SUBPATTERN:
            sub = _required(av[-1])
        elif op is C.BRANCH:
            alts = [_required(alt) for alt in av[1]]
            if all(a is not None for a in alts):
                sub = frozenset().union(*alts)
        elif _is_repeat(op) and av[0] >= 1:
            sub = _required(av[2])
        elif op is getattr(C, "ATOMIC_GROUP", None):
            sub = _required(av)
        if sub:
            candidates.append(sub)
    close_run()
    if not candidates:
        return None
    # the most selective: longest shortest string, then fewest strings
    return max(candidates, key=lambda s: (min(map(len, s)), -len(s)))


def required_literals(pattern: str, *, min_length: int = 3) -> tuple[str, ...] | None:
    """Strings one of which every match of ``pattern`` contains, or None.

    Used to skip a pattern's search when none of its literals is in the text.
    Patterns with inline flags, or that the ``re`` parser cannot read, get no
    prefilter (they are always searched).
    """
    try:
        parsed = P.parse(pattern)
    except Exception:  # noqa: BLE001 - regex-only syntax: no prefilter
        return None
    if parsed.state.flags & (C.SRE_FLAG_IGNORECASE | C.SRE_FLAG_VERBOSE):
        return None
    found = _required(list(parsed))
    # a literal under three characters ("it", "is") is in nearly every
    # message: checked one rule at a time, such a prefilter costs more than
    # it saves (an index of literals can take shorter ones: ``min_length``)
    if not found or any(len(s.strip()) < min_length for s in found):
        return None
    return tuple(sorted(found))


def first_ascii_chars(pattern: str) -> frozenset:
    """The ASCII characters a match of ``pattern`` can start with.

    Every ASCII character when the pattern cannot be read or may match the
    empty string, so the answer is safe to use as a gate.
    """
    try:
        parsed = P.parse(pattern)
    except Exception:  # noqa: BLE001
        return frozenset(chr(c) for c in range(128))
    if parsed.state.flags & C.SRE_FLAG_IGNORECASE:
        return frozenset(chr(c) for c in range(128))
    if parsed.getwidth()[0] == 0:
        return frozenset(chr(c) for c in range(128))
    return frozenset(c for c in _first_chars(list(parsed)) if c.isascii())
