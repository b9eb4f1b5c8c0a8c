"""Which rules can match a text, found with work that does not grow with the pack.

Each pattern has *required literals*: strings one of which every match
contains (:func:`cleo_rules.pack.regexlint.required_literals`). A rule none
of whose literals occurs in the text cannot match, and is not searched.
Checking every literal of every rule costs time in proportion to the pack;
:class:`LiteralIndex` files each literal under one short piece of it (its
rarest two or three characters) and looks up only the pieces the text
contains, so a message pays for the literals that share its pieces, not for
the whole pack.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

__all__ = ["LiteralIndex"]


class LiteralIndex:
    """Candidate rules for a text, in rule order.

    ``literal_sets[i]`` holds the literals of rule ``i``, or None when the
    rule has no usable literal (it is always a candidate). Immutable after
    construction; safe to share between threads.
    """

    __slots__ = ("size", "_always", "_keys", "_buckets", "_sizes")

    def __init__(self, literal_sets: Sequence[Sequence[str] | None]):
        self.size = len(literal_sets)
        always = []
        usable = {}
        for i, lits in enumerate(literal_sets):
            if not lits or any(len(lit) < 2 for lit in lits):
                always.append(i)
            else:
                usable[i] = tuple(dict.fromkeys(lits))
        # how many literals each piece occurs in: a literal is filed under its rarest piece
        counts = Counter(p for lits in usable.values() for lit in lits for p in set(_pieces(lit)))
        buckets: dict[str, dict[str, set[int]]] = {}
        for i, lits in usable.items():
            for lit in lits:
                key = min(_pieces(lit), key=lambda p: (counts[p], p))
                buckets.setdefault(key, {}).setdefault(lit, set()).add(i)
        self._always = tuple(always)
        self._buckets = {k: tuple((lit, frozenset(rules)) for lit, rules in v.items()) for k, v in buckets.items()}
        self._keys = frozenset(self._buckets)
        self._sizes = tuple(sorted({len(k) for k in self._keys}))

    def candidates(self, text: str) -> list[int]:
        """Indices of the rules that may match ``text``, ascending."""
        keys = self._keys
        # testing each key costs about half as much as cutting one piece of text
        if 2 * len(text) * len(self._sizes) > len(keys):
            present = {k for k in keys if k in text}
        else:
            present = set()
            for size in self._sizes:
                present.update(text[j:j + size] for j in range(len(text) - size + 1))
            present &= keys
        found = set(self._always)
        for key in present:
            for lit, rules in self._buckets[key]:
                if not rules <= found and lit in text:
                    found |= rules
        return sorted(found)


def _pieces(literal: str) -> list[str]:
    """The three-character pieces of ``literal`` (the literal itself when shorter)."""
    if len(literal) <= 3:
        return [literal]
    return [literal[j:j + 3] for j in range(len(literal) - 2)]
