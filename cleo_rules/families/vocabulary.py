"""The vocabulary family: low-content words and phrases, by role, and the vocabulary test.

A ``vocabulary`` file lists sets of words and phrases that carry no topic
("yes", "the second one", "thanks"), each with a ``role``. A short message
every word of which the vocabulary covers is a ``follow_up``, named by the
set with the most telling role among those covering it
(:data:`ROLE_PRIORITY`; filler never names one). The same cover tells the
follow-up patterns which words around their match are topic words
(:meth:`cleo_rules.walk.Walk.topic_counts`): :class:`Vocabulary` is that
cover, shared by the lanes of a pack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import regex

from ..explain import Attempt
from ..kinds import DecisionKind, FileKind, RuleKind
from ..prefilter import first_ascii_chars
from ..text import WORD, normalize
from ..walk import Lane, LaneOrder, limited
from .base import Family, RuleItem, Tally
from .patterns import listed, short_of_follow_up

__all__ = ["ROLE_PRIORITY", "VOCABULARY", "VocabSet", "Vocabulary", "VocabularyFamily", "VocabularyLane"]

# Roles in the order they name a vocabulary follow-up; filler never does.
ROLE_PRIORITY = ("choice", "nod", "negation", "closing", "request", "anaphor")


@dataclass(frozen=True)
class VocabSet:
    """A vocabulary set: low-content words and phrases with a ``role``.

    ``file`` and ``line`` name where it is defined, ``pointer`` its place in
    that file's document (``/sets/2``).
    """

    id: str
    role: str
    description: str
    words: tuple[str, ...]
    token_patterns: tuple[str, ...]
    examples: tuple[str, ...]
    counterexamples: tuple[str, ...]
    file: str
    line: int
    generate: Mapping | None = None
    kind: RuleKind = RuleKind.VOCABULARY
    pointer: str = ""


class Vocabulary:
    """The cover of a message's words by a pack's vocabulary sets; immutable, so shared by every thread.

    Single words answer in one dict lookup; longer phrases are tried only
    from a word that starts one, longest first; the sets' token patterns
    (``\\d+``) are tried on a word no entry names, as one alternation.
    """

    def __init__(self, sets, timeout: float):
        self.sets = tuple(sets)
        self._timeout = timeout
        phrases: dict[tuple[str, ...], int] = {}
        token_res = []
        for index, vset in enumerate(self.sets):
            for entry in vset.words:
                key = tuple(WORD.findall(normalize(entry)))
                if key:
                    phrases.setdefault(key, index)
            for tp in vset.token_patterns:
                token_res.append((index, regex.compile(tp)))
        self._single = {k[0]: v for k, v in phrases.items() if len(k) == 1}
        longest: dict[str, int] = {}
        for key in phrases:
            if len(key) > 1:
                longest[key[0]] = max(longest.get(key[0], 1), len(key))
        self._phrase_len = longest
        self._phrases = phrases
        self._token_res = tuple(token_res)
        # all token patterns in one alternation: the first that matches the whole token wins
        self._token_re = regex.compile("|".join(f"(?P<t{j}>{rx.pattern})" for j, (_, rx) in enumerate(token_res))) \
            if len(token_res) > 1 else None
        # ASCII characters a token pattern can start with (anything else is tried)
        starts: set[str] = set()
        for _, rx in token_res:
            starts |= first_ascii_chars(rx.pattern)
        self._token_starts = frozenset(starts)
        # the set reported for a vocabulary follow-up: most telling role first
        self._rank = tuple(ROLE_PRIORITY.index(s.role) if s.role in ROLE_PRIORITY else None for s in self.sets)

    def _index(self, token: str) -> int | None:
        """The set whose token pattern matches the whole ``token``, or None."""
        first = token[:1]
        if first.isascii() and first not in self._token_starts:
            return None  # no token pattern can start with this character
        if self._token_re is not None:
            try:
                m = self._token_re.fullmatch(token, timeout=self._timeout)
            except TimeoutError:
                m = False  # find which pattern runs out of time, one by one
            if m is not False:
                # every alternative is a named group: a match has a lastgroup
                return None if m is None else self._token_res[int(m.lastgroup[1:])][0]  # pyright: ignore[reportOptionalSubscript]  # every alternative is a named group, so a match has a lastgroup
        for index, rx in self._token_res:
            if limited(self.sets[index].id, rx.fullmatch, token, self._timeout):
                return index
        return None

    def cover(self, tokens, stop_at_gap: bool = False):
        """Greedy longest-phrase cover of ``tokens``.

        Returns ``(head, covered, gap)``: ``head`` is ``(set_index, first,
        last)`` (token indices, end exclusive), ``covered`` a list of
        booleans, one per token. ``head`` is the entry whose set has the most
        telling role (:data:`ROLE_PRIORITY`), the earliest among equals;
        filler never heads. With ``stop_at_gap``, the first token no entry
        covers ends the walk: ``head`` is then None (the vocabulary test has
        failed) and ``gap`` that token's index; otherwise ``gap`` is None.
        """
        n = len(tokens)
        covered = [False] * n
        head = None
        head_rank = 0
        single, phrases, phrase_len, rank = self._single, self._phrases, self._phrase_len, self._rank
        i = 0
        while i < n:
            token = tokens[i]
            index, length = None, 1
            longest = phrase_len.get(token)
            if longest:
                for size in range(min(longest, n - i), 1, -1):
                    index = phrases.get(tuple(tokens[i:i + size]))
                    if index is not None:
                        length = size
                        break
            if index is None:
                index = single.get(token)
                if index is None and self._token_res:
                    index = self._index(token)
                if index is None:
                    if stop_at_gap:
                        return None, covered, i
                    i += 1
                    continue
            for j in range(i, i + length):
                covered[j] = True
            r = rank[index]
            if r is not None and (head is None or r < head_rank):
                head = (index, i, i + length)
                head_rank = r
            i += length
        return head, covered, None


class VocabularyLane(Lane):
    """The vocabulary test: a short message every word of which the vocabulary covers is a follow-up."""

    stage = "vocabulary"
    order = LaneOrder.VOCABULARY
    per_rule = False
    untried_note = "not tried: the walk stopped before it"

    def __init__(self, sets, vocabulary: Vocabulary, settings):
        self.rules = tuple(sets)
        self.vocabulary = vocabulary
        self._cover = vocabulary.cover
        self._ids = tuple(vset.id for vset in self.rules)
        self.longest = settings.max_follow_up_words

    def passed_note(self, words: int) -> str:
        # a message over max_follow_up_words: when nothing takes it, the walk's stop says why (Recorder.stopped)
        return self.untried_note

    def search(self, walk, candidates):
        cover, recorder = walk.cover, walk.recorder
        if cover is not None:  # worked out for a follow-up pattern's topic words
            head = cover[0] if all(cover[1]) else None
        else:
            cover = self._cover(walk.tokens, stop_at_gap=True)
            head = cover[0]
        if recorder is not None:
            recorder.attempt(self, 0, self._attempt(head, cover[1], cover[2], walk.tokens))
        # stopped at a gap, the cover is partial: a later lane counts topic words afresh
        walk.cover = None if cover[2] is not None else cover
        if head is None:
            return None
        index, first, last = head
        spans = walk.spans
        if spans is None:
            spans = walk.word_spans()
        return self._ids[index], (spans[first][0], spans[last - 1][1])

    def _attempt(self, head, covered, gap: int | None, tokens) -> Attempt:
        """The test's attempt for ``explain``: the set that names the follow-up, or the words it stopped at."""
        if head is not None:
            return Attempt(self.stage, self.rules[head[0]].id, True, note="every word is in the vocabulary")
        content = [tokens[gap]] if gap is not None else [t for t, c in zip(tokens, covered) if not c]
        if gap is not None:
            note = f"word not in the vocabulary: {content[0]} (the test stops at the first)"
        elif content:
            note = f"words not in the vocabulary: {', '.join(content)}"
        else:
            note = "only filler words"
        return Attempt(self.stage, None, False, note=note)


