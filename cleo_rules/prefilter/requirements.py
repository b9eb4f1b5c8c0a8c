"""Requirements of a pattern: conditions every text it matches satisfies.

:func:`literal_requirements` reads them off the parsed pattern (see
:mod:`cleo_rules.pattern_tree`): strings the text must contain, prefixes it must
start with, whole words it must hold, words that must come among its first
few. A text that fails one cannot match, so the pattern need not be searched
(:class:`cleo_rules.prefilter.LiteralIndex` finds the rules whose
requirements a text meets). :func:`first_ascii_chars` gives the characters a
match can start with, a gate for the vocabulary's token patterns.

Every answer errs on the safe side: a condition is kept only when it holds
for every match, and a pattern the analysis cannot read has none.
"""

from __future__ import annotations

import functools

import regex

from ..incremental import memoized

from ..pattern_tree import UNBOUNDED, C, first_chars, is_repeat, parse

__all__ = ["Condition", "first_ascii_chars", "literal_requirements"]

#: A condition on the text, ``(prefixes, anywhere, words, early)``: the text
#: starts with one of ``prefixes``, contains one of ``anywhere``, has one of
#: ``words`` as a whole word (a maximal run of word characters, ``\w+``), or
#: has, for one ``(word, n)`` of ``early``, that word among its first ``n``
#: whole words. A pattern's requirements are conditions that all hold for
#: every text it matches.
Condition = tuple

_MAX_SET = 64      # strings an exact set may hold before it is cut
_MAX_CLASS = 8     # characters a class may hold to count as exact
_MAX_CLAUSES = 6   # conditions kept for an alternation

_AT_START = (C.AT_BEGINNING, C.AT_BEGINNING_STRING)
_EMPTY = frozenset([""])
_WORD_RUN = regex.compile(r"[A-Za-z0-9_]+")


def _cond(prefixes=(), anywhere=(), words=(), early=()) -> Condition:
    return (tuple(prefixes), tuple(anywhere), tuple(words), tuple(early))


def _class_exact(av) -> frozenset | None:
    """The characters of a small positive class, or None."""
    chars: set[str] = set()
    for op, a in av:
        if op is C.LITERAL:
            chars.add(chr(a))
        elif op is C.RANGE and a[1] - a[0] < _MAX_CLASS:
            chars.update(chr(c) for c in range(a[0], a[1] + 1))
        else:
            return None
    return frozenset(chars) if 0 < len(chars) <= _MAX_CLASS else None


def _leading_word(s: str, bounded_after: bool) -> str | None:
    """The whole word ``s`` starts with, when it starts a word in the text."""
    m = _WORD_RUN.match(s) if s.isascii() else None
    if m is None or (m.end() == len(s) and not bounded_after):
        return None
    return m.group()


def _words_unit(items) -> bool:
    """Whether ``items`` match exactly one whole word and what follows it.

    ``\\w+`` and then at least one non-word character (``\\w+,? ``): the word
    cannot stop short, since a word character cannot follow it.
    """
    if not items or not is_repeat(items[0][0]) or items[0][1][0] < 1:
        return False
    lo, hi, body = items[0][1]
    if len(body) != 1 or not _only_word_chars(body[0]):
        return False
    required = False
    for op, av in items[1:]:
        if is_repeat(op) and len(av[2]) == 1 and _no_word_chars(av[2][0]):
            required = required or av[0] >= 1
        elif _no_word_chars((op, av)):
            required = True
        else:
            return False
    return required


def _only_word_chars(item) -> bool:
    op, av = item
    return (op is C.IN and av == [(C.CATEGORY, C.CATEGORY_WORD)]) or (op is C.CATEGORY and av is C.CATEGORY_WORD)


def _no_word_chars(item) -> bool:
    """A single character that is never a word character (``regex``'s ``\\w`` is wider than ASCII)."""
    op, av = item
    if op is C.LITERAL:
        return _never_word(chr(av))
    if op is C.IN:
        return all(o is C.LITERAL and _never_word(chr(a)) for o, a in av)
    return False


def _words_behind(av, multiline: bool) -> int | None:
    """For a lookbehind of the start and whole words (``(?<=^(?:\\w+ ){1,3})``), how many at most."""
    direction, body = av
    if direction != -1 or multiline or len(body) != 2 or body[0] != (C.AT, C.AT_BEGINNING):
        return None
    op, rep = body[1]
    if not is_repeat(op) or rep[1] > UNBOUNDED or not _words_unit(rep[2]):
        return None
    return rep[1]


