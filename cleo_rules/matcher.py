"""The matching walk: one message and a compiled pack's rules make a :class:`Decision`.

The walk, in order: a message under ``min_chars`` visible characters
(:func:`~cleo_rules.text.visible_length`: format characters removed, white
space stripped at both ends) is ``skip``; else it is normalised
(:mod:`cleo_rules.text`) and the prefilter (:mod:`cleo_rules.prefilter`)
names the patterns whose requirements it meets; then the **lanes**
(:class:`~cleo_rules.walk.Lane`, made by the rule families,
:mod:`cleo_rules.families`) are asked in order, and the first that takes
the message decides its kind. With the bundled families: the first
correction, in file order, that matches makes it a ``correction``; then,
for a message of at most ``max_follow_up_words`` words, the first follow-up
pattern that matches within its topic-word bounds, then the vocabulary test,
then the follow-up patterns marked ``after_vocabulary``, make it a
``follow_up``; anything else is ``substantive``. A message longer than any
lane from the first with a word bound takes stops there. A pattern that
runs out of time makes it ``substantive`` with a note naming the rule. The
walk's outcome is a frozen :class:`~cleo_rules.walk.WalkResult`
(:meth:`Matcher.walk`); the query is then built from the kind, the message
and the history, in one place (:meth:`Matcher.classify`).

The walk can be watched: :meth:`Matcher.classify` takes a recorder
(:class:`cleo_rules.explain.Recorder`), which is told every step; without
one, nothing is recorded and nothing is paid for. :meth:`Matcher.explain`
is that walk with a recorder.
"""

from __future__ import annotations

from bisect import bisect_left
import hashlib
import logging
import threading
from collections import OrderedDict

from .decision import Decision, Part, make_decision
from .explain import Explanation, Recorder
from .history import USER, read_history
from .kinds import DecisionKind
from .prefilter import LiteralIndex, holds, literal_requirements, words_of_tokens
from .choices import named_choice
from .shaping import shape, shape_correction
from .text import normalize, original_span, visible_length, word_pattern
from .walk import RuleTimeout, Walk, WalkResult

__all__ = ["Matcher"]

log = logging.getLogger("cleo_rules")

SKIP, CORRECTION, FOLLOW_UP, SUBSTANTIVE = DecisionKind  # the walk's outcomes, bound once
_SKIPPED = (SKIP, None, None, None, None, (), None)  # the walk's outcome for a message too short to read


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


