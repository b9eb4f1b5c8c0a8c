"""The matching walk on the bundled pack: classification order, the query, the prefilter."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from cleo_rules import Decision, load_pack
from cleo_rules.prefilter import LiteralIndex
from cleo_rules.pack.examples import example_case

ANCHOR = "Compare the two van insurance quotes from Brightline and Harlow"


@pytest.fixture(scope="module")
def pack():
    return load_pack()


@pytest.mark.parametrize("message", [
    "Yes, go with the second one.", "Sounds good to me.", "That works, thanks!", "Perfect, thank you!",
    "The second one, please.", "Let's go with option B.", "Go with the cheaper one.", "I'll take the 3rd one.",
    "What about the other one?", "Tell me more.", "Can you make it shorter?", "Why that one?",
    "Any other options?", "Thanks, that's all for now.", "Try that one.", "Let's try the first one.",
    "Could we try that one?",
])
def test_follow_ups_are_combined_with_the_last_substantive_message(pack, message):
    d = pack.classify(message, [ANCHOR])
    assert d.kind == "follow_up", d
    assert d.anchor == ANCHOR
    assert d.query == f"{ANCHOR}\n{message}"


@pytest.mark.parametrize("message", [
    "We tried that one already.", "I said no to that one.", "That's not what I asked.",
    "That's not what I meant.", "I already told you.", "That didn't work for us.", "We ruled that one out.",
    "We stopped using that one.", "No, not that one.", "That's wrong.", "Actually, I'd like the earlier one.",
])
def test_corrections_are_never_combined(pack, message):
    d = pack.classify(message, [ANCHOR, "Yes, go with the second one."])
    assert d.kind == "correction", d
    assert d.rule.startswith("correction.")
    assert d.query == message and d.anchor is None


@pytest.mark.parametrize("message", [
    "Yes, and pull up the Brightline insurance quotes for the van",
    "We tried a loyalty scheme in 2023, what were the results?",
    "What is the best van insurance for a sole trader?",
    "Okay, now draft the invoice for the Harlow job",
])
def test_substantive_messages_are_searched_as_typed(pack, message):
    d = pack.classify(message, [ANCHOR])
    assert (d.kind, d.rule, d.query, d.anchor) == ("substantive", None, message, None)


def test_skip_is_exactly_under_ten_characters(pack):
    assert pack.classify("Yes, sure").kind == "skip"  # 9 characters
    assert pack.classify("Yes, sure.").kind == "follow_up"  # 10
    assert pack.classify("   ok   \n").kind == "skip"  # stripped first
    d = pack.classify("Thanks!", [ANCHOR])
    assert (d.query, d.anchor, d.rule) == (None, None, None)


def test_anchor_is_the_last_substantive_message_skipping_nods_corrections_and_skips(pack):
    history = ["What did the Leeds bakery supplier charge for rye flour?", ANCHOR, "Yes, the second one.",
               "We tried that one already.", "ok", "Tell me more."]
    d = pack.classify("What about the other one?", history)
    assert d.anchor == ANCHOR


def test_follow_up_without_substantive_history_is_searched_as_typed(pack):
    d = pack.classify("Sounds good to me.", ["ok", "Yes, please."])
    assert (d.kind, d.query, d.anchor) == ("follow_up", "Sounds good to me.", None)
    assert "no substantive message" in d.note


def test_long_messages_are_never_follow_ups(pack):
    words = ", ".join(["yes"] * 13)  # 13 vocabulary words: over max_follow_up_words (12)
    assert pack.classify(words).kind == "substantive"
    assert pack.classify(", ".join(["yes"] * 12)).kind == "follow_up"


def test_span_and_matched_are_in_the_users_own_words(pack):
    message = "Honestly\u2014WE\u2019VE  already TRIED it, thanks"
    d = pack.classify(message)
    assert d.kind == "correction"
    assert message[d.span[0]:d.span[1]] == d.matched == "WE\u2019VE  already TRIED it"


def test_decision_is_frozen_and_carries_the_pack_identity(pack):
    d = pack.classify("Yes, go with the second one.", [ANCHOR])
    assert isinstance(d, Decision)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.kind = "substantive"
    assert (d.pack, d.pack_version, d.pack_hash) == (pack.name, pack.version, pack.content_hash)
    assert d.to_dict()["span"] == list(d.span)
    # the same value the dataclass constructor makes
    assert d == Decision(**{f.name: getattr(d, f.name) for f in dataclasses.fields(Decision)})


def test_custom_combine_template(pack_copy):
    pack_copy.replace("pack.yaml", 'combine: "{anchor}\\n{topic}\\n{referent}\\n{message}\\n{reply}"', 'combine: "{anchor} -- {message}"')
    pack = load_pack(pack_copy.dir)
    assert pack.classify("Tell me more.", [ANCHOR]).query == f"{ANCHOR} -- Tell me more."


def test_history_must_be_a_sequence_of_strings(pack):
    with pytest.raises(TypeError):
        pack.classify("Tell me more.", "a single string")
    with pytest.raises(TypeError):
        pack.classify("Tell me more.", [ANCHOR, 3])
    with pytest.raises(TypeError):
        pack.classify(None)


def test_rule_order_is_file_order_not_text_position(pack):
    # both follow_up.tell-me-more ("elaborate", at 10) and follow_up.anaphoric-question (at 0)
    # match; tell-me-more comes first in the file and wins
    assert pack.classify("Could you elaborate on that?").rule == "follow_up.tell-me-more"


def test_vocabulary_decision_names_the_most_telling_set(pack):
    assert pack.classify("Yes, go with the second one.").rule == "vocab.choice"
    assert pack.classify("Thanks, that's all.").rule == "vocab.closing"
    assert pack.classify("That is it, then!").rule == "vocab.anaphor"


def test_timeout_falls_back_to_substantive_never_to_follow_up(pack, caplog):
    """A correction pattern that runs out of time must not let its message through to follow-up.

    The lint refuses such a pattern at load time, so the pack here is built
    directly, as if one had slipped through: ``(?:[a-z ,.]|[a-z ,.]{2})*\\d``
    backtracks exponentially on any long run of letters with no digit.
    """
    import regex

    from cleo_rules.pack.model import Pack, PatternRule

    slow = "^(?:[a-z ,.]|[a-z ,.]{2})*\\d"
    bad = PatternRule(id="correction.slow", kind="correction", description="slow", pattern=slow,
                      examples=(), counterexamples=(), file="x.yaml", line=1, compiled=regex.compile(slow))
    broken = Pack(name=pack.name, version=pack.version, locale=pack.locale, description="", path=pack.path,
                  content_hash="slow", settings=pack.settings, vocab_sets=pack.vocab_sets,
                  follow_ups=pack.follow_ups, corrections=(bad,) + pack.corrections, context=pack.context,
                  slots=pack.slots, slots_seed=0)
    message = "Yes, go with the second one, thank you so much."
    assert pack.classify(message, [ANCHOR]).kind == "follow_up"
    with caplog.at_level("WARNING", logger="cleo_rules"):
        d = broken.classify(message, [ANCHOR])
    assert (d.kind, d.rule, d.query, d.anchor) == ("substantive", None, message, None)
    assert d.note == "timeout in correction.slow"
    assert "pattern timed out in rule correction.slow" in caplog.text


# -- classifying with and without the prefilter --------------------------------

def _messages():
    pack = load_pack()
    out = []
    for rule in pack.follow_ups + pack.corrections:
        out.extend(example_case(e)[0] for e in rule.examples + rule.counterexamples
                   + tuple(getattr(rule, "request_forms", ())))
    for vset in pack.vocab_sets:
        out.extend(vset.examples)
    out += ["What is it?", "Is it cheaper?", "what about the other ones", "That one.", "And the price?",
            "It's fine, thanks", "no, i meant the blue one", "İt is too vague", "ok", "x" * 300]
    return out


def test_the_prefilter_changes_no_decision():
    fast = load_pack()
    slow = load_pack()
    matcher = slow._matcher
    matcher._index = LiteralIndex([None] * matcher._index.size)  # every rule searched
    matcher._history_kinds.clear()
    history = ("Which boiler should we fit in the new flat?",)
    for message in _messages():
        a, b = fast.classify(message, history=history), slow.classify(message, history=history)
        assert (a.kind, a.rule, a.span, a.query) == (b.kind, b.rule, b.span, b.query), message


def test_the_matcher_imports_the_prefilter_and_not_the_pack_lint():
    code = ("import sys, cleo_rules.matcher\n"
            "print(sorted(m for m in sys.modules if m.startswith('cleo_rules.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = eval(out)
    assert "cleo_rules.prefilter" in loaded
    assert not [m for m in loaded if m.startswith("cleo_rules.pack")], loaded


@pytest.mark.parametrize("message", ["something, ", "Something,  "])
def test_a_late_pattern_after_the_vocabulary_test_stopped_at_a_gap_counts_topic_words(pack, message):
    """The vocabulary test computes the cover but not the word spans; a topic-bounded late pattern
    tried after it must still count topic words (this used to raise TypeError)."""
    d = pack.classify(message)
    assert d.kind in ("follow_up", "substantive") and d.query is not None
    assert pack.explain(message).decision == d
