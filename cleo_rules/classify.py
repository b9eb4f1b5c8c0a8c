"""Classification of one message with a compiled pack.

The decision is a frozen value: what kind of turn this is, which rule said so,
where in the message the rule matched, and the query to search (``None`` when
nothing is searched).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

SKIP = "skip"
CORRECTION = "correction"
FOLLOW_UP = "follow_up"
SUBSTANTIVE = "substantive"
KINDS = (SKIP, CORRECTION, FOLLOW_UP, SUBSTANTIVE)


@dataclass(frozen=True)
class Decision:
    """What to do with one user turn.

    ``span`` is ``(start, end)`` in the original message (Python string
    indices) of the text the rule matched, ``matched`` that text. ``query`` is
    what retrieval should search: ``None`` for ``skip``, the message as typed
    for ``substantive`` and ``correction`` (and for a ``follow_up`` with no
    substantive message in history), else the pack's combine template over
    ``anchor`` (the last substantive message in history) and the message.
    """

    kind: str
    rule: str | None
    span: tuple[int, int] | None
    matched: str | None
    query: str | None
    anchor: str | None
    message: str
    pack: str
    pack_version: str
    pack_hash: str
    note: str | None = None  # e.g. "timeout in correction.already-tried"

    @property
    def searched(self) -> bool:
        return self.query is not None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["span"] = list(self.span) if self.span else None
        return d


def _decision(**fields) -> Decision:
    """A :class:`Decision` from all of its fields, set in one step.

    The same object the dataclass constructor makes (equal, hashed alike),
    at half the cost: a frozen dataclass sets each field through
    ``object.__setattr__``, and this runs once per message.
    """
    decision = object.__new__(Decision)
    object.__setattr__(decision, "__dict__", fields)
    return decision


# --------------------------------------------------------------------------
# The matcher: compiled once per pack, immutable, safe to share across threads.
# --------------------------------------------------------------------------

import bisect  # noqa: E402
import functools  # noqa: E402
import logging  # noqa: E402
from dataclasses import field  # noqa: E402

import regex  # noqa: E402

from .prefilter import LiteralIndex, first_ascii_chars, holds, literal_requirements, words_of_tokens  # noqa: E402
from .text import WORD, normalize, original_span, word_pattern  # noqa: E402

log = logging.getLogger("cleo_rules")


@dataclass(frozen=True)
class Attempt:
    """One rule tried by :meth:`Matcher.explain`."""

    stage: str  # "length", "correction", "vocabulary", "follow_up"
    rule: str | None
    fired: bool
    span: tuple[int, int] | None = None
    matched: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Explanation:
    decision: Decision
    normalized: str
    words: tuple[str, ...]
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {
            "decision": self.decision.to_dict(),
            "normalized": self.normalized,
            "words": list(self.words),
            "attempts": [
                {"stage": a.stage, "rule": a.rule, "fired": a.fired,
                 "span": list(a.span) if a.span else None, "matched": a.matched, "note": a.note}
                for a in self.attempts
            ],
        }


# Roles in the order they name a vocabulary follow-up; filler never does.
ROLE_PRIORITY = ("choice", "nod", "negation", "closing", "request", "anaphor")


def _prefilter(rule):
    """The rule's literal requirements, if they hold for all of its own examples."""
    conditions = literal_requirements(rule.pattern)
    if conditions is None:
        return None
    for example in rule.examples + rule.counterexamples + tuple(getattr(rule, "request_forms", ())):
        text = normalize(example)
        try:
            hit = rule.compiled.search(text, timeout=1.0)
        except TimeoutError:
            return None  # cannot tell: always search (the lint reports slow patterns)
        if hit and not holds(conditions, text):
            return None  # the parser read the pattern differently: always search
    return conditions


class _Timeout(Exception):
    def __init__(self, rule_id):
        self.rule_id = rule_id


