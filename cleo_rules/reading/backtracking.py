"""Find patterns that can backtrack catastrophically.

Two checks, both cheap, run on every pattern when a pack is compiled
(:func:`cleo_rules.pack.compile.compile_pack` reports E131):

* **Static** (:func:`static_risk`): the pattern is parsed (see
  :mod:`cleo_rules.pattern_tree`) and walked. An unbounded repeat whose body holds
  another unbounded repeat is flagged, unless the body also has a mandatory
  character that none of the inner repeats can match (``(?:\\w+ )*`` is
  safe: each round must end at a space). An unbounded repeat over
  alternatives that can split the same text two ways (``(?:ab|a|b)+``) or
  match the same character two ways (``(?:\\w|\\w)+``, ``(?:[a-z]|[a-m])+``,
  ``(?:.|a)*``) is flagged, and so are two unbounded repeats side by side that
  can take the same characters (``\\w*\\w*$``: polynomial, but cubic over a
  few thousand characters). Atomic groups and conditionals are read too.
  Syntax only ``regex`` knows is read through its nearest common equivalent
  (``\\p{L}`` as ``\\w``, ``\\X`` as ``.``, ``\\m`` as ``\\b``); a pattern
  still unreadable (fuzzy matching, recursion, set operations, branch reset)
  can be neither analysed nor probed soundly and is refused.
* **Dynamic** (:func:`probe`): the pattern is run, under a time limit, on
  strings that start with what the pattern requires before its first
  unbounded repeat (its literal prefix, one string per alternative), pump
  characters the repeat takes, and then fail; a pattern that runs out of time
  on a few dozen characters is catastrophic whatever the static check said.
"""

from __future__ import annotations

import re

from .. import timed
from ..pattern_tree import ALPHABET, SINGLE, UNBOUNDED, C, class_chars, first_chars, is_repeat, parse

__all__ = ["UNREADABLE", "probe", "readable", "static_risk"]

#: How :func:`static_risk` words a pattern it cannot read at all.
UNREADABLE = "it uses syntax the backtracking check cannot read"

_ATOMIC = getattr(C, "ATOMIC_GROUP", None)
_CONDITIONAL = C.GROUPREF_EXISTS


def _conditional_arms(av) -> list:
    return [arm for arm in av[1:] if arm is not None]


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
        elif op is _ATOMIC:
            out |= _chars_of(av)
        elif op is _CONDITIONAL:
            for arm in _conditional_arms(av):
                out |= _chars_of(arm)
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
        elif op is _CONDITIONAL:
            for arm in _conditional_arms(av):
                found.extend(_inner_unbounded(arm))
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


def _char_sequence(items) -> list[frozenset] | None:
    """The characters each position of ``items`` takes, when ``items`` has a fixed length; else None."""
    out: list[frozenset] = []
    for op, av in items:
        if op in SINGLE:
            out.append(class_chars(op, av))
        elif is_repeat(op) and av[0] == av[1] and av[0] <= 8:
            body = _char_sequence(av[2])
            if body is None:
                return None
            out.extend(body * av[0])
        elif op is C.SUBPATTERN:
            body = _char_sequence(av[-1])
            if body is None:
                return None
            out.extend(body)
        else:
            return None
    return out


def _splits_two_ways(words: list[list[frozenset]]) -> bool:
    """True if some alternative can also be spelled by other alternatives (one of the same length included)."""
    for i, w in enumerate(words):
        others = [x for j, x in enumerate(words) if j != i and x]
        if not w or not others:
            continue
        reach = [True] + [False] * len(w)
        for pos in range(len(w)):
            if reach[pos]:
                for o in others:
                    if pos + len(o) <= len(w) and all(w[pos + k] & o[k] for k in range(len(o))):
                        reach[pos + len(o)] = True
        if reach[len(w)]:
            return True
    return False


