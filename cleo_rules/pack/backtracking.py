"""Find patterns that can backtrack catastrophically.

Two checks, both cheap, run on every pattern when a pack is compiled
(:func:`cleo_rules.pack.compile.compile_pack` reports E131):

* **Static** (:func:`static_risk`): the pattern is parsed (see
  :mod:`cleo_rules._sre`) and walked. An unbounded repeat whose body holds
  another unbounded repeat is flagged, unless the body also has a mandatory
  character that none of the inner repeats can match (``(?:\\w+ )*`` is
  safe: each round must end at a space). An unbounded repeat over
  alternatives that can split the same text two ways (``(?:a|aa)+``) is
  flagged too.
* **Dynamic** (:func:`probe`): the pattern is run, under a time limit, on
  strings that pump characters it uses and then fail; a pattern that runs out
  of time on a few dozen characters is catastrophic whatever the static
  check said.
"""

from __future__ import annotations

from .._sre import ALPHABET, SINGLE, UNBOUNDED, C, class_chars, first_chars, is_repeat, parse

__all__ = ["probe", "static_risk"]


def _chars_of(items) -> frozenset:
    """Every probe character any part of ``items`` can consume."""
    out: set[str] = set()
    for op, av in items:
        if op in SINGLE:
            out |= class_chars(op, av)
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
            out |= set(ALPHABET)
    return frozenset(out)


def _inner_unbounded(items) -> list:
    """Unbounded (non-possessive) repeats nested anywhere in ``items``."""
    found = []
    for op, av in items:
        if is_repeat(op):
            lo, hi, sub = av
            if hi is C.MAXREPEAT or hi > UNBOUNDED:
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
        if op in SINGLE:
            out.append(class_chars(op, av))
        elif is_repeat(op) and av[0] >= 1:
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


def _check_branch(alts) -> str | None:
    literals = [_literal_string(a) for a in alts]
    if all(s is not None for s in literals):
        if _splits_two_ways(literals):  # type: ignore[arg-type]
            return "alternatives inside a repeat can split the same text two ways"
        return None
    firsts = [first_chars(a) for a in alts]
    for i in range(len(alts)):
        for j in range(i + 1, len(alts)):
            if firsts[i] & firsts[j] and (_inner_unbounded(alts[i]) or _inner_unbounded(alts[j])):
                return "repeated alternatives overlap and one of them repeats itself"
    return None


def _walk(items) -> str | None:
    for op, av in items:
        if is_repeat(op):
            lo, hi, body = av
            if hi is C.MAXREPEAT or hi > UNBOUNDED:
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
    parsed = parse(pattern)
    if parsed is None:  # regex-only syntax: the probe decides
        return None
    return _walk(list(parsed.data))


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