def _ends_non_word(strings) -> bool:
    """Whether every one of ``strings`` ends in a character that is never a word character."""
    return all(r and _never_word(r[-1]) for r in strings)


def _never_word(c: str) -> bool:
    """Whether ``c`` is a word character to no engine (ASCII and not ``[A-Za-z0-9_]``)."""
    return c.isascii() and not (c.isalnum() or c == "_")


def _is_word(s: str) -> bool:
    return s.isascii() and all(c.isalnum() or c == "_" for c in s)


def _whole_words(s: str, bounded_before: bool, bounded_after: bool) -> list:
    """The whole words a text holds wherever it holds ``s`` (ASCII only).

    A run of word characters inside ``s`` with a non-word character on
    each side is a whole word; at either end of ``s``, a word boundary of
    the pattern stands in for that character.
    """
    if not s.isascii():
        return []
    out = []
    for m in _WORD_RUN.finditer(s):
        if (m.start() > 0 or bounded_before) and (m.end() < len(s) or bounded_after):
            out.append(m.group())
    return out


class _Seq:
    """Walks one sequence of parsed items (see :func:`_analyse`).

    A *run* is a stretch of exact items: the set of strings it can spell.
    Zero-width items (anchors, boundaries, lookarounds) do not end a run,
    since what is consumed either side of them is adjacent in the text.
    """

    def __init__(self, at_start: bool, bounded: bool, word_pos: int | None):
        # the most whole words the text can hold before the run (None: unknown)
        self.word_pos = 0 if at_start else word_pos
        self.consumed = False         # something before the run may have consumed text
        self.run = _EMPTY             # strings the current run of exact items spells
        self.run_at_start = at_start  # the run begins at text position 0
        self.run_bounded = bounded    # a word boundary (or a non-word character) comes right before the run
        self.boundary_last = False    # a word boundary came right after the last item
        self.exact = True             # every item so far was exact
        self.conditions: list = []

    def close(self):
        if "" not in self.run:
            run = sorted(self.run)
            before = self.run_bounded or self.run_at_start
            if self.run_at_start:
                self.conditions.append(_cond(prefixes=run))
            elif before and self.boundary_last:
                # bounded by \b both sides: a string of word characters is a whole word
                self.conditions.append(_cond(anywhere=[r for r in run if not _is_word(r)],
                                             words=[r for r in run if _is_word(r)]))
            else:
                self.conditions.append(_cond(anywhere=run))
            if self.word_pos and not self.run_at_start:
                # the run starts a word, after at most word_pos whole words (at the
                # start of the text, the prefix above says more)
                first = [_leading_word(r, self.boundary_last) for r in run]
                if all(first):
                    self.conditions.append(_cond(early=sorted({(w, self.word_pos + 1) for w in first})))
            # the whole words inside the strings ("is" and "it" in "is it" before
            # \b): the first of one of them is in the text, and the last
            if not all(_is_word(r) for r in run):
                whole = [_whole_words(r, before, self.boundary_last) for r in run]
                if all(whole):
                    for pick in (0, -1):
                        condition = _cond(words=sorted({w[pick] for w in whole}))
                        if condition not in self.conditions:
                            self.conditions.append(condition)
        if self.run != _EMPTY:
            self.consumed = True
            self.word_pos = None
        self.run = _EMPTY
        self.run_at_start = self.run_bounded = self.boundary_last = False

    def extend(self, strings: frozenset):
        if len(self.run) * len(strings) > _MAX_SET:
            # too many strings: the run is cut here; when every string so far
            # ends in a non-word character, the next run starts a word
            after_space = _ends_non_word(self.run)
            self.close()
            self.run_bounded = after_space
            self.exact = False
        self.run = frozenset(a + b for a in self.run for b in strings)
        self.boundary_last = False

    def opaque(self, conditions=(), words: int | None = None):
        """An item that is not exact: the run ends, the item's own conditions hold.

        ``words``: the item is whole words, at most that many (see :func:`_words_unit`).
        """
        self.close()
        self.conditions.extend(conditions)
        self.consumed = True
        self.exact = False
        self.word_pos = None if words is None or self.word_pos is None else self.word_pos + words


