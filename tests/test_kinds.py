"""The names used across the project: each a string enum whose values are what JSON and traces carry."""

from __future__ import annotations

import json

import pytest

from cleo_rules.kinds import DecisionKind, FileKind, RuleKind, Source


def test_kinds_in_the_order_they_are_decided():
    assert tuple(DecisionKind) == ("skip", "correction", "follow_up", "substantive")


def test_file_kinds_in_the_order_the_help_lists_them():
    assert tuple(FileKind) == ("vocabulary", "follow_ups", "corrections", "referents", "lexicon", "slots")


def test_rule_kinds_and_the_kind_of_turn_each_decides():
    assert tuple(RuleKind) == ("vocabulary", "follow_up", "correction", "referent")
    assert [k.decides for k in RuleKind] == ["follow_up", "follow_up", "correction", "follow_up"]


@pytest.mark.parametrize("member", [*DecisionKind, *FileKind, *RuleKind, *Source])
def test_a_member_is_written_as_its_value(member):
    assert member == member.value and f"{member}" == member.value and str(member) == member.value
    assert json.dumps({"kind": member}) == json.dumps({"kind": member.value})
