"""Hostile messages and histories (issue 12, items 11 and 12): invisible characters, memory held by the history cache."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.text import visible_length

from helpers.hostile import run_python

PACK = load_pack()
HISTORY = ["Can you find me a cheap van insurance quote for next month?"]

# format characters (category Cf) of several kinds: zero-width space, joiners, word joiner, BOM,
# bidirectional marks and isolates, invisible operators, the Mongolian vowel separator, a tag character
FORMAT = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u200e", "\u200f", "\u202a", "\u2066",
          "\u2062", "\u180e", "\U000e0041", "\u00ad"]


def test_every_listed_character_is_a_format_character():
    assert all(unicodedata.category(c) == "Cf" for c in FORMAT)


# -- 11: invisible characters do not count toward the ten -------------------------------------------------------

@pytest.mark.parametrize("message", [
    "\u200b" * 20,                                # twenty zero-width spaces
    "Yes" + "\u200b" * 7 + ".",                   # a nod padded to ten with zero-width spaces
    "ok" + "\u2060\ufeff" * 6,                    # word joiners and BOMs after a word
    "\u200e\u200f" * 8 + " hi ",                  # direction marks around a greeting
    "\u200b   \u200b  no \u200b",                 # white space between format characters at the ends
    "".join(FORMAT) + "thanks",
])
def test_11_invisible_characters_do_not_count_toward_the_ten(message):
    assert len(message.strip()) >= 10  # searched before
    d = PACK.classify(message, HISTORY)
    assert d.kind == "skip" and d.query is None


@pytest.mark.parametrize("message, kind", [
    ("Yes, go with the\u200b second one.", "follow_up"),
    ("We tried\u200b that one already.", "correction"),
    ("What\u2060 does the policy cover for a van?", "substantive"),
])
def test_11_ten_or_more_visible_characters_keep_their_decision(message, kind):
    assert PACK.classify(message, HISTORY).kind == kind


def test_11_inner_spaces_still_count():
    assert PACK.classify("a    \u200b    b", HISTORY).kind != "skip"  # ten visible characters, eight of them spaces


def test_11_explain_counts_visible_characters():
    ex = PACK.explain("Yes" + "\u200b" * 7 + ".")
    assert ex.decision.kind == "skip"
    assert ex.attempts[0].note.startswith("4 visible characters")


TEXT = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(FORMAT + [" ", "\t", "\n"])), max_size=40)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_11_skip_exactly_when_under_ten_visible_characters(message):
    """Skipped iff under ten characters once format characters go and the ends are stripped;
    never searched when it was skipped before (under ten after stripping alone)."""
    visible = len("".join(c for c in message if unicodedata.category(c) != "Cf").strip())
    assert visible_length(message) == visible <= len(message.strip())
    d = PACK.classify(message, HISTORY)
    assert (d.kind == "skip") == (visible < 10)
    if len(message.strip()) < 10:
        assert d.kind == "skip"


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=10, max_size=60).filter(lambda m: m.isascii() or not any(
    unicodedata.category(c) == "Cf" for c in m)))
def test_11_messages_without_format_characters_are_decided_as_before(message):
    """With no format character, the visible length is the stripped length: the rule before."""
    assert visible_length(message) == len(message.strip())


# -- 12: the history cache holds no message alive ----------------------------------------------------------------

def test_12_history_cache_keys_are_small_and_bounded():
    from cleo_rules.matcher import _KindCache

    seen = []
    cache = _KindCache(lambda m: seen.append(len(m)) or "substantive", min_chars=10, max_scan_chars=4000, size=8)
    big = [str(i) + "x" * (1 << 20) for i in range(20)]
    for m in big:
        assert cache.kind(m) == "substantive"
    assert len(cache) == 8  # least recently used entries went
    assert all(len(k) <= 17 for k in cache._long)  # a digest and a flag, never the message
    assert cache.kind(big[-1]) == "substantive" and len(seen) == 20  # remembered
    assert cache.kind(big[-1][:3000] + "a different ending") == "substantive" and len(seen) == 21
    assert cache.kind("  " + "\u200b" * 600 + "short  ") == "skip"  # long, but five visible characters
    # a message that goes on past the scan is told apart from its first 4000 characters
    assert cache.kind("y" * 4000) == "substantive" and cache.kind("y" * 4001) == "substantive"
    assert len(seen) == 23
    # short messages are their own keys, at most `size` of them: a bound in bytes too
    for i in range(20):
        assert cache.kind(f"message number {i} of twenty, short enough to be its own key") == "substantive"
    assert len(cache._short) == 8 and len(seen) == 43
    assert len(cache) == 16


def test_12_history_kinds_match_the_message_kinds():
    history = ["Can you find me a van insurance quote?", "Yes, go with the second one.", "   ", "ok thanks",
               " " * 3990 + "Yes please", "tell me more about the second quote " * 200]
    for m in history:
        assert PACK._matcher._history_kinds.kind(m) == PACK.kind_of(m), m


def test_12_large_history_items_are_freed_after_the_turn():
    """300 turns, each with a distinct 1 MB history item: memory returns once the items are dropped."""
    res = run_python('''
        import gc, resource
        from cleo_rules import load_pack
        pack = load_pack()
        pack.classify("warm up the pack, please", ["Can you find me a cheap van insurance quote?"])
        gc.collect()
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * resource.getpagesize()
        before = rss()
        for i in range(300):
            item = ("Can you compare the van insurance quotes %d " % i) + "word " * 200000
            pack.classify("Yes, go with the second one.", [item])
            del item
        gc.collect()
        print((rss() - before) >> 20)
    ''', memory=3 << 30, seconds=120)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout.strip()) < 50, res.stdout  # was about 300 MB held by the cache