def _analyse(items, at_start: bool = False, multiline: bool = False, bounded: bool = False,
             word_pos: int | None = None):
    """``(exact, conditions)`` for a sequence of parsed items.

    ``exact`` is the finite set of strings the sequence can consume (a
    superset, since assertions are ignored), or None when it is not small
    and finite; ``conditions`` are conditions every match of the sequence
    satisfies (see :data:`Condition`). ``at_start``: the sequence begins at
    the start of the text, so its first run of exact items is a prefix;
    ``bounded``: a word boundary comes right before the sequence;
    ``word_pos``: the sequence starts a word, after at most that many whole words.
    """
    seq = _Seq(at_start, bounded, word_pos)
    for op, av in items:
        if op is C.LITERAL:
            seq.extend(frozenset([chr(av)]))
        elif op is C.AT:
            if seq.run == _EMPTY:
                if av in _AT_START and not multiline and not seq.consumed:
                    seq.run_at_start = True
                    seq.word_pos = 0
                if av is C.AT_BOUNDARY:
                    seq.run_bounded = True
            if av is C.AT_BOUNDARY and seq.run != _EMPTY:
                seq.boundary_last = True
            # anchors and boundaries consume nothing: the run goes on
        elif op is C.ASSERT:
            # a lookaround that must succeed: what it needs is in the text too
            seq.conditions.extend(_analyse(av[1], False, multiline)[1])
            behind = _words_behind(av, multiline)
            if behind is not None and seq.run == _EMPTY:
                seq.word_pos = behind
        elif op is C.ASSERT_NOT:
            continue
        elif op is C.IN:
            chars = _class_exact(av)
            if chars is None:
                seq.opaque()
            else:
                seq.extend(chars)
        elif op is C.SUBPATTERN or op is getattr(C, "ATOMIC_GROUP", None):
            here = seq.run == _EMPTY
            exact, conditions = _analyse(av[-1] if op is C.SUBPATTERN else av, here and seq.run_at_start,
                                         multiline, here and seq.run_bounded, seq.word_pos if here else None)
            if exact is not None:
                seq.extend(exact)
            else:
                seq.opaque(conditions)
        elif op is C.BRANCH:
            here = seq.run == _EMPTY
            alts = [_analyse(alt, here and seq.run_at_start, multiline, here and seq.run_bounded,
                             seq.word_pos if here else None) for alt in av[1]]
            exacts = [exact for exact, _ in alts if exact is not None]
            if len(exacts) == len(alts):
                union = frozenset().union(*exacts)
                # the alternatives may know more than their strings (whole words,
                # lookarounds): that holds too, beside the run going on
                if any(conditions != [_cond(anywhere=sorted(exact))]
                       for exact, (_, conditions) in zip(exacts, alts)):
                    seq.conditions.extend(_either([conditions for _, conditions in alts]))
                seq.extend(union)
                continue
            seq.opaque(_either([conditions for _, conditions in alts]))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            lo, hi, body = av
            exact, conditions = _analyse(body, False, multiline)
            if exact is not None and (lo, hi) == (0, 1):
                seq.extend(exact | _EMPTY)
            elif exact is not None and (lo, hi) == (1, 1):
                seq.extend(exact)
            else:
                unit = _words_unit(body)
                # a word ends each round with a non-word character: after one
                # round at least, the next run starts a word
                starts_word = unit and (lo >= 1 or (seq.run != _EMPTY and _ends_non_word(seq.run)))
                seq.opaque(conditions if lo >= 1 else (), hi if unit and hi <= UNBOUNDED else None)
                seq.run_bounded = starts_word
        else:
            seq.opaque()
    exact = seq.run if seq.exact else None
    seq.close()
    return exact, seq.conditions


def _union(conditions) -> Condition:
    early: dict[str, int] = {}
    for c in conditions:
        for word, n in c[3]:
            early[word] = max(n, early.get(word, 0))
    return _cond(*(sorted({s for c in conditions for s in c[k]}) for k in range(3)), early=sorted(early.items()))


def _either(alternatives) -> list:
    """Conditions that hold whichever alternative matched.

    ``(A1 and A2) or (B1 and B2)`` implies ``(A1 or B1) and (A1 or B2) and
    (A2 or B1) and (A2 or B2)``: each alternative's best few conditions are
    crossed, clauses another clause implies are dropped, and the most
    selective of the rest kept.
    """
    if not alternatives or any(not conditions for conditions in alternatives):
        return []
    picks = [_prune(_usable(conditions))[:3] for conditions in alternatives]
    if any(not p for p in picks):
        return []
    clauses = [()]
    for p in picks:
        while len(p) > 1 and len(clauses) * len(p) > 24:
            p = p[:-1]
        clauses = [c + (x,) for c in clauses for x in p]
    return _prune(_union(clause) for clause in clauses)[:_MAX_CLAUSES]


