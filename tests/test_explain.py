"""explain: the matcher's own walk, recorded rule by rule, spans in the user's text."""

from __future__ import annotations

import dataclasses

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.explain import PREFILTERED, Recorder
from cleo_rules.pack.examples import example_case
from cleo_rules.pack.model import Pack, PatternRule, VocabSet
from cleo_rules.text import normalize

from helpers import PACKS

PACK = load_pack()
MINI = load_pack(PACKS / "mini-1.0")
ANCHOR = "Compare the two van insurance quotes from Brightline and Harlow"
RULES = len(PACK.corrections) + len(PACK.follow_ups)


EARLY = [r for r in PACK.follow_ups if not r.after_vocabulary]
LATE = [r for r in PACK.follow_ups if r.after_vocabulary]  # tried after the vocabulary test


def by_rule(ex):
    return {a.rule: a for a in ex.attempts if a.rule is not None}


def vocabulary_attempt(ex):
    (attempt,) = [a for a in ex.attempts if a.stage == "vocabulary"]
    return attempt


def test_every_rule_is_listed_in_the_order_it_is_applied():
    ex = PACK.explain("Not that one, the other one.", [ANCHOR])
    assert [a.stage for a in ex.attempts] == (["length"] + ["correction"] * len(PACK.corrections)
                                              + ["follow_up"] * len(EARLY) + ["vocabulary"]
                                              + ["follow_up"] * len(LATE))
    assert [a.rule for a in ex.attempts if a.stage in ("correction", "follow_up")] == \
        [r.id for r in PACK.corrections + PACK.follow_ups]
    assert ex.decision == PACK.classify("Not that one, the other one.", [ANCHOR])
    assert ex.to_dict()["decision"]["kind"] == "correction"


def test_spans_are_in_the_users_own_text():
    message = "   \uff2e\uff4f\uff54 that one, the other one."   # full-width letters, leading spaces
    ex = PACK.explain(message)
    fired = [a for a in ex.attempts if a.fired]
    assert [a.rule for a in fired] == ["correction.no-not-that-one"]
    assert fired[0].span == ex.decision.span == (3, 16)
    assert fired[0].matched == ex.decision.matched == message[3:16] == "\uff2e\uff4f\uff54 that one,"
    assert ex.normalized.startswith("not that one,")   # the patterns still see normalised text


def test_a_vocabulary_follow_up_reports_the_decisions_span():
    message = "  \uff39\uff45\uff53,  go with the second one!"   # full-width "Yes"
    ex = PACK.explain(message, [ANCHOR])
    vocabulary = vocabulary_attempt(ex)
    assert (vocabulary.fired, vocabulary.rule) == (True, "vocab.choice")
    assert vocabulary.span == ex.decision.span == (8, 15)
    assert vocabulary.matched == ex.decision.matched == message[8:15] == "go with"


def test_rules_the_prefilter_rules_out_are_listed_as_not_tried():
    message = "Find me a dentist near Mission Street."
    ex = PACK.explain(message)
    assert vocabulary_attempt(ex).tried  # the walk went as far as the vocabulary test
    candidates = set(PACK.matcher._index.candidates(normalize(message)))
    patterns = [a for a in ex.attempts if a.stage in ("correction", "follow_up")]
    for index, attempt in enumerate(patterns):
        assert attempt.tried == (index in candidates), attempt
        if not attempt.tried and index in PACK.matcher.unconditional:  # no required words: left out for its length
            cap = PACK.matcher.word_caps[index]
            assert (attempt.fired, attempt.note) == (
                False, f"not tried: the message has 7 words and this rule takes at most {cap} (prefilter)")
        elif not attempt.tried:
            assert (attempt.fired, attempt.note) == (False, PREFILTERED)
    assert not all(a.tried for a in patterns)
    assert any(not patterns[i].tried for i in PACK.matcher.unconditional if i < len(patterns))


def test_after_the_deciding_rule_nothing_is_tried():
    ex = PACK.explain("We tried that one already.", [ANCHOR])
    rules = [a.rule for a in ex.attempts]
    after = ex.attempts[rules.index("correction.already-tried") + 1:]
    assert after and all(not a.tried and a.note == "not tried: correction.already-tried decided first"
                         for a in after)


