"""The matching walk: one message and a compiled pack's rules make a :class:`Decision`.

The walk, in order: a message under ``min_chars`` visible characters
(:func:`~cleo_rules.text.visible_length`: format characters removed, white
space stripped at both ends) is ``skip``; else it is normalised
(:mod:`cleo_rules.text`) and the prefilter (:mod:`cleo_rules.prefilter`)
names the patterns whose requirements it meets; the first correction, in
file order, that matches makes it a ``correction``; then, for a message of
at most ``max_follow_up_words`` words, the first follow-up pattern that
matches within its topic-word bounds, then the vocabulary test, make it a
``follow_up``; anything else is ``substantive``. A pattern that runs out of
time makes it ``substantive`` with a note naming the rule. The query is
then built from the kind, the message and the history, in one place
(:meth:`Matcher.classify`).

The walk can be watched: :meth:`Matcher.classify` takes a recorder
(:class:`cleo_rules.explain.Recorder`), which is told every step; without
one, nothing is recorded and nothing is paid for. :meth:`Matcher.explain`
is that walk with a recorder.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import logging
import re
import threading
from collections import OrderedDict

import regex

from .decision import Decision, Part, make_decision
from .explain import Explanation, Recorder
from .history import ASSISTANT, USER, read_history
from .kinds import DecisionKind
from .names import names
from .prefilter import LiteralIndex, first_ascii_chars, holds, literal_requirements, words_of_tokens
from .referents import ReferentFinder
from .shaping import shape
from . import timed
from .text import WORD, normalize, original_span, visible_length, word_pattern

__all__ = ["Matcher", "ROLE_PRIORITY"]

log = logging.getLogger("cleo_rules")

SKIP, CORRECTION, FOLLOW_UP, SUBSTANTIVE = DecisionKind  # the walk's outcomes, bound once


# Roles in the order they name a vocabulary follow-up; filler never does.
ROLE_PRIORITY = ("choice", "nod", "negation", "closing", "request", "anaphor")


def _requirements(rule):
    """The rule's requirements for the prefilter, if they hold for all of its own examples (else None)."""
    conditions = literal_requirements(rule.pattern)
    if conditions is None:
        return None
    for example in rule.examples + rule.counterexamples + tuple(getattr(rule, "request_forms", ())):
        text = normalize(example["message"] if isinstance(example, dict) else example)
        try:
            hit = rule.compiled.search(text, timeout=1.0)
        except TimeoutError:
            return None  # cannot tell: always search (the lint reports slow patterns)
        if hit and not holds(conditions, text):
            return None  # the parser read the pattern differently: always search
    return conditions


class _Timeout(Exception):
    """A search ran out of time twice; ``rule_id`` names the rule."""

    def __init__(self, rule_id):
        self.rule_id = rule_id