class _KindCache:
    """The kinds of messages seen before, bounded by count and by bytes.

    A message of at most ``short`` characters (nearly every chat message) is
    its own key: at most ``size`` of them are held, so at most ``size * short``
    characters; :meth:`remember` puts one there whose kind is known already
    (the message of a turn, which the next turn's history holds). A longer one is remembered by a 16-byte digest: its kind
    depends only on whether it is long enough to be read, on its first
    ``max_scan_chars`` characters and on whether it goes on past them, so the
    key is the digest of those characters and a flag, and no long message is
    kept alive by the cache nor read past ``max_scan_chars + 1`` characters
    (unless they show under ``min_chars`` visible ones). LRU; thread-safe.
    """

    def __init__(self, kind_of, min_chars: int, max_scan_chars: int, size: int = 4096, short: int = 512):
        self._kind_of = kind_of
        self._min_chars = min_chars
        self._scan = max_scan_chars
        self._size = size
        self._shortest = short
        self._short: OrderedDict[str, str] = OrderedDict()
        self._long: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    def _keep(self, held: OrderedDict, key, kind: str) -> None:
        with self._lock:
            held[key] = kind
            held.move_to_end(key)
            if len(held) > self._size:
                held.popitem(last=False)

    def remember(self, message: str, kind: str) -> None:
        """Hold ``kind`` as the kind of ``message`` (its walk with no history), if it is short enough to be a key."""
        if len(message) <= self._shortest:
            self._keep(self._short, message, kind)

    def kind(self, message: str) -> str:
        if len(message) <= self._shortest:
            with self._lock:
                kind = self._short.get(message)
                if kind is not None:
                    self._short.move_to_end(message)
                    return kind
            kind = self._kind_of(message)
            self._keep(self._short, message, kind)
            return kind
        scanned, head = message[: self._scan], message[: self._scan + 1]  # the head decides as the whole does...
        if visible_length(head) < self._min_chars and visible_length(head := message) < self._min_chars:
            return SKIP  # ...once it shows min_chars visible characters; else the whole is read
        key = hashlib.blake2b(scanned.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if len(message) > self._scan:  # a longer message is read as one past the scan
            key += b"+"
        with self._lock:
            kind = self._long.get(key)
            if kind is not None:
                self._long.move_to_end(key)
                return kind
        kind = self._kind_of(head)
        self._keep(self._long, key, kind)
        return kind

    def __len__(self) -> int:
        return len(self._short) + len(self._long)

    def clear(self) -> None:
        with self._lock:
            self._short.clear()
            self._long.clear()


class Matcher:
    """Classifies messages with one pack's compiled rules, walking them through its lanes.

    Built by each compiled :class:`~cleo_rules.pack.model.Pack` from its
    rule families' lanes (:func:`cleo_rules.families.build_matcher`), in
    the order given: ``lanes`` (:class:`~cleo_rules.walk.Lane`), what they
    share (``context``, a :class:`~cleo_rules.walk.LaneContext`: the
    lexicon, the referent finder as ``referents``, the vocabulary), and the
    pack's ``settings``. It holds only immutable state, so one instance
    serves any number of threads. Patterns are tried one by one in file
    order, but only those whose requirements the message meets (strings,
    whole words, prefixes and leading words that every match must have,
    read off each pattern by :func:`cleo_rules.prefilter.literal_requirements`),
    found with one scan in a :class:`~cleo_rules.prefilter.LiteralIndex` over
    every lane's patterns and the referent rules. On these packs that is
    faster than one large alternation, which the ``regex`` engine cannot
    optimise across lookarounds, and its cost grows far slower than the
    pack. Each search that does run is a timed call, the dearest step of a
    classification. ``requirements`` (one per pattern, in that order) are
    given by a pack read back from the compiled-pack cache; otherwise they are
    worked out.
    """

    def __init__(self, settings, lanes, identity, *, context, requirements=None):
        self.settings = settings
        self.lanes = tuple(lanes)
        self.context = context
        self.referents = context.referents
        self.lexicon = context.lexicon
        self._identity = identity  # (name, version, hash)
        # each lane's patterns, numbered in lane order, then the referent rules: one scan finds them all; each
        # lane is asked through the callable it binds once here (Lane.bind), with its candidates so numbered
        plan, patterns = [], []
        for number, lane in enumerate(self.lanes):
            start = len(patterns)
            patterns += lane.patterns
            # `end` is 0 for a lane without patterns (it is asked with none)
            plan.append((number, lane, lane.bind(start), len(patterns) if lane.patterns else 0, lane.longest,
                         lane.decides))
        self._plan = tuple(plan)
        self._vocabulary = context.vocabulary
        # the most words a message any lane with a bound takes: a longer one stops at the first such lane
        self._longest = max((lane.longest for lane in self.lanes if lane.longest is not None), default=0)
        # referent rules share the prefilter's scan: a follow-up searches only those its text can match
        self._ref_start = len(patterns)
        searched = tuple(patterns) + self.referents.rules
        if requirements is not None and len(requirements) != len(searched):
            raise ValueError(f"{len(requirements)} requirements given for {len(searched)} patterns")
        self.requirements = tuple(requirements or map(_requirements, searched))
        # the most words each pattern's rule takes, where its lane bounds it: a rule with no required words is
        # named by the prefilter only for a message that short (the referent rules take any)
        self.word_caps = tuple(lane.word_cap(rule) for lane in self.lanes for rule in lane.patterns) + \
            (None,) * len(self.referents.rules)
        self._index = LiteralIndex(self.requirements, caps=self.word_caps)
        #: the pattern numbers of the rules the prefilter names for every message (within their word cap)
        self.unconditional = self._index.unconditional
        # a conversation's earlier messages are classified again on every turn
        # to find the anchor; the kinds are remembered (thread-safe, bounded)
        self._history_kinds = _KindCache(self.kind_of, settings.min_chars, settings.max_scan_chars)
        # a choice that names an offered option is decided by the rule the lanes' context names, if any
        self._choice_set = context.choice_rule

    # -- the walk --------------------------------------------------------

    def walk(self, message: str, recorder: Recorder | None = None, history=None) -> WalkResult:
        """The walk of ``message`` through the lanes, and its outcome (spans in the normalised text).

        ``recorder``, when given, is told each step as it is taken (see
        :class:`~cleo_rules.explain.Recorder`); it never changes the result.
        ``history`` is the conversation as :func:`~cleo_rules.history.read_history` reads it.
        """
        return WalkResult(*self._walk(message, recorder, history))

    def _walk(self, message: str, recorder: Recorder | None = None, history=None, made=None):
        """The walk (:meth:`walk`), its outcome as the plain tuple of :class:`WalkResult`'s fields, in order.

        :meth:`classify` and :meth:`kind_of` read the tuple: one frozen value
        less to make per message. ``made``, a list, is given the
        :class:`~cleo_rules.walk.Walk` the lanes read, if one was made.
        """
        s = self.settings
        stripped = visible_length(message)
        if stripped < s.min_chars:
            if recorder is not None:
                recorder.skipped(stripped)
            return _SKIPPED
        scanned = message[: s.max_scan_chars]
        text = normalize(scanned)
        words = word_pattern(text)
        tokens = words.findall(text)
        found = self._index.candidates(text, words_of_tokens(tokens, text), len(tokens))
        ref_start = self._ref_start
        ref = bisect_left(found, ref_start)
        referents = tuple(map(ref_start.__rsub__, found[ref:])) if ref < len(found) else ()  # numbered from 0
        if recorder is not None:
            recorder.scanned(scanned, stripped, text, tokens, found[:ref], referents)
        n = len(tokens)
        # longer than every lane with a word bound takes: the walk stops at the first such lane
        overlong = len(message) > s.max_scan_chars or n > self._longest
        walk = None  # made for the first lane asked
        vocabulary = self._vocabulary
        at = 0  # where in `found` the candidates of the lanes still to come begin
        try:
            for number, lane, ask, end, longest, decides in self._plan:
                if longest is not None:
                    if overlong:
                        if recorder is not None:
                            recorder.stopped(n, len(message))
                        return SUBSTANTIVE, None, None, text, None, referents, None
                    if n > longest:  # a lane for shorter messages (the vocabulary test)
                        if recorder is not None:
                            recorder.passed(lane, n)
                        if end and at < ref:  # its candidates are passed over with it
                            at = bisect_left(found, end, at, ref)
                        continue
                candidates = ()
                if end:  # a lane of patterns: asked only when the prefilter names one of them
                    if at == ref:
                        continue
                    last = ref if end == ref_start else bisect_left(found, end, at, ref)
                    if last == at:
                        continue
                    candidates = found[at:last]
                    at = last
                if walk is None:
                    walk = Walk(message, text, words, tokens, history, recorder, vocabulary)
                    if made is not None:
                        made.append(walk)
                hit = ask(walk, candidates)
                if hit is not None:
                    return decides, hit[0], hit[1], text, None, referents, number
        except RuleTimeout as t:
            log.warning("pattern timed out in rule %s; message classified substantive (searched as typed)", t.rule_id)
            if recorder is not None:
                recorder.timed_out(t.rule_id)
            return SUBSTANTIVE, None, None, text, f"timeout in {t.rule_id}", referents, None
        if n > s.max_follow_up_words and recorder is not None:  # the follow-ups were refused it
            recorder.stopped(n, len(message))
        return SUBSTANTIVE, None, None, text, None, referents, None

    def _named_choice(self, normalized: str, history, recorder):
        """``(NamedChoice, rule id, span in normalized)`` for a message that picks an offered option by name
        (:mod:`cleo_rules.choices`), decided by the pack's choice vocabulary set; None without one."""
        if not self.settings.referents or self._choice_set is None:
            return None
        words = word_pattern(normalized)
        found = list(words.finditer(normalized))
        choice = named_choice(self, normalized, [m.group() for m in found], history)
        if choice is None:
            return None
        span = (found[choice.words[0]].start(), found[choice.words[1] - 1].end())
        if recorder is not None:
            recorder.named_choice(self._choice_set, choice)
        return choice, self._choice_set, span

    def kind_of(self, message: str) -> DecisionKind:
        """The kind of ``message`` on its own (no query shaping)."""
        return self._walk(message)[0]

    def anchor(self, history):
        """The last substantive user turn among the last ``anchor_lookback`` user turns of ``history``
        (:class:`~cleo_rules.history.Said` items), or None."""
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
        made: list = []
        kind, rule, span, normalized, note, referents, _ = self._walk(message, recorder, said, made)
        if note is None and recorder is None and not (made and made[0].history_read):
            # no lane read the history: the kind is the message's own, which the next turn's anchor asks for
            self._history_kinds.remember(message, kind)
        given = None
        if kind == SUBSTANTIVE and rule is None and note is None and normalized is not None and said:
            given = self._named_choice(normalized, said, recorder)
            if given is not None:
                kind, rule, span = FOLLOW_UP, given[1], given[2]
                given = given[:2]
        # the query: nothing for a skip, the message as typed for a correction
        # or a substantive message, its parts combined for a follow-up
        if kind == FOLLOW_UP and normalized is not None:  # a follow-up's text is always normalised
            query, parts, why = shape(self, message, normalized, said, recorder, frozenset(referents), given)
            note = note or why
        elif kind == CORRECTION and normalized is not None:
            query, parts, why = shape_correction(self, message, normalized, said, recorder, span)
            note = note or why
        else:
            query, parts = (None, ()) if kind == SKIP else (message, (Part("message", message, "message"),))
        anchor = next((p.text for p in parts if p.name == "anchor"), None)
        orig_span = matched = None
        if span is not None:
            orig_span = original_span(message[: self.settings.max_scan_chars], span[0], span[1], normalized)
            matched = message[orig_span[0]:orig_span[1]]
        name, version, digest = self._identity
        return make_decision(kind=kind, rule=rule, span=orig_span, matched=matched, query=query,
                             anchor=anchor, message=message, pack=name, pack_version=version, pack_hash=digest,
                             note=note, parts=parts)

    def explain(self, message: str, history=()) -> Explanation:
        """Classify ``message`` and report every rule, in the order they are applied (see :mod:`cleo_rules.explain`)."""
        recorder = Recorder(self)
        return recorder.explanation(self.classify(message, history, recorder))