def test_a_long_message_stops_before_the_follow_ups():
    message = ", ".join(["yes"] * 13)
    ex = PACK.explain(message)
    assert ex.decision.kind == "substantive" and len(ex.words) == 13
    follow = [a for a in ex.attempts if a.stage in ("follow_up", "vocabulary")]
    # a rule that takes longer messages (max_words) keeps the walk going: the others that match are refused
    assert follow and all(a.note == "not tried: 13 words; follow-ups have at most 12" or
                          a.note == "matched, but the message has 13 words and this rule takes at most 12"
                          for a in follow)
    assert not any(a.fired for a in follow) and not vocabulary_attempt(ex).tried


def test_a_topic_bound_that_refuses_a_match_is_shown_with_its_counts():
    refused = []
    for rule in PACK.follow_ups:
        # (a guarded rule may be refused by its guard, a long message by its length, first)
        if rule.topic_bounded and not rule.guarded and not rule.requires_antecedent and rule.max_words is None:
            for item in rule.examples + rule.counterexamples:
                message, history = example_case(item)
                ex = PACK.explain(message, history)
                attempt = by_rule(ex)[rule.id]
                if len(ex.words) <= PACK.settings.max_follow_up_words and attempt.tried and attempt.matched is not None and not attempt.fired:
                    refused.append((rule, message, attempt))
    assert refused, "no example of a topic-bounded rule is refused for its topic words"
    for rule, message, attempt in refused:
        assert "topic word(s) outside the match" in attempt.note, attempt
        if rule.max_content_words is not None:
            assert f"at most {rule.max_content_words}" in attempt.note
        assert message[attempt.span[0]:attempt.span[1]] == attempt.matched
        ex = PACK.explain(message)
        if ex.decision.kind == "substantive" and vocabulary_attempt(ex).tried:
            # the cover was worked out whole: every topic word is named
            assert vocabulary_attempt(ex).note.startswith("words not in the vocabulary: ")


def test_the_vocabulary_test_names_the_word_it_stopped_at():
    ex = PACK.explain("Brightline quote for the van")
    assert ex.decision.kind == "substantive"
    assert vocabulary_attempt(ex).note == "word not in the vocabulary: brightline (the test stops at the first)"
    assert vocabulary_attempt(PACK.explain("Hmm, well, um, actually, maybe.")).note == "only filler words"


def test_a_skip_lists_the_length_test_alone():
    ex = PACK.explain("  ok  ")
    assert (ex.normalized, ex.words) == ("", ())
    assert [(a.stage, a.fired) for a in ex.attempts] == [("length", True)]
    assert ex.decision.kind == "skip"


class _Flaky:
    """A compiled pattern whose first ``fails`` searches run out of time."""

    def __init__(self, pattern, fails):
        self._rx = regex.compile(pattern)
        self.fails = fails
        self.calls = 0

    def search(self, text, timeout=None):
        self.calls += 1
        if self.calls <= self.fails:
            raise TimeoutError("regex timed out")
        return self._rx.search(text, timeout=timeout)


def _with(pack, *, corrections=(), follow_ups=(), vocab_sets=()):
    return Pack(name=pack.name, version=pack.version, locale=pack.locale, description="", path=pack.path,
                content_hash="test", settings=pack.settings, vocab_sets=tuple(vocab_sets) + pack.vocab_sets,
                follow_ups=tuple(follow_ups) + pack.follow_ups, corrections=tuple(corrections) + pack.corrections,
                context=pack.context, slots=pack.slots, slots_seed=pack.slots_seed)


def _rule(rid, kind, pattern, compiled=None):
    return PatternRule(id=rid, kind=kind, description="", pattern=pattern, examples=(), counterexamples=(),
                       file="test", line=1, compiled=compiled or regex.compile(pattern))