def _check_branch(alts) -> str | None:
    alts = list(alts)
    shapes = [repr(list(a)) for a in alts]
    if len(set(shapes)) < len(shapes):
        # the parser moves a shared start out in front: (?:\w|\w) is read as \w(?:|)
        return "alternatives inside a repeat match the same text two ways"
    seqs = [_char_sequence(a) for a in alts]
    known = [seq for seq in seqs if seq is not None]
    if len(known) == len(seqs):
        if _splits_two_ways(known):
            return "alternatives inside a repeat can split the same text two ways"
        return None
    firsts = [first_chars(a) for a in alts]
    for i in range(len(alts)):
        for j in range(i + 1, len(alts)):
            if firsts[i] & firsts[j] and (_inner_unbounded(alts[i]) or _inner_unbounded(alts[j])):
                return "repeated alternatives overlap and one of them repeats itself"
    return None


def _overlapping_class(av) -> bool:
    """A class whose members share characters: how the parser reads ``(?:[a-z]|[a-m])`` or ``(?:a|\\w)``."""
    members = []
    for sub_op, sub_av in av:
        if sub_op is C.NEGATE:
            return False
        members.append(class_chars(C.IN, [(sub_op, sub_av)]))
    return any(members[i] & members[j] for i in range(len(members)) for j in range(i + 1, len(members)))


def _body_alternatives(body) -> str | None:
    """Why the alternatives one round of a repeat chooses between are ambiguous, or None."""
    for op, av in body:
        if op is C.BRANCH:
            why = _check_branch(av[1])
        elif op is C.SUBPATTERN:
            why = _body_alternatives(av[-1])
        elif op is C.IN and _overlapping_class(av):
            why = "alternatives inside a repeat overlap (a character matches two of them)"
        else:
            why = None
        if why:
            return why
    return None


def _unbounded(op, av) -> bool:
    return is_repeat(op) and (av[1] is C.MAXREPEAT or av[1] > UNBOUNDED)


def _can_be_empty(op, av) -> bool:
    return op in (C.AT, C.ASSERT, C.ASSERT_NOT) or (is_repeat(op) and av[0] == 0)


def _adjacent_repeats(items) -> str | None:
    """Two unbounded repeats with only optional items between them, taking the same characters."""
    items = list(items)
    for i, (op, av) in enumerate(items):
        if not _unbounded(op, av):
            continue
        mine = _chars_of(av[2])
        for op2, av2 in items[i + 1:]:
            if _unbounded(op2, av2) and mine & first_chars(av2[2]):
                return "two repeats side by side can take the same characters"
            if not _can_be_empty(op2, av2):
                break
    return None


def _walk(items) -> str | None:
    why = _adjacent_repeats(items)
    if why:
        return why
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
                why = _body_alternatives(body)
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
        elif op is _ATOMIC or op is getattr(C, "POSSESSIVE_REPEAT", None):
            why = _walk(av if op is _ATOMIC else av[2])  # no backtracking into it, but within it
            if why:
                return why
        elif op is _CONDITIONAL:
            for arm in _conditional_arms(av):
                why = _walk(arm)
                if why:
                    return why
    return None


# Escapes only ``regex`` knows, and the nearest escape the ``re`` parser reads (a superset of the characters).
_REGEX_ONLY = re.compile(r"\\(?:[pP](?:\{[^}]*\}|[A-Za-z])|[XmM])")
# A fuzzy constraint ({e<=1}, {i<=1,d<=1}, {1<=e<=2}, {e}): the re parser would read it as literal text.
_FUZZY = re.compile(r"(?<!\\)\{(?:\s*\d*\s*<=?)?\s*\d*[eids](?:\s*(?:<=?|[+,])[^{}]*)?\}")
_STAND_IN = {"p": r"\w", "P": r"\W", "X": ".", "m": r"\b", "M": r"\b"}


