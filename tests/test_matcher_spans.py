"""A late pattern after a vocabulary test that covered every word: the word spans are made when needed."""

from __future__ import annotations

import pytest

from cleo_rules import load_pack

PACK = load_pack()


@pytest.mark.parametrize("message", ["something, ", "Something,", "something ,", "  something, "])
def test_a_message_the_vocabulary_covers_whole_reaches_the_late_patterns_without_raising(message):
    """``something,`` is all filler (no head), so the late patterns run on the vocabulary test's cover,
    which was made without the word spans: classify raised TypeError."""
    assert PACK.classify(message).kind == "follow_up"
