"""What a turn reads once and remembers: the message's own kind, a turn's names, the offer a follow-up turns down.

Each is a bounded memory of a deterministic reading, so a test here holds two
things: the reading is not done again, and what is remembered is what reading
afresh gives.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from cleo_rules import load_pack
from cleo_rules import referent_finder as referents_module
from cleo_rules.history import ASSISTANT, Said, read_history
from cleo_rules.matcher import _KindCache
from cleo_rules.values import coordinated, same_kinds, value_kinds

PACK = load_pack()

TRAIN = ["Book me a train to York on Friday", {"role": "assistant", "content": "There is one at 8:10 or 8:40."}]
#: Messages whose kind with a reply before them is not their own (a guarded correction), and messages whose is.
GUARDED = ["No, the other one.", "Wrong day, I said Thursday.", "I said Tuesday, not Thursday."]
PLAIN = ["Can you find me a van insurance quote for the Transit?", "Yes, go with the second one.", "ok",
         "Thanks, that's all for now.", "What does the 8:40 cost?", "   "]
#: Each message's kind on its own, read by a pack that has classified nothing in a conversation.
ALONE = {m: load_pack().kind_of(m) for m in GUARDED + PLAIN}


def test_a_turn_whose_walk_reads_no_history_leaves_its_own_kind_for_the_next_turns_anchor():
    pack = load_pack()
    matcher = pack.matcher
    matcher._history_kinds.clear()
    message = PLAIN[0]
    pack.classify(message, TRAIN)
    assert len(matcher._history_kinds) == 1  # the message's kind, held before the next turn asks for it
    walked = []
    kind_of = matcher._history_kinds._kind_of
    matcher._history_kinds._kind_of = lambda m: walked.append(m) or kind_of(m)
    said = read_history([*TRAIN, message, {"role": "assistant", "content": "Harlow quotes 410 a year."}])
    assert matcher.anchor(said) is said[2]  # substantive, as remembered
    assert walked == []  # not walked again


def test_a_turn_whose_walk_reads_the_history_does_not_leave_that_kind_as_its_own():
    pack = load_pack()
    for message in GUARDED:
        assert pack.classify(message, TRAIN).kind == "correction"  # after the assistant's reply
        assert pack.kind_of(message) != "correction"  # on its own
        assert pack.matcher._history_kinds.kind(message) == pack.kind_of(message)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(GUARDED + PLAIN), st.booleans()), min_size=1, max_size=8))
def test_the_kinds_remembered_are_the_kinds_of_the_messages_on_their_own(turns):
    pack = PACK
    pack.matcher._history_kinds.clear()
    history: list = []
    for message, replied in turns:
        pack.classify(message, history)
        history.append(message)
        if replied:
            history.append({"role": "assistant", "content": "There is one at 8:10 or 8:40."})
    for message, _ in turns:
        assert pack.matcher._history_kinds.kind(message) == ALONE[message], message


def test_the_kinds_remembered_are_bounded_least_recently_used_first():
    walked = []
    cache = _KindCache(lambda m: walked.append(m) or "substantive", min_chars=2, max_scan_chars=4000, size=4)
    for i in range(10):
        cache.remember(f"message {i}", "follow_up")
    assert len(cache) == 4
    assert [cache.kind(f"message {i}") for i in range(6, 10)] == ["follow_up"] * 4 and walked == []
    assert cache.kind("message 0") == "substantive" and walked == ["message 0"]  # forgotten: walked again
    assert len(cache) == 4
    cache.remember("x" * 600, "follow_up")  # longer than a key may be: not held
    assert len(cache) == 4


def test_a_turn_read_for_its_referents_is_not_named_again_for_its_topic(monkeypatch):
    finder = load_pack().matcher.referents
    finder._cache.clear()  # the matcher is shared by every pack compiled from these files in this process
    calls = []
    names = referents_module.names
    monkeypatch.setattr(referents_module, "names", lambda text, *a: calls.append(text) or names(text, *a))
    text = "The Potclays 80 litre front-loader is 3,150 and the Northern Kilns top-loader is 4,400."
    mentions = finder.mentions(Said(ASSISTANT, text, 1, 1))
    named = finder.names(text)
    assert calls == [text]  # one reading of the names serves both
    assert [m.text for m in mentions] == ["Potclays", "Northern Kilns"]
    assert [n.text for n in named] == [n.text for n in names(text, finder._common, finder._function,
                                                             finder._dictionary, finder._proper, finder._nouns)]


def test_a_follow_up_with_no_negation_reads_no_offer():
    pack = load_pack()
    finder = pack.matcher.referents
    finder._cache.clear()  # the matcher is shared by every pack compiled from these files in this process
    d = pack.classify("Thank you, goodbye.", TRAIN)
    assert d.kind == "follow_up"
    assert TRAIN[1]["content"] not in finder._cache  # the reply's options were not read
    d = pack.classify("Not the 8:10 please.", TRAIN)
    assert d.query is not None and "8:10" not in d.query.replace("Not the 8:10 please.", "")  # not searched


@given(st.lists(st.sampled_from(["TAP at 9:10 for 140 EUR", "easyJet", "8:40", "Friday", "the oak one", "12 kg",
                                 "£95", "and", "or", ",", ".", " ", "\n"]), max_size=30))
def test_same_kinds_is_one_kind_of_value_among_all_phrases(pieces):
    text = " ".join(pieces)
    for sentence in coordinated(text):
        assert same_kinds(text, sentence) == (len({value_kinds(text, a, b) for a, b in sentence}) <= 1)
