"""Which rules can match a text, found with one scan of the text.

:class:`LiteralIndex` holds every rule's requirements (see
:mod:`.requirements`) and finds every literal of every rule that occurs in a
text with a single ``findall`` of one compiled pattern: the literals as a
trie (alternatives branch on one character, so a position costs a few
character comparisons whatever the pack's size) inside a lookahead, so that
matches may overlap. At each position the longest literal is reported; the
literals it contains are implied. The work, and the memory it touches, is one
compiled program and a few small sets, which matters when the caches are
cold (a turn classifies right after the previous turn's embedding has filled
them). :func:`holds` answers the same question plainly, for one rule.
"""

from __future__ import annotations

import re
from typing import Sequence

import regex

from ..text import word_pattern

__all__ = ["LiteralIndex", "holds", "words_of", "words_of_tokens"]

_RUN_ASCII = re.compile(r"\w+", re.ASCII)
_RUN = regex.compile(r"\w+")  # the engine the rules run on: its \w and \b agree


def _trie_pattern(literals, block: int = 24) -> str:
    """A regular expression matching any of ``literals``, longest first at each position.

    The first characters are split into blocks, each behind a lookahead for
    its characters: a position whose character starts no literal is turned
    away by a few class tests rather than by trying every first character
    (a pack with many scripts has hundreds).
    """
    trie: dict = {}
    for lit in literals:
        node = trie
        for ch in lit:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node) -> str:
        ends = "" in node
        alts = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 and len(alts[0]) == 1 else "(?:" + "|".join(alts) + ")"
        return body + "?" if ends else body  # greedy: the longer literal is tried first

    firsts = sorted(ch for ch in trie if ch)
    if len(firsts) <= block:
        return emit(trie)
    blocks = []
    for i in range(0, len(firsts), block):
        chars = firsts[i:i + block]
        cls = "".join(re.escape(ch) for ch in chars)
        blocks.append(f"(?=[{cls}])" + emit({ch: trie[ch] for ch in chars}))
    return "(?:" + "|".join(blocks) + ")"


def words_of(text: str) -> list:
    """The whole words of ``text`` in order: its maximal runs of word characters (``\\w+``)."""
    return _RUN_ASCII.findall(text) if text.isascii() else _RUN.findall(text)


def words_of_tokens(tokens, text: str) -> list:
    """:func:`words_of` from ``text``'s tokens (``\\w+(?:'\\w+)*``, every word character in one)."""
    if "'" not in text:
        return tokens
    return [w for t in tokens for w in t.split("'")]


def holds(conditions, text: str, words=None) -> bool:
    """Whether ``text`` meets every condition (the plain, slow reference).

    ``words``: the text's whole words in order (:func:`words_of`), when known.
    """
    if words is None:
        words = words_of(text)
    return all(text.startswith(prefixes) or any(a in text for a in anywhere) or any(w in words for w in whole)
               or any(w in words[:n] for w, n in early)
               for prefixes, anywhere, whole, early in conditions)


def _merge(postings) -> tuple:
    """Several ``{rule: bits}`` postings as one tuple of ``(rule, bits)``."""
    merged: dict[int, int] = {}
    for entry in postings:
        for rule, bits in entry.items():
            merged[rule] = merged.get(rule, 0) | bits
    return tuple(merged.items())


