"""What the walk hands its lanes, and the callables it asks them through (``Lane.bind``).

The matcher asks each lane through a callable the lane binds once, when the
matcher is built: the pattern lanes' look up each rule's search and checks
ahead and let a match stand without asking ``accept`` where it cannot refuse
it. Here a matcher whose lanes are asked through their plain ``search`` (the
default :meth:`Lane.bind <cleo_rules.walk.Lane.bind>`) decides and explains
every message as the bundled one does.
"""

from __future__ import annotations

import copy
import dataclasses
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.families.patterns import PatternLane
from cleo_rules.matcher import Matcher
from cleo_rules.text import normalize, word_pattern
from cleo_rules.walk import Lane, Walk

PACK = load_pack()
MATCHER = PACK.matcher
HISTORY = ["Compare the two van insurance quotes from Brightline and Harlow",
           {"role": "assistant", "content": "Brightline is cheaper; Harlow covers breakdown."}]


def searched_plainly(lane: Lane) -> Lane:
    """A copy of ``lane`` that the matcher asks through its ``search``, numbered from 0 (the default bind)."""
    plain = copy.copy(lane)
    plain.bind = types.MethodType(Lane.bind, plain)  # pyright: ignore[reportAttributeAccessIssue]
    return plain


PLAIN = Matcher(MATCHER.settings, [searched_plainly(lane) for lane in MATCHER.lanes], MATCHER._identity,
                context=MATCHER.context, requirements=MATCHER.requirements)

# every example and counterexample of the pack's rules: each lane takes some and refuses others
EXAMPLES = sorted({(e["message"] if isinstance(e, dict) else e)
                   for rule in PACK.corrections + PACK.follow_ups + PACK.vocab_sets
                   for e in rule.examples + rule.counterexamples})
WORDS = sorted({w for e in EXAMPLES for w in normalize(e).split()})


def test_the_examples_reach_every_lane_and_are_taken_by_each():
    lanes = {MATCHER.walk(message).lane for message in EXAMPLES}
    assert lanes >= set(range(len(MATCHER.lanes)))


@pytest.mark.parametrize("history", [(), HISTORY])
def test_lanes_bound_for_speed_decide_and_explain_as_their_search_does(history):
    for message in EXAMPLES:
        assert MATCHER.walk(message) == PLAIN.walk(message), message
        assert MATCHER.classify(message, history) == PLAIN.classify(message, history), message
        assert MATCHER.explain(message, history) == PLAIN.explain(message, history), message


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WORDS) | st.text(min_size=1, max_size=8), min_size=0, max_size=30))
def test_on_any_message_of_the_packs_words_the_bound_lanes_decide_as_search_does(words):
    message = " ".join(words)
    assert MATCHER.walk(message) == PLAIN.walk(message)
    assert MATCHER.explain(message, HISTORY) == PLAIN.explain(message, HISTORY)


class Refusing(PatternLane):
    """A lane that overrides ``accept`` (refusing every match) and not ``unjudged``."""

    def accept(self, rule, match, walk) -> bool:
        return False


class RefusingJudged(Refusing):
    """The same, with ``unjudged`` defined beside its ``accept``: matches in messages of up to 3 words stand."""

    def accept(self, rule, match, walk) -> bool:
        return False

    def unjudged(self, rule) -> int:
        return 3


def walk_of(message: str) -> Walk:
    text = normalize(message)
    words = word_pattern(text)
    return Walk(message, text, words, words.findall(text), (), None, MATCHER.context.vocabulary)


@pytest.mark.parametrize("start", [0, 7])
def test_a_lane_that_overrides_accept_alone_is_asked_of_every_match(start):
    corrections = MATCHER.lanes[0]
    message = "We tried that one already."
    index = next(i for i, r in enumerate(corrections.rules) if r.compiled.search(normalize(message)))
    candidates = [start + i for i in range(len(corrections.rules))]
    kept = PatternLane(corrections.rules, stage="correction", decides=corrections.decides, order=10, timeout=1.0)
    hit = kept.bind(start)(walk_of(message), candidates)
    assert hit == kept.search(walk_of(message), range(index, index + 1))
    assert hit is not None and hit[0] == corrections.rules[index].id
    refusing = Refusing(corrections.rules, stage="correction", decides=corrections.decides, order=10, timeout=1.0)
    assert refusing.bind(start)(walk_of(message), candidates) is None
    judged = RefusingJudged(corrections.rules, stage="correction", decides=corrections.decides, order=10,
                            timeout=1.0)
    assert judged.bind(start)(walk_of(message), candidates) is None  # 5 words: accept is asked, and refuses
    assert judged.bind(start)(walk_of("We tried that"), candidates) is not None  # 3 words: it stands unasked


def test_the_walk_a_lane_reads_has_every_field_set_as_walk_sets_it():
    seen = []

    class Watching(Lane):
        stage, order, longest = "watch", 5, None

        def search(self, walk, candidates):
            seen.append({field: getattr(walk, field) for field in Walk.__slots__})  # as it is handed over
            return None

    matcher = Matcher(MATCHER.settings, [Watching(), *MATCHER.lanes], MATCHER._identity, context=MATCHER.context,
                      requirements=MATCHER.requirements)
    message = "What about the other one, the cheaper?"
    said = object()
    matcher.walk(message, None, said)
    (fields,) = seen
    text = normalize(message)
    made = Walk(message, text, word_pattern(text), word_pattern(text).findall(text), said, None,
                MATCHER.context.vocabulary)
    assert fields == {field: getattr(made, field) for field in Walk.__slots__}
    assert fields["_history"] is said and fields["cover"] is None and fields["spans"] is None
    assert fields["history_read"] is False  # this lane reads no history


def test_the_rule_that_decides_a_named_choice_is_the_one_the_lanes_context_names():
    """The matcher knows no family: which rule decides a message naming an offered option is handed to it in the
    lanes' context (made by the families from the vocabulary set of role ``choice``), never looked up in a set."""
    offer = ["Which van insurer covers tools left in the van overnight?",
             {"role": "assistant", "content": "Two do: Brightline Commercial at 2,140 a year and Zego Van at 1,865."}]
    assert MATCHER.context.choice_rule == "vocab.choice"

    def with_choice(rule):
        return Matcher(MATCHER.settings, MATCHER.lanes, MATCHER._identity, requirements=MATCHER.requirements,
                       context=dataclasses.replace(MATCHER.context, choice_rule=rule))

    decided = with_choice("team.pick").classify("Brightline, please.", offer)
    assert (decided.kind, decided.rule) == ("follow_up", "team.pick")
    assert with_choice(None).classify("Brightline, please.", offer).rule != "vocab.choice"
