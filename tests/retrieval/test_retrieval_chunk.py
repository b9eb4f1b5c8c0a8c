"""Chunking documents into passages and conversations into snippets."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules.retrieval.chunk import Snippet, check_chunking, chunk_text, conversation_snippets

WORD = re.compile(r"\S+")


def words(text):
    return WORD.findall(text)


def test_short_text_is_one_chunk_with_its_span():
    text = "  The boiler service costs £85.  "
    (chunk,) = chunk_text(text, size=50, overlap=10)
    assert chunk.text == "The boiler service costs £85."
    assert text[chunk.start : chunk.end] == chunk.text


def test_chunks_break_at_sentences_and_overlap():
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    chunks = chunk_text(text, size=6, overlap=3)
    assert [c.text for c in chunks] == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten eleven twelve.",
    ]


def test_no_overlap_means_disjoint_chunks():
    text = "One two three. Four five six. Seven eight nine."
    chunks = chunk_text(text, size=3, overlap=0)
    assert [c.text for c in chunks] == ["One two three.", "Four five six.", "Seven eight nine."]


def test_a_sentence_longer_than_the_size_is_cut_into_pieces():
    text = " ".join(f"w{i}" for i in range(25))
    chunks = chunk_text(text, size=10, overlap=0)
    assert [len(words(c.text)) for c in chunks] == [10, 10, 5]


def test_blank_lines_end_a_sentence():
    text = "Heading without a stop\n\nBody text here."
    chunks = chunk_text(text, size=4, overlap=0)
    assert [c.text for c in chunks] == ["Heading without a stop", "Body text here."]


@pytest.mark.parametrize("size,overlap", [(0, 0), (10, 10), (10, -1), (5, 7), (True, 0), (3.5, 1)])
def test_bad_chunking_settings_are_refused(size, overlap):
    with pytest.raises(ValueError):
        check_chunking(size, overlap)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="abc .!?\n", min_size=0, max_size=12), min_size=0, max_size=40).map(" ".join),
    st.integers(1, 30),
    st.data(),
)
def test_chunks_cover_every_word_in_order_within_the_size(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = chunk_text(text, size=size, overlap=overlap)
    all_words = words(text)
    assert bool(chunks) == bool(all_words)
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert 1 <= len(words(c.text)) <= size
    # starts strictly increase, and every word falls inside some chunk
    assert all(a.start < b.start for a, b in zip(chunks, chunks[1:]))
    covered = set()
    for c in chunks:
        covered.update(m.start() for m in WORD.finditer(text) if c.start <= m.start() < c.end)
    assert covered == {m.start() for m in WORD.finditer(text)}
    # consecutive chunks share at most ``overlap`` words
    for a, b in zip(chunks, chunks[1:]):
        shared = [m for m in WORD.finditer(text) if b.start <= m.start() < a.end]
        assert len(shared) <= overlap


def test_conversation_becomes_exchanges():
    messages = [
        {"role": "assistant", "text": "Welcome back."},
        {"role": "user", "text": "Compare the two van insurance quotes."},
        {"role": "assistant", "text": "Hadley is £2,140; Cresswell is £1,865."},
        {"role": "user", "text": "Go with Hadley."},
        {"role": "assistant", "text": "Done."},
        {"role": "assistant", "text": "I also noted the renewal date."},
    ]
    snippets = conversation_snippets(messages)
    assert snippets == [
        Snippet("assistant: Welcome back.", 0, 0),
        Snippet("user: Compare the two van insurance quotes.\nassistant: Hadley is £2,140; Cresswell is £1,865.", 1, 2),
        Snippet("user: Go with Hadley.\nassistant: Done.\nassistant: I also noted the renewal date.", 3, 5),
    ]


def test_long_exchange_is_split_and_keeps_message_positions():
    long_reply = " ".join(f"Sentence number {i} is here." for i in range(40))
    messages = [{"role": "user", "text": "Tell me everything."}, {"role": "assistant", "text": long_reply}]
    snippets = conversation_snippets(messages, size=30, overlap=5)
    assert len(snippets) > 3
    assert all(len(words(s.text)) <= 30 for s in snippets)
    assert snippets[0].first_message == 0 and snippets[0].text.startswith("user: Tell me everything.")
    assert all(s.first_message == 1 and s.last_message == 1 for s in snippets[1:])
    assert snippets[-1].text.endswith("Sentence number 39 is here.")
