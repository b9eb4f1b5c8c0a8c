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


# --------------------------------------------------------------------------
# The matcher: compiled once per pack, immutable, safe to share across threads.
# --------------------------------------------------------------------------

import logging  # noqa: E402
from dataclasses import field  # noqa: E402

import regex  # noqa: E402

from .text import WORD, normalize, original_span  # noqa: E402

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


class _Timeout(Exception):
    def __init__(self, rule_id):
        self.rule_id = rule_id


def _alternation(rules) -> regex.Pattern | None:
    if not rules:
        return None
    return regex.compile("|".join(f"(?P<r{i}>{r.pattern})" for i, r in enumerate(rules)))


class Matcher:
    """Classifies messages with one pack's compiled rules.

    Built by :func:`cleo_rules.pack.compile.compile_pack`; holds only
    immutable state, so one instance serves any number of threads.
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
        self._phrases = phrases
        self._max_phrase = max((len(k) for k in phrases), default=1)
        self._token_res = tuple(token_res)
        # the set reported for a vocabulary follow-up: most telling role first
        self._rank = tuple(ROLE_PRIORITY.index(s.role) if s.role in ROLE_PRIORITY else None
                           for s in self.vocab_sets)
        self._corrections_re = _alternation(self.corrections)
        self._follow_ups_re = _alternation(self.follow_ups)

    # -- pieces --------------------------------------------------------

    def _vocab_index(self, token: str) -> int | None:
        for index, rx in self._token_res:
            if rx.fullmatch(token, timeout=self._timeout):
                return index
        return None

    def _cover(self, tokens):
        """Greedy longest-phrase cover of ``tokens``.

        Returns ``(head, covered)``: ``head`` is ``(set_index, first, last)``
        for the first entry that is not filler (token indices, end exclusive),
        ``covered`` a list of booleans, one per token. ``head`` is the entry
        whose set has the most telling role (:data:`ROLE_PRIORITY`), the
        earliest among equals; filler never heads.
        """
        n = len(tokens)
        covered = [False] * n
        head = None
        i = 0
        while i < n:
            found = None
            for length in range(min(self._max_phrase, n - i), 0, -1):
                index = self._phrases.get(tuple(tokens[i:i + length]))
                if index is not None:
                    found = (index, length)
                    break
            if found is None:
                index = self._vocab_index(tokens[i])
                if index is not None:
                    found = (index, 1)
            if found is None:
                i += 1
                continue
            index, length = found
            for j in range(i, i + length):
                covered[j] = True
            rank = self._rank[index]
            if rank is not None and (head is None or rank < self._rank[head[0]]):
                head = (index, i, i + length)
            i += length
        return head, covered

    def _search(self, compiled, rules, text, accept=None):
        """The first rule, in file order, that matches: ``(rule_index, match)`` or None.

        One search of the combined alternation answers the common case (no
        rule matches). When it does match, rule ``i`` at the leftmost
        position, the rules before ``i`` are tried on their own, since file
        order, not position, decides. ``accept(rule, match)`` may refuse a
        match, and the search goes on with the next rule.
        """
        if compiled is None:
            return None
        try:
            m = compiled.search(text, timeout=self._timeout)
        except TimeoutError:
            raise _Timeout(self._culprit(rules, text)) from None
        if m is None:
            return None
        name = m.lastgroup
        if name is None or not name.startswith("r"):
            name = next(g for g, v in m.groupdict().items() if v is not None and g.startswith("r"))
        first = int(name[1:])
        for index, rule in enumerate(rules):
            if index == first and (accept is None or accept(rule, m)):
                return index, m
            if index > first and accept is None:
                break
            try:
                own = rule.compiled.search(text, timeout=self._timeout)
            except TimeoutError:
                raise _Timeout(rule.id) from None
            if own is not None and (accept is None or accept(rule, own)):
                return index, own
        return None

    def _culprit(self, rules, text) -> str:
        for rule in rules:
            try:
                rule.compiled.search(text, timeout=self._timeout)
            except TimeoutError:
                return rule.id
        return rules[0].id if rules else "?"

    @staticmethod
    def _content_ok(rule, n: int) -> bool:
        """Whether ``n`` topic words outside the match suit ``rule``'s bounds."""
        if n < rule.min_content_words:
            return False
        return rule.max_content_words is None or n <= rule.max_content_words

    def _content_outside(self, spans, covered, start, end) -> int:
        return sum(1 for (s, e), c in zip(spans, covered) if not c and (e <= start or s >= end))

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
        try:
            hit = self._search(self._corrections_re, self.corrections, text)
            if hit is not None:
                index, m = hit
                return "correction", self.corrections[index].id, m.span(), text, None
            matches = list(WORD.finditer(text))
            if len(matches) > s.max_follow_up_words or len(message) > s.max_scan_chars:
                return "substantive", None, None, text, None
            tokens = [m.group() for m in matches]
            spans = [m.span() for m in matches]
            head, covered = self._cover(tokens)
            def topic_free(rule, m):
                return self._content_ok(rule, self._content_outside(spans, covered, *m.span()))

            hit = self._search(self._follow_ups_re, self.follow_ups, text, topic_free)
            if hit is not None:
                index, m = hit
                return "follow_up", self.follow_ups[index].id, m.span(), text, None
            if head is not None and all(covered):
                index, first, last = head
                return "follow_up", self.vocab_sets[index].id, (spans[first][0], spans[last - 1][1]), text, None
        except _Timeout as t:
            log.warning("pattern timed out in rule %s; message classified substantive (searched as typed)", t.rule_id)
            return "substantive", None, None, text, f"timeout in {t.rule_id}"
        return "substantive", None, None, text, None

    def anchor_for(self, history) -> str | None:
        """The last substantive message in ``history`` (oldest first), or None."""
        if isinstance(history, str):
            raise TypeError("history must be a sequence of earlier messages, not one string")
        items = list(history)[-self.settings.anchor_lookback:]
        for earlier in reversed(items):
            if not isinstance(earlier, str):
                raise TypeError(f"history items must be strings, found {type(earlier).__name__}")
            if self._classify(earlier)[0] == "substantive":
                return earlier
        return None

    def classify(self, message: str, history=()) -> Decision:
        if not isinstance(message, str):
            raise TypeError(f"message must be a string, found {type(message).__name__}")
        kind, rule, span, _, note = self._classify(message)
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
            orig_span = original_span(message[: self.settings.max_scan_chars], *span)
            matched = message[orig_span[0]:orig_span[1]]
        name, version, digest = self._identity
        return Decision(kind=kind, rule=rule, span=orig_span, matched=matched, query=query, anchor=anchor,
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
        head, covered = self._cover(list(tokens))
        for rule in self.follow_ups:
            def check(m, rule=rule):
                if rule.max_content_words is None and not rule.min_content_words:
                    return True, ""
                n = self._content_outside(spans, covered, *m.span())
                bounds = f"at least {rule.min_content_words}, " if rule.min_content_words else ""
                bounds += f"at most {rule.max_content_words}" if rule.max_content_words is not None else "no upper bound"
                return self._content_ok(rule, n), f"{n} topic word(s) outside the match ({bounds})"
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