class Matcher:
    """Classifies messages with one pack's compiled rules.

    Built by :func:`cleo_rules.pack.compile.compile_pack`; holds only
    immutable state, so one instance serves any number of threads.
    Patterns are tried one by one in file order, but only those whose
    requirements the message meets (strings, whole words, prefixes and
    leading words that every match must have, read off each pattern by
    :func:`cleo_rules.prefilter.literal_requirements`), found with one
    scan in a :class:`LiteralIndex`. On these packs that is faster than one
    large alternation, which the ``regex`` engine cannot optimise across
    lookarounds, and its cost grows far slower than the pack. Each search
    that does run is a timed call, the dearest step of a classification.
    """

    def __init__(self, settings, vocab_sets, follow_ups, corrections, identity):
        self.settings = settings
        self.vocab_sets = tuple(vocab_sets)
        self.follow_ups = tuple(follow_ups)
        self.corrections = tuple(corrections)
        self._identity = identity  # (name, version, hash)
        self._timeout = settings.timeout_ms / 1000.0
        phrases: dict[tuple[str, ...], int] = {}
        token_res = []
        for index, vset in enumerate(self.vocab_sets):
            for entry in vset.words:
                key = tuple(WORD.findall(normalize(entry)))
                if key:
                    phrases.setdefault(key, index)
            for tp in vset.token_patterns:
                token_res.append((index, regex.compile(tp)))
        # single words answer in one dict lookup; longer phrases are tried only
        # from a word that starts one, longest first
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
        self._rank = tuple(ROLE_PRIORITY.index(s.role) if s.role in ROLE_PRIORITY else None
                           for s in self.vocab_sets)
        # one scan finds the rules whose requirements a text meets
        self._patterns = self.corrections + self.follow_ups
        self._index = LiteralIndex([_prefilter(r) for r in self._patterns])
        # a conversation's earlier messages are classified again on every turn
        # to find the anchor; the kinds are remembered (thread-safe, bounded)
        self._history_kind = functools.lru_cache(maxsize=4096)(self.kind_of)

    # -- pieces --------------------------------------------------------

    def _limited(self, rule_id, method, text):
        """``method(text)`` under the pack's time limit; :class:`_Timeout` names the rule.

        The limit is wall-clock time, so a thread descheduled mid-search on a
        busy machine can run out of it on a fast pattern. A timed-out search
        is therefore run once more, and only a second timeout counts: a slow
        pattern costs at most twice the limit.
        """
        try:
            return method(text, timeout=self._timeout)
        except TimeoutError:
            pass
        try:
            return method(text, timeout=self._timeout)
        except TimeoutError:
            raise _Timeout(rule_id) from None

    def _vocab_index(self, token: str) -> int | None:
        first = token[:1]
        if first.isascii() and first not in self._token_starts:
            return None  # no token pattern can start with this character
        if self._token_re is not None:
            try:
                m = self._token_re.fullmatch(token, timeout=self._timeout)
            except TimeoutError:
                m = False  # find which pattern runs out of time, one by one
            if m is not False:
                return None if m is None else self._token_res[int(m.lastgroup[1:])][0]
        for index, rx in self._token_res:
            if self._limited(self.vocab_sets[index].id, rx.fullmatch, token):
                return index
        return None

    def _cover(self, tokens, stop_at_gap: bool = False):
        """Greedy longest-phrase cover of ``tokens``.

        Returns ``(head, covered)``: ``head`` is ``(set_index, first, last)``
        (token indices, end exclusive), ``covered`` a list of booleans, one
        per token. ``head`` is the entry whose set has the most telling role
        (:data:`ROLE_PRIORITY`), the earliest among equals; filler never heads.
        With ``stop_at_gap``, the first token no entry covers ends the walk
        and ``(None, None)`` is returned (the vocabulary test has failed).
        """
        n = len(tokens)
        covered = [False] * n
        head = None
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
                    index = self._vocab_index(token)
                if index is None:
                    if stop_at_gap:
                        return None, None
                    i += 1
                    continue
            for j in range(i, i + length):
                covered[j] = True
            r = rank[index]
            if r is not None and (head is None or r < rank[head[0]]):
                head = (index, i, i + length)
            i += length
        return head, covered

    def _first(self, candidates, text, accept=None):
        """The first rule, in file order, that matches: ``(rule, match)`` or None.

        ``candidates`` are indices into corrections + follow-ups, ascending:
        the rules whose prefilter requirements ``text`` meets (any other
        cannot match). ``accept(rule, match)`` may refuse a match; the search then
        goes on with the next rule.
        """
        for index in candidates:
            rule = self._patterns[index]
            m = self._limited(rule.id, rule.compiled.search, text)
            if m is not None and (accept is None or accept(rule, m)):
                return rule, m
        return None

    @staticmethod
    def _topic_counts(spans, covered, start, end) -> tuple[int, int]:
        """Topic words (words the vocabulary does not cover) outside ``start:end``, and before it."""
        outside = before = 0
        for (s, e), c in zip(spans, covered):
            if not c:
                if e <= start:
                    before += 1
                    outside += 1
                elif s >= end:
                    outside += 1
        return outside, before

    @staticmethod
    def _topic_ok(rule, outside: int, before: int) -> bool:
        """Whether ``rule``'s bounds allow that many topic words around its match.

        ``min/max_content_words`` bound those outside the match;
        ``max_content_before`` those before it (an anaphor follows its
        antecedent: a referring word after topic words may point inside the
        message rather than back at an earlier turn).
        """
        return outside >= rule.min_content_words and \
            (rule.max_content_words is None or outside <= rule.max_content_words) and \
            (rule.max_content_before is None or before <= rule.max_content_before)

    def _topic_check(self, rule, spans, covered, start, end) -> tuple[bool, str]:
        """:meth:`_topic_ok` for a match at ``start:end``, and why (for ``explain``)."""
        if not rule.topic_bounded:
            return True, ""
        outside, before = self._topic_counts(spans, covered, start, end)
        bounds = [f"at least {rule.min_content_words}"] if rule.min_content_words else []
        if rule.max_content_words is not None:
            bounds.append(f"at most {rule.max_content_words}")
        note = f"{outside} topic word(s) outside the match ({', '.join(bounds) or 'no bound'})"
        if rule.max_content_before is not None:
            note += f", {before} before it (at most {rule.max_content_before})"
        return self._topic_ok(rule, outside, before), note

    # -- classification ------------------------------------------------

    def kind_of(self, message: str) -> str:
        """The kind of ``message`` on its own (no query shaping)."""
        return self._classify(message)[0]

    def _classify(self, message: str):
        """``(kind, rule, span, normalized, note)``; span is in normalised text."""
        s = self.settings
        if len(message.strip()) < s.min_chars:
            return "skip", None, None, None, None
        text = normalize(message[: s.max_scan_chars])
        words = word_pattern(text)
        tokens = words.findall(text)
        candidates = self._index.candidates(text, words_of_tokens(tokens, text))
        split = bisect.bisect_left(candidates, len(self.corrections))
        try:
            hit = self._first(candidates[:split], text)
            if hit is not None:
                rule, m = hit
                return "correction", rule.id, m.span(), text, None
            if len(tokens) > s.max_follow_up_words or len(message) > s.max_scan_chars:
                return "substantive", None, None, text, None
            # token spans and the vocabulary cover are worked out only when needed
            cover = spans = None

            def topic_free(rule, m):
                nonlocal cover, spans
                if not rule.topic_bounded:
                    return True
                if cover is None:
                    cover = self._cover(tokens)
                    spans = [w.span() for w in words.finditer(text)]
                return self._topic_ok(rule, *self._topic_counts(spans, cover[1], *m.span()))

            hit = self._first(candidates[split:], text, topic_free)
            if hit is not None:
                rule, m = hit
                return "follow_up", rule.id, m.span(), text, None
            if cover is not None:
                head = cover[0] if all(cover[1]) else None
            else:
                head = self._cover(tokens, stop_at_gap=True)[0]
            if head is not None:
                index, first, last = head
                if spans is None:
                    spans = [w.span() for w in words.finditer(text)]
                return "follow_up", self.vocab_sets[index].id, (spans[first][0], spans[last - 1][1]), text, None
        except _Timeout as t:
            log.warning("pattern timed out in rule %s; message classified substantive (searched as typed)", t.rule_id)
            return "substantive", None, None, text, f"timeout in {t.rule_id}"
        return "substantive", None, None, text, None

    def anchor_for(self, history) -> str | None:
        """The last substantive message in ``history`` (oldest first), or None."""
        if isinstance(history, str):
            raise TypeError("history must be a sequence of earlier messages, not one string")
        lookback = self.settings.anchor_lookback
        items = history[-lookback:] if isinstance(history, (tuple, list)) else list(history)[-lookback:]
        for earlier in reversed(items):
            if not isinstance(earlier, str):
                raise TypeError(f"history items must be strings, found {type(earlier).__name__}")
            if self._history_kind(earlier) == "substantive":
                return earlier
        return None

    def classify(self, message: str, history=()) -> Decision:
        if not isinstance(message, str):
            raise TypeError(f"message must be a string, found {type(message).__name__}")
        kind, rule, span, normalized, note = self._classify(message)
        anchor = None
        query: str | None
        if kind == "skip":
            query = None
        elif kind == "follow_up":
            anchor = self.anchor_for(history)
            if anchor is None:
                query = message
                note = "no substantive message in history; searched as typed"
            else:
                query = self.settings.combine.format(anchor=anchor, message=message)
        else:
            query = message
        orig_span = matched = None
        if span is not None:
            orig_span = original_span(message[: self.settings.max_scan_chars], *span, normalized)
            matched = message[orig_span[0]:orig_span[1]]
        name, version, digest = self._identity
        return _decision(kind=kind, rule=rule, span=orig_span, matched=matched, query=query, anchor=anchor,
                         message=message, pack=name, pack_version=version, pack_hash=digest, note=note)

    def explain(self, message: str, history=()) -> Explanation:
        """Classify ``message`` and report every rule tried, in order."""
        decision = self.classify(message, history)
        s = self.settings
        attempts: list[Attempt] = []
        stripped = len(message.strip())
        attempts.append(Attempt("length", None, stripped < s.min_chars,
                                note=f"{stripped} characters after stripping; under {s.min_chars} is skipped"))
        if stripped < s.min_chars:
            return Explanation(decision, "", (), tuple(attempts))
        text = normalize(message[: s.max_scan_chars])
        matches = list(WORD.finditer(text))
        tokens = tuple(m.group() for m in matches)

        def attempt(stage, rule, extra_check=None):
            try:
                m = rule.compiled.search(text, timeout=self._timeout)
            except TimeoutError:
                return Attempt(stage, rule.id, False, note="timed out")
            if m is None:
                return Attempt(stage, rule.id, False)
            note = ""
            fired = True
            if extra_check is not None:
                fired, note = extra_check(m)
            return Attempt(stage, rule.id, fired, m.span(), m.group(), note)

        for rule in self.corrections:
            attempts.append(attempt("correction", rule))
        if len(tokens) > s.max_follow_up_words:
            attempts.append(Attempt("vocabulary", None, False,
                                    note=f"{len(tokens)} words; follow-ups have at most {s.max_follow_up_words}"))
            return Explanation(decision, text, tokens, tuple(attempts))
        spans = [m.span() for m in matches]
        try:
            head, covered = self._cover(list(tokens))
        except _Timeout as t:
            attempts.append(Attempt("vocabulary", t.rule_id, False, note="timed out"))
            return Explanation(decision, text, tokens, tuple(attempts))
        for rule in self.follow_ups:
            def check(m, rule=rule):
                return self._topic_check(rule, spans, covered, *m.span())
            attempts.append(attempt("follow_up", rule, check))
        content = [t for t, c in zip(tokens, covered) if not c]
        if head is not None and not content:
            index, first, last = head
            attempts.append(Attempt("vocabulary", self.vocab_sets[index].id, True,
                                    (matches[first].start(), matches[last - 1].end()),
                                    " ".join(tokens[first:last]), "every word is in the vocabulary"))
        else:
            note = f"words not in the vocabulary: {', '.join(content)}" if content else "only filler words"
            attempts.append(Attempt("vocabulary", None, False, note=note))
        return Explanation(decision, text, tokens, tuple(attempts))
