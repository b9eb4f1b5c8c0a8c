"""The decision value: frozen, comparable, and the same however it is made."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from cleo_rules import Decision
from cleo_rules.decision import make_decision

FIELDS = dict(kind="follow_up", rule="vocab.choice", span=(5, 12), matched="go with",
              query="Compare the two quotes\nYes, go with the second one.", anchor="Compare the two quotes",
              message="Yes, go with the second one.", pack="cleo-en", pack_version="1.0.0", pack_hash="abc",
              note=None)


def test_make_decision_gives_the_value_the_constructor_gives():
    made, built = make_decision(**FIELDS), Decision(**FIELDS)
    assert type(made) is Decision
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert pickle.loads(pickle.dumps(made)) == built and copy.copy(made) == built
    assert dataclasses.replace(made, note="x").note == "x" and made.note is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.kind = "substantive"  # type: ignore[misc]


def test_to_dict_gives_the_span_as_a_list():
    assert Decision(**FIELDS).to_dict() == {**FIELDS, "span": [5, 12], "parts": []}
    assert Decision(**{**FIELDS, "span": None, "matched": None}).to_dict()["span"] is None


def test_searched_follows_the_query():
    assert Decision(**FIELDS).searched
    assert not Decision(**{**FIELDS, "kind": "skip", "query": None}).searched