class VocabularyFamily(Family):
    """``kind: vocabulary``: :class:`VocabSet` rules (its ``sets:``), and the vocabulary test."""

    kind = FileKind.VOCABULARY
    items = "sets"
    rule_kind = RuleKind.VOCABULARY
    decides = DecisionKind.FOLLOW_UP
    listed = 1
    noun = "the vocabulary test"
    tally = Tally(2, "vocabulary_sets", "vocabulary sets")
    rule_class = VocabSet

    def build(self, item: dict, at: RuleItem) -> VocabSet | None:
        from ..reading.validate import lint_pattern

        seen = at.build.notes.setdefault(self.kind, {})  # every entry of every set: a word belongs to one
        words = [w for w in listed(item.get("words")) if isinstance(w, str)]
        for j, w in enumerate(words):
            key = " ".join(regex.findall(r"\w+(?:'\w+)*", w.casefold()))
            wptr = at.at("words", j)
            if not key:
                at.problem("E142", f"vocabulary entry {w!r} has no word in it", wptr, rank=6,
                           help="remove the entry; punctuation is ignored when matching")
                continue
            if key in seen:
                other, osrc, optr = seen[key]
                line_o, col_o = osrc.where(optr)
                same = other == at.id
                at.problem("E133", f"vocabulary entry {w!r} is listed twice in {at.id}" if same else
                           f"vocabulary entry {w!r} is also in {other} ({osrc.display}:{line_o}:{col_o}); the sets "
                           "contradict", wptr, rank=6,
                           help="remove the repeat" if same else
                           "a word belongs to one set, or which rule fires is ambiguous; keep it in one")
            else:
                seen[key] = (at.id, at.src, wptr)
        patterns = []
        for j, tp in enumerate(listed(item.get("token_patterns"))):
            if not isinstance(tp, str):  # the schema's finding
                continue
            compiled, found = lint_pattern(at.src, at.at("token_patterns", j), at.id, tp)
            at.build.problems.extend(found)
            if compiled is not None:
                patterns.append(tp)
        if not at.claimed or at.id is None:
            return None
        return VocabSet(id=at.id, role=item.get("role", "filler"), description=item.get("description", ""),
                        words=tuple(words), token_patterns=tuple(patterns), examples=listed(item.get("examples")),
                        counterexamples=listed(item.get("counterexamples")), file=at.src.display, line=at.line,
                        generate=item.get("generate"), pointer=at.pointer)

    def lanes(self, rules, context):
        return [VocabularyLane(rules, context.vocabulary, context.settings)]

    @property
    def corpus_kind(self) -> str:
        return DecisionKind.FOLLOW_UP

    def miss(self, pack, rule, explanation, taken):
        short = short_of_follow_up(pack, explanation, taken)
        if short is not None:
            return short
        d = explanation.decision
        if d.rule and pack.rule(d.rule).kind != RuleKind.VOCABULARY:
            return (f"{taken}: follow-up patterns are tried before the vocabulary test; narrow {d.rule} or move the "
                    f"example")
        test = next((a for a in reversed(explanation.attempts) if a.stage == "vocabulary"), None)
        if test is not None and not test.fired:
            return (f"the vocabulary test does not hold: {test.note}; add them to a vocabulary set, or remove the "
                    f"example")
        if d.rule and d.rule != rule.id:
            other = pack.rule(d.rule)
            return (f"the vocabulary test names {d.rule}: its role {other.role!r} outranks this set's {rule.role!r} "
                    f"(choice, nod, negation, closing, request, anaphor); move the example to {d.rule}")
        return "add its missing words to this set"


VOCABULARY = VocabularyFamily()