class _KindCache:
    """The kinds of messages seen before, bounded by count and by bytes.

    A message of at most ``short`` characters (nearly every chat message) is
    its own key: the standard LRU cache, whose lookups reuse the string's
    stored hash, holds at most ``size`` of them, so at most ``size * short``
    characters. A longer one is remembered by a 16-byte digest: its kind
    depends only on whether it is long enough to be read, on its first
    ``max_scan_chars`` characters and on whether it goes on past them, so the
    key is the digest of those characters and a flag, and no long message is
    kept alive by the cache. Least recently used entries go first; safe to
    share between threads.
    """

    def __init__(self, kind_of, min_chars: int, max_scan_chars: int, size: int = 4096, short: int = 512):
        self._kind_of = kind_of
        self._min_chars = min_chars
        self._scan = max_scan_chars
        self._size = size
        self._shortest = short
        self._short = functools.lru_cache(maxsize=size)(kind_of)
        self._long: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    def kind(self, message: str) -> str:
        if len(message) <= self._shortest:
            return self._short(message)
        if visible_length(message) < self._min_chars:
            return SKIP
        scanned = message[: self._scan]
        key = hashlib.blake2b(scanned.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if len(message) > self._scan:  # a longer message is read as one past the scan
            key += b"+"
        with self._lock:
            kind = self._long.get(key)
            if kind is not None:
                self._long.move_to_end(key)
                return kind
        kind = self._kind_of(message)
        with self._lock:
            self._long[key] = kind
            if len(self._long) > self._size:
                self._long.popitem(last=False)
        return kind

    def __len__(self) -> int:
        return self._short.cache_info().currsize + len(self._long)

    def clear(self) -> None:
        self._short.cache_clear()
        with self._lock:
            self._long.clear()


class Matcher:
    """Classifies messages with one pack's compiled rules.

    Built by each compiled :class:`~cleo_rules.pack.model.Pack`; holds
    only immutable state, so one instance serves any number of threads.
    Patterns are tried one by one in file order, but only those whose
    requirements the message meets (strings, whole words, prefixes and
    leading words that every match must have, read off each pattern by
    :func:`cleo_rules.prefilter.literal_requirements`), found with one scan
    in a :class:`~cleo_rules.prefilter.LiteralIndex`. On these packs that is
    faster than one large alternation, which the ``regex`` engine cannot
    optimise across lookarounds, and its cost grows far slower than the
    pack. Each search that does run is a timed call, the dearest step of a
    classification.
    """

    def __init__(self, settings, vocab_sets, follow_ups, corrections, identity, *, referent_rules=(),
                 lexicon=None, referent_words=None):
        self.settings = settings
        self.lexicon = dict(lexicon or {})
        common = self.lexicon.get("common", frozenset())
        function_words = frozenset(w for v in vocab_sets if v.role == "filler" for w in v.words)
        self._names = (common, function_words, common | self.lexicon.get("nouns", frozenset()),
                       self.lexicon.get("proper", frozenset()))
        words = referent_words or {}
        self.referents = ReferentFinder(
            referent_rules, common=common, dictionary=self._names[2], function_words=function_words,
            proper=self._names[3], nouns=self.lexicon.get("nouns", frozenset()),
            time_words=words.get("time_words", ()), clause_verbs=words.get("clause_verbs", ()),
            max_words=settings.max_referent_words, timeout=settings.timeout_ms / 1000.0)
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
        # the most words a follow-up pattern takes (the pack's cap, or a rule's own)
        self._longest = max([settings.max_follow_up_words] +
                            [r.max_words for r in self.follow_ups if r.max_words is not None])
        # one scan finds the rules whose requirements a text meets
        self._patterns = self.corrections + self.follow_ups
        # referent rules share the prefilter's scan: a follow-up searches only those its text can match
        self._ref_start = len(self._patterns)
        # follow-up patterns from this index on are tried after the vocabulary test
        self._late = len(self.corrections) + sum(1 for r in self.follow_ups if not r.after_vocabulary)
        self._index = LiteralIndex([_requirements(r) for r in self._patterns + self.referents.rules])
        # a conversation's earlier messages are classified again on every turn
        # to find the anchor; the kinds are remembered (thread-safe, bounded)
        self._history_kinds = _KindCache(self.kind_of, settings.min_chars, settings.max_scan_chars)

    # -- pieces --------------------------------------------------------

    def _limited(self, rule_id, method, text):
        """``method(text)`` under the pack's time limit; :class:`_Timeout` names the rule.

        The limit counts the whole process's CPU time, so a fast pattern can
        run out of it while other threads work; a timed-out search is run
        again (:func:`cleo_rules.timed.again`): a slow pattern costs at most
        twice the limit, and inside a gate only a reproducible timeout counts.
        """
        try:
            return method(text, timeout=self._timeout)
        except TimeoutError:
            pass
        try:
            return timed.again(method, text, self._timeout)
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
                # every alternative is a named group: a match has a lastgroup
                return None if m is None else self._token_res[int(m.lastgroup[1:])][0]  # pyright: ignore[reportOptionalSubscript]  # every alternative is a named group, so a match has a lastgroup
        for index, rx in self._token_res:
            if self._limited(self.vocab_sets[index].id, rx.fullmatch, token):
                return index
        return None


    def _cover(self, tokens, stop_at_gap: bool = False):
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
                    index = self._vocab_index(token)
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

    def _guards_pass(self, rule, m, message: str, text: str, tokens, rec) -> bool:
        """Whether a match of a guarded rule stands: lexicon head, and no name where the rule forbids one.

        Names are read in the message as typed (:mod:`cleo_rules.names`); the
        match's start is mapped back from the normalised text.
        """
        if rule.head_in is not None:
            # the match ends on a head: its last word is in the set, and no plain
            # noun follows it (that would make a compound: "the boiler service")
            if self._head(rule, m, text) is None:
                if rec is not None:
                    rec.guard(rule, f"it does not end on a word of the lexicon's {rule.head_in}")
                return False
        if rule.unless_name or rule.unless_name_before:
            scanned = message[: self.settings.max_scan_chars]
            common, function_words, dictionary, proper = self._names
            if rule.unless_name:
                found = self.referents.names(scanned)
                if found:
                    if rec is not None:
                        rec.guard(rule, f"the message names {found[0].text!r}")
                    return False
            else:
                start = original_span(scanned, m.start(), m.end(), text)[0]
                why = self._antecedent_before(scanned, start)
                if why:
                    if rec is not None:
                        rec.guard(rule, why)
                    return False
        return True

    def _head(self, rule, m, text: str) -> str | None:
        """The head word of the phrase a ``head_in`` rule matched, or None.

        The head is the last word of the match that is in the rule's lexicon
        set and not followed by a plain noun (which would make a compound
        that names its own thing: "the boiler service"); a match's last word
        may be a verb the pattern took in ("the album released": "album").
        """
        heads = self.lexicon.get(rule.head_in, frozenset())
        plain = self.lexicon.get("plain_nouns", frozenset())
        found = [(w.group(), w.end()) for w in WORD.finditer(m.group())]
        for i in range(len(found) - 1, max(len(found) - 3, 0), -1):
            word, end = found[i]
            if word not in heads:
                continue
            after = WORD.match(text, m.start() + end + 1) if text[m.start() + end:m.start() + end + 1] == " " else None
            if after is None or after.group() not in plain:
                return word
            return None
        return None

    def _antecedent(self, rule, m, history, rec) -> bool:
        """Whether a recent turn mentions what the match's head names ("the band" after "... the band ...").

        A definite description points back only at something already
        mentioned ("the band" after "... the band ...") or at a part of a thing
        the assistant named ("the address" after "Golden Wok is ..."); with
        neither ("what is wrong with the printer?" out of the blue) it names a
        thing of the speaker's own. The last ``antecedent_reach`` turns, user
        and assistant, are read; the head matches in the singular or the
        plural.
        """
        words = WORD.findall(m.group())
        nouns = self.lexicon.get(rule.head_in, frozenset()) if rule.head_in else frozenset()
        heads = [w for w in words[1:] if w in nouns] or words[-1:]  # "the band tour": band, or tour
        head = heads[-1] if heads else ""
        forms = set()
        for h in heads:
            forms |= {h, h + "s", h + "es", h.removesuffix("s"), h.removesuffix("es"),
                      h[:-1] + "ies" if h.endswith("y") else h, h[:-3] + "y" if h.endswith("ies") else h}
        forms.discard("")
        recent = (history or ())[-self.settings.antecedent_reach:]
        for said in recent:
            if forms & set(WORD.findall(normalize(said.content))):
                return True
        # a thing the assistant named may own it ("the address" after "Golden Wok is ...")
        for said in recent:
            if said.role == ASSISTANT and self.referents.mentions(said):
                return True
        if rec is not None:
            rec.guard(rule, f"no recent turn mentions {head!r}" if history else "there is no conversation before it")
        return False

    def _antecedent_before(self, scanned: str, start: int) -> str:
        """What before ``start`` of the message (as typed) a reference there may point at, or ``""``.

        A name; a word for a person (the lexicon's ``people``: "my mom ... her");
        or a noun in an earlier sentence of the same message ("I'd like a cheap
        restaurant. It should be in the north.").
        """
        function_words = self._names[1]
        before = scanned[:start]
        found = [n for n in self.referents.names(scanned) if n.end <= start]
        if found:
            return f"the message names {found[0].text!r} before the match"
        people = self.lexicon.get("people", frozenset())
        nouns = self.lexicon.get("nouns", frozenset())
        # words are read as the rules read them, in normalised text ("don’t" is one word, as "don't" is);
        # sentences end where the message as typed has a stop and white space
        for w in WORD.findall(normalize(before)):
            if w in people:
                return f"{w!r}, a person, comes before the match"
        ends = [m.start() for m in re.finditer(r"[.?!]\s", before)]
        cut = ends[-1] if ends else -1
        if cut >= 0:
            for w in WORD.findall(normalize(before[:cut])):
                if w in nouns and w not in function_words:
                    return f"an earlier sentence of the message names {w!r}"
        return ""

    def _first(self, candidates, text, accept=None, rec=None):
        """The first rule, in file order, that matches: ``(rule, match)`` or None.

        ``candidates`` are indices into corrections + follow-ups, ascending:
        the rules whose prefilter requirements ``text`` meets (any other
        cannot match). ``accept(rule, match)`` may refuse a match; the search then
        goes on with the next rule. ``rec`` is told of every search.
        """
        for index in candidates:
            rule = self._patterns[index]
            m = self._limited(rule.id, rule.compiled.search, text)
            if rec is not None:
                rec.searched(index, m)
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

    # -- classification ------------------------------------------------

    def kind_of(self, message: str) -> DecisionKind:
        """The kind of ``message`` on its own (no query shaping)."""
        return self._classify(message)[0]

    def _classify(self, message: str, rec: Recorder | None = None, history=None, referent_candidates=None):
        """The walk: ``(kind, rule, span, normalized, note)``; span is in normalised text.

        ``rec``, when given, is told each step as it is taken (see
        :class:`~cleo_rules.explain.Recorder`); it never changes the result.
        """
        s = self.settings
        stripped = visible_length(message)
        if stripped < s.min_chars:
            if rec is not None:
                rec.skipped(stripped)
            return SKIP, None, None, None, None
        scanned = message[: s.max_scan_chars]
        text = normalize(scanned)
        words = word_pattern(text)
        tokens = words.findall(text)
        candidates = self._index.candidates(text, words_of_tokens(tokens, text))
        ref = bisect.bisect_left(candidates, self._ref_start)
        if referent_candidates is not None:
            referent_candidates.extend(c - self._ref_start for c in candidates[ref:])
        candidates = candidates[:ref]
        if rec is not None:
            rec.scanned(scanned, stripped, text, tokens, candidates)
        split = bisect.bisect_left(candidates, len(self.corrections))
        try:
            hit = self._first(candidates[:split], text, None, rec)
            if hit is not None:
                rule, m = hit
                return CORRECTION, rule.id, m.span(), text, None
            long = len(tokens) > s.max_follow_up_words
            if len(message) > s.max_scan_chars or long and len(tokens) > self._longest:
                if rec is not None:
                    rec.stopped(len(tokens), len(message))
                return SUBSTANTIVE, None, None, text, None
            # token spans and the vocabulary cover are worked out only when needed
            cover = spans = None

            def topic_free(rule, m):
                nonlocal cover, spans
                if rule.max_words is not None and len(tokens) > rule.max_words or \
                        rule.max_words is None and long:
                    if rec is not None:
                        rec.too_long(rule, len(tokens))
                    return False
                if rule.guarded and not self._guards_pass(rule, m, message, text, tokens, rec):
                    return False
                if rule.requires_antecedent and not self._antecedent(rule, m, history, rec):
                    return False
                if not rule.topic_bounded:
                    return True
                if cover is None:
                    cover = self._cover(tokens)
                if spans is None:  # the vocabulary test may have left its cover without the spans
                    spans = [w.span() for w in words.finditer(text)]
                outside, before = self._topic_counts(spans, cover[1], *m.span())
                ok = self._topic_ok(rule, outside, before)
                if rec is not None:
                    rec.topic(rule, outside, before, ok)
                return ok

            late = bisect.bisect_left(candidates, self._late)
            hit = self._first(candidates[split:late], text, topic_free, rec)
            if hit is not None:
                rule, m = hit
                return FOLLOW_UP, rule.id, m.span(), text, None
            if long:  # no vocabulary test: only the late patterns that take long messages
                hit = self._first(candidates[late:], text, topic_free, rec)
                if hit is not None:
                    rule, m = hit
                    return FOLLOW_UP, rule.id, m.span(), text, None
                if rec is not None:
                    rec.stopped(len(tokens), len(message))
                return SUBSTANTIVE, None, None, text, None
            if cover is not None:
                head = cover[0] if all(cover[1]) else None
            else:
                cover = self._cover(tokens, stop_at_gap=True)
                head = cover[0]
            if rec is not None:
                rec.vocabulary(head, cover[1], cover[2])
            if cover[2] is not None:
                cover = None  # the test stopped at a gap: the late patterns count topic words afresh
            if head is not None:
                index, first, last = head
                if spans is None:
                    spans = [w.span() for w in words.finditer(text)]
                return FOLLOW_UP, self.vocab_sets[index].id, (spans[first][0], spans[last - 1][1]), text, None
            hit = self._first(candidates[late:], text, topic_free, rec)
            if hit is not None:
                rule, m = hit
                return FOLLOW_UP, rule.id, m.span(), text, None
        except _Timeout as t:
            log.warning("pattern timed out in rule %s; message classified substantive (searched as typed)", t.rule_id)
            if rec is not None:
                rec.timed_out(t.rule_id)
            return SUBSTANTIVE, None, None, text, f"timeout in {t.rule_id}"
        return SUBSTANTIVE, None, None, text, None

    def _anchor(self, history):
        """The last substantive user turn among the last ``anchor_lookback`` user turns, or None."""
        lookback = self.settings.anchor_lookback
        seen = 0
        for said in reversed(history):
            if said.role != USER:
                continue
            seen += 1
            if seen > lookback:
                break
            if self._history_kinds.kind(said.content) == SUBSTANTIVE:
                return said
        return None

    def classify(self, message: str, history=(), recorder: Recorder | None = None) -> Decision:
        """The :class:`Decision` on ``message``, given the conversation before it (oldest first).

        ``history`` items are strings (user messages) or ``{"role", "content"}``
        mappings (:mod:`cleo_rules.history`); a malformed item raises
        :class:`~cleo_rules.history.HistoryError`. ``recorder`` (a
        :class:`~cleo_rules.explain.Recorder`) is told every step of the walk;
        the decision is the same with or without it.
        """
        if not isinstance(message, str):
            raise TypeError(f"message must be a string, found {type(message).__name__}")
        said = read_history(history)
        referent_candidates: list[int] = []
        kind, rule, span, normalized, note = self._classify(message, recorder, said, referent_candidates)
        # the query: nothing for a skip, the message as typed for a correction
        # or a substantive message, its parts combined for a follow-up
        if kind == FOLLOW_UP and normalized is not None:  # a follow-up's text is always normalised
            query, parts, why = shape(self, message, normalized, said, recorder, frozenset(referent_candidates))
            note = note or why
        else:
            query, parts = (None, ()) if kind == SKIP else (message, (Part("message", message, "message"),))
        anchor = next((p.text for p in parts if p.name == "anchor"), None)
        orig_span = matched = None
        if span is not None:
            orig_span = original_span(message[: self.settings.max_scan_chars], span[0], span[1], normalized)
            matched = message[orig_span[0]:orig_span[1]]
        name, version, digest = self._identity
        return make_decision(kind=kind, rule=rule, span=orig_span, matched=matched, query=query, anchor=anchor,
                             message=message, pack=name, pack_version=version, pack_hash=digest, note=note,
                             parts=parts)

    def explain(self, message: str, history=()) -> Explanation:
        """Classify ``message`` and report every rule, in the order they are applied (see :mod:`cleo_rules.explain`)."""
        recorder = Recorder(self)
        return recorder.explanation(self.classify(message, history, recorder))