def _implies(a, b) -> bool:
    """Whether a text meeting condition ``a`` surely meets condition ``b``.

    Each string ``a`` offers must imply one ``b`` offers: a prefix or word
    holds every string inside it, an early word is a word, and so on.
    """
    if not any(a):
        return False
    b_prefixes, b_anywhere, b_words, b_early = b
    early = dict(b_early)
    for kind, part in enumerate(a):
        for offer in part:
            text = offer[0] if kind == 3 else offer
            if b_anywhere and _contains_any(text, b_anywhere):
                continue  # whatever the offer is, the text contains it
            if kind == 0 and b_prefixes and text.startswith(b_prefixes):
                continue
            if kind >= 2 and text in b_words:
                continue
            if kind == 3 and early.get(text, 0) >= offer[1]:
                continue
            return False
    return True


def _contains_any(text: str, strings: tuple) -> bool:
    for q in strings:
        if q in text:
            return True
    return False


def _prune(conditions) -> list:
    """``conditions`` without those another one implies (they add nothing to the AND)."""
    out: list = []
    for c in sorted(set(conditions), key=_score, reverse=True):
        if not any(_implies(kept, c) for kept in out):
            out = [kept for kept in out if not _implies(c, kept)] + [c]
    return sorted(out, key=_score, reverse=True)


def _usable(conditions, min_length: int = 2) -> list:
    """Conditions worth checking: no empty string, nothing too short to tell texts apart."""
    return [c for c in conditions
            if not any("" in part for part in c) and any(c)
            and all(len(a) >= min_length for a in c[1])]


def _score(condition) -> float:
    """Higher is more selective: minus a rough chance that a message meets the condition.

    A prefix is rarer than a whole word, a whole word than a string found
    anywhere; each is rarer the more letters and digits it has, and a
    condition with more strings is met more often. Only the order matters:
    it decides which conditions of an alternation are kept.
    """
    prefixes, anywhere, words, early = condition

    def size(s):  # spacing and punctuation tell little
        return max(1, sum(c.isalnum() for c in s))

    return -(sum(0.3 ** size(p) for p in prefixes) + sum(2 * 0.3 ** size(w) for w in words)
             + sum(3 * 0.3 ** size(a) for a in anywhere) + sum(n * 0.5 * 0.3 ** size(w) for w, n in early))


@memoized
@functools.lru_cache(maxsize=4096)
def literal_requirements(pattern: str, *, min_length: int = 2) -> tuple[Condition, ...] | None:
    """Conditions every text that ``pattern`` matches satisfies, best first; or None.

    Each condition is ``(prefixes, anywhere, words, early)`` (see :data:`Condition`).
    All of them hold for every match, so a text failing any one cannot
    match and need not be searched. A condition with a string shorter than
    ``min_length`` to be found anywhere in the text is dropped (it holds for
    nearly every message). Patterns with inline flags for case or verbose
    syntax, or that the ``re`` parser cannot read, get None (always searched). The conditions of a pattern are
    remembered by its text, and shared: nothing may change them.
    """
    parsed = parse(pattern)
    if parsed is None:  # regex-only syntax: no prefilter
        return None
    flags = parsed.state.flags
    if flags & (C.SRE_FLAG_IGNORECASE | C.SRE_FLAG_VERBOSE):
        return None
    _, conditions = _analyse(list(parsed.data), False, bool(flags & C.SRE_FLAG_MULTILINE))
    kept = _prune(_usable(conditions, min_length))
    return tuple(kept) if kept else None


def first_ascii_chars(pattern: str) -> frozenset:
    """The ASCII characters a match of ``pattern`` can start with.

    Every ASCII character when the pattern cannot be read or may match the
    empty string, so the answer is safe to use as a gate.
    """
    parsed = parse(pattern)
    if parsed is None:
        return frozenset(chr(c) for c in range(128))
    if parsed.state.flags & C.SRE_FLAG_IGNORECASE:
        return frozenset(chr(c) for c in range(128))
    if parsed.getwidth()[0] == 0:
        return frozenset(chr(c) for c in range(128))
    return frozenset(c for c in first_chars(list(parsed.data)) if c.isascii())