@pytest.mark.parametrize("fails, kind", [(1, "correction"), (2, "substantive")])
def test_explain_retries_a_timed_out_search_as_classify_does(fails, kind):
    flaky = _Flaky(r"\bflaky\b", fails)
    pack = _with(MINI, corrections=[_rule("correction.flaky", "correction", r"\bflaky\b", flaky)])
    ex = pack.explain("That one is flaky again.", [ANCHOR])
    assert flaky.calls == 2 and ex.decision.kind == kind
    attempt = by_rule(ex)["correction.flaky"]
    assert attempt.fired == (kind == "correction")
    if kind == "substantive":
        assert attempt.note.startswith("timed out twice") and ex.decision.note == "timeout in correction.flaky"
        later = ex.attempts[ex.attempts.index(attempt) + 1:]
        assert all(not a.tried and "correction.flaky timed out" in a.note for a in later)


SLOW_TOKEN = VocabSet(id="vocab.slow", role="choice", description="", words=(), token_patterns=("(?:a|aa)+z",),
                      examples=(), counterexamples=(), file="test", line=1)


def test_a_token_pattern_timing_out_while_counting_topic_words_is_reported():
    """A follow-up with topic bounds matches; counting the topic words runs the
    vocabulary, whose token pattern runs out of time."""
    bounded = dataclasses.replace(_rule("follow_up.bounded", "follow_up", r"\bthat works\b"), max_content_words=2)
    pack = _with(MINI, follow_ups=[bounded], vocab_sets=[SLOW_TOKEN])
    message = "Yes, that works " + "a" * 48
    ex = pack.explain(message, [ANCHOR])
    assert ex.decision == pack.classify(message, [ANCHOR])
    assert ex.decision.note == "timeout in vocab.slow"
    attempt = by_rule(ex)["follow_up.bounded"]
    assert not attempt.fired and attempt.matched == "that works" and "vocab.slow timed out" in attempt.note
    assert ex.attempts[-1].rule == "vocab.slow" and ex.attempts[-1].note.startswith("timed out")
    later = ex.attempts[ex.attempts.index(attempt) + 1:-1]
    assert later and all(not a.tried for a in later)


def test_a_token_pattern_timing_out_in_the_vocabulary_test_is_reported():
    pack = _with(MINI, vocab_sets=[SLOW_TOKEN])
    message = "Yes, that one " + "a" * 48
    ex = pack.explain(message)
    assert ex.decision.note == "timeout in vocab.slow"
    assert ex.attempts[-1].rule == "vocab.slow" and ex.attempts[-1].note.startswith("timed out")


def test_a_message_over_the_scan_limit_looks_for_corrections_only():
    message = "Tell me more. " + "x" * PACK.settings.max_scan_chars
    ex = PACK.explain(message)
    assert ex.decision.kind == "substantive"
    note = f"not tried: the message is over {PACK.settings.max_scan_chars} characters; only corrections are looked for"
    assert all(a.note == note for a in ex.attempts if a.stage in ("follow_up", "vocabulary"))


# -- open input -----------------------------------------------------------------

VOCAB = sorted({w for s in PACK.vocab_sets for w in s.words})
WORD = st.sampled_from(VOCAB + ["van", "insurance", "Brightline", "quote", "tried", "meant", "not", "wrong",
                                "\uff2e\uff4f\uff54", "THAT", "one,"])
SEP = st.sampled_from([" ", "  ", ", ", ". ", "! ", "? ", "\u00a0", " - ", "\u2019"])
CHAT = st.lists(st.tuples(WORD, SEP), min_size=1, max_size=14).map(lambda ws: " " + "".join(w + s for w, s in ws))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CHAT, st.lists(CHAT, max_size=3))
def test_explain_makes_the_decision_classify_makes_and_accounts_for_every_rule(message, history):
    decision = PACK.classify(message, history)
    assert PACK.matcher.classify(message, history, Recorder(PACK.matcher)) == decision
    ex = PACK.explain(message, history)
    assert ex.decision == decision
    if decision.kind == "skip":
        assert len(ex.attempts) == 1
        return
    assert len(ex.attempts) == RULES + 2
    for a in ex.attempts:
        if a.span is not None:
            assert message[a.span[0]:a.span[1]] == a.matched
        assert a.tried or not a.fired
    fired = [a for a in ex.attempts[1:] if a.fired]
    if decision.rule is None:
        assert fired == []
    else:
        assert [(a.rule, a.span, a.matched) for a in fired] == [(decision.rule, decision.span, decision.matched)]