class LiteralIndex:
    """Candidate rules for a text, in rule order.

    ``requirements[i]`` holds rule ``i``'s conditions (see
    :data:`.requirements.Condition`): "the text starts with one
    of these, contains one of those, has one of these whole words, or one of
    those among its first few"; all must hold. None (or no conditions) makes
    the rule a candidate for every text, or, when ``caps[i]`` is a number,
    for every text of at most that many words (a rule that takes no longer
    message). Immutable after construction; safe to share between threads.

    The scan looks for *keys*: the first ``key_length`` characters of each
    literal (a text holding a literal holds its key, so a found key may
    stand for a longer literal that is not there: the answer can hold a
    rule that then fails its search, never miss one that would match).
    One ``findall`` finds the keys anywhere in the text, one ``match`` the
    prefix keys it starts with, and each of the text's words is looked up
    once; a rule is a candidate when each of its conditions is met.
    """

    __slots__ = ("size", "unconditional", "_always", "_capped", "_full", "_find", "_starts", "_implied",
                 "_implied_prefix", "_words", "_early", "_early_depth")

    def __init__(self, requirements: Sequence[Sequence[tuple] | None], *, key_length: int = 6,
                 caps: Sequence[int | None] | None = None):
        self.size = len(requirements)
        if caps is not None and len(caps) != self.size:
            raise ValueError(f"{len(caps)} word caps given for {self.size} rules")
        always = []
        capped = []
        full: dict[int, int] = {}
        postings: tuple[dict, dict, dict] = ({}, {}, {})  # prefix keys, keys, words
        early: dict[str, dict[tuple[int, int], int]] = {}  # word: {(rule, within): bits}

        def post(kind, key, rule, bit):
            entry = postings[kind].setdefault(key, {})
            entry[rule] = entry.get(rule, 0) | 1 << bit

        for i, conds in enumerate(requirements):
            kept = [c for c in (conds or ()) if any(c) and not any("" in part for part in c)]
            if not kept:
                if caps is not None and caps[i] is not None:
                    capped.append((i, caps[i]))
                else:
                    always.append(i)
                continue
            full[i] = (1 << len(kept)) - 1
            for bit, (prefixes, anywhere, words, first) in enumerate(kept):
                for lit in prefixes:
                    post(0, lit[:key_length], i, bit)
                for lit in anywhere:
                    post(1, lit[:key_length], i, bit)
                for word in words:
                    post(2, word, i, bit)
                for word, within in first:
                    entry = early.setdefault(word, {})
                    entry[(i, within)] = entry.get((i, within), 0) | 1 << bit
        prefix, anywhere, words = postings
        # each scan reports the longest key at a position; the keys inside it are there too
        keys = sorted(anywhere)
        self._implied = {k: _merge(anywhere[j] for j in keys if j in k) for k in keys}
        starts = sorted(prefix)
        self._implied_prefix = {k: _merge(prefix[j] for j in starts if k.startswith(j)) for k in starts}
        self._words = {w: tuple(rules.items()) for w, rules in words.items()}
        self._early = {w: tuple((rule, within, bits) for (rule, within), bits in entry.items())
                       for w, entry in early.items()}
        self._early_depth = max((within for entry in early.values() for _, within in entry), default=0)
        self._find = re.compile(f"(?=({_trie_pattern(keys)}))").findall if keys else None
        self._starts = re.compile(_trie_pattern(starts)).match if starts else None
        self._always = tuple(always)
        self._capped = tuple(capped)
        #: the rules with no condition: a candidate for every text (within its word cap)
        self.unconditional = frozenset(always) | frozenset(i for i, _ in capped)
        self._full = full

    def candidates(self, text: str, words=None, count: int | None = None) -> list[int]:
        """Indices of the rules that may match ``text``, ascending.

        ``words``: the text's whole words in order (:func:`words_of`), when
        already known; ``count``: how many words the walk counts in it (its
        tokens, :func:`~cleo_rules.text.word_pattern`), when known. A rule with
        no condition and a word cap (``caps``) is a candidate only for a text
        of at most that many words.
        """
        if words is None:
            words = words_of(text)
        marks: dict[int, int] = {}
        get = marks.get
        if self._find is not None:
            implied = self._implied
            for key in self._find(text):
                for rule, bits in implied[key]:
                    marks[rule] = get(rule, 0) | bits
        if self._starts is not None:
            m = self._starts(text)
            if m is not None:
                for rule, bits in self._implied_prefix[m.group()]:
                    marks[rule] = get(rule, 0) | bits
        if self._words:
            lookup = self._words.get
            for word in words:
                postings = lookup(word)
                if postings is not None:
                    for rule, bits in postings:
                        marks[rule] = get(rule, 0) | bits
        if self._early:
            lookup = self._early.get
            for position, word in enumerate(words[:self._early_depth]):
                postings = lookup(word)
                if postings is not None:
                    for rule, within, bits in postings:
                        if position < within:
                            marks[rule] = get(rule, 0) | bits
        full = self._full
        out = [rule for rule, bits in marks.items() if bits == full[rule]]
        if self._always:
            out.extend(self._always)
        if self._capped:
            if count is None:
                count = len(word_pattern(text).findall(text))
            out.extend(rule for rule, cap in self._capped if count <= cap)
        if len(out) > 1:
            out.sort()
        return out