def _readable_form(pattern: str) -> str:
    """``pattern`` with each ``regex``-only escape replaced by its stand-in (escaped backslashes respected)."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            m = _REGEX_ONLY.match(pattern, i)
            if m is not None:
                out.append(_STAND_IN[m.group(0)[1]])
                i = m.end()
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def readable(pattern: str):
    """The parse tree the analyses read for ``pattern`` (see :func:`_readable_form`), or None."""
    parsed = parse(pattern)
    if parsed is None:
        parsed = parse(_readable_form(pattern))
    return parsed


def static_risk(pattern: str) -> str | None:
    """Why ``pattern`` can backtrack catastrophically, or None.

    Patterns using ``regex``-only escapes are read through their stand-ins;
    one that the parser still cannot read is refused (:data:`UNREADABLE`).
    """
    parsed = readable(pattern) if _FUZZY.search(pattern) is None else None
    if parsed is None:
        return f"{UNREADABLE} (fuzzy matching, recursion, set operations and the like); write it with common syntax"
    return _walk(list(parsed.data))


def _sample(chars) -> str:
    """One character of ``chars`` to stand for the class (a letter if it has one)."""
    for pick in ("a", "e", "1", " ", ","):
        if pick in chars:
            return pick
    return min(chars) if chars else "a"


def _prefixes(items, limit: int = 6) -> list[str]:
    """Strings taking ``items`` up to its first unbounded repeat (one per alternative, at most ``limit``)."""
    heads = [""]
    for op, av in items:
        if op in SINGLE:
            chars = class_chars(op, av)
            heads = [h + _sample(chars) for h in heads]
        elif _unbounded(op, av):
            return heads
        elif is_repeat(op):
            inner = _prefixes(av[2], limit)
            heads = [h + inner[0] * av[0] for h in heads]
        elif op is C.SUBPATTERN or op is _ATOMIC:
            inner = _prefixes(av[-1] if op is C.SUBPATTERN else av, limit)
            heads = [h + t for h in heads for t in inner][:limit]
        elif op is C.BRANCH:
            inner = [t for alt in av[1] for t in _prefixes(alt, limit)]
            heads = [h + t for h in heads for t in inner][:limit]
        elif op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        else:
            return heads
    return heads


def _pump_chars(items) -> set[str]:
    """A few characters each unbounded repeat of ``items`` takes."""
    out: set[str] = set()
    for op, av in items:
        if _unbounded(op, av):
            chars = _chars_of(av[2])
            out.update(c for c in sorted(chars) if c.isalnum())
            out.update(c for c in (" ", ",", "'", "-", ".") if c in chars)
            out.update(_pump_chars(av[2]))
        elif is_repeat(op):
            out.update(_pump_chars(av[2]))
        elif op is C.SUBPATTERN:
            out.update(_pump_chars(av[-1]))
        elif op is C.BRANCH:
            for alt in av[1]:
                out.update(_pump_chars(alt))
    return out


def probe(compiled, pattern: str, *, budget: float = 0.25) -> str | None:
    """Run ``compiled`` on pumped failing strings, after each prefix the pattern requires; report the first that times out.

    A timeout counts only when it is reproducible (:func:`cleo_rules.timed.search`
    with :data:`~cleo_rules.timed.GATE_TRIES`): ``regex`` charges a search with
    the CPU time of every thread of the process, so on a busy process a fast
    pattern can run out of its budget once; a catastrophic one does every time.
    """
    pumps = {"a", " ", "1", "ab", "a ", ", "}
    pumps.update(c for c in pattern if c.isalnum())
    parsed = readable(pattern)
    prefixes = [""]
    if parsed is not None:
        items = list(parsed.data)
        prefixes += [p for p in _prefixes(items) if p]
        pumps.update(sorted(_pump_chars(items))[:24])
    for prefix in dict.fromkeys(prefixes):
        for pump in sorted(pumps):
            for tail in ("\u0000!", "!\u0000"):
                text = prefix + pump * 40 + tail
                try:
                    timed.search(compiled.search, text, budget, tries=timed.GATE_TRIES)
                except TimeoutError:
                    after = f" after {prefix!r}" if prefix else ""
                    return f"took over {budget:.2f}s on {pump!r} repeated 40 times{after}"
    return None
