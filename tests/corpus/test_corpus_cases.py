"""The checked-in corpus as part of the test run: one item per rule, plus the cross-rule and
hand-written cases, staleness and corpus problems. A failing item lists its failing cases.

Same verdicts as ``cleo-rules corpus check``; run that for the per-rule table.
"""

from __future__ import annotations

import pytest

from cleo_rules import load_pack
from cleo_rules.pack_check import check_compiled
from cleo_rules.corpus.model import CROSS, HAND

PACK = load_pack(check_examples=False)
RULES = [r.id for r in PACK.rules + PACK.referent_rules]


@pytest.fixture(scope="module")
def report():
    return check_compiled(PACK).corpus_view()


@pytest.mark.parametrize("rule_id", RULES)
def test_rule(report, rule_id):
    text = report.rule_text(rule_id)
    if text:
        pytest.fail(text, pytrace=False)


@pytest.mark.parametrize("group", [CROSS, HAND])
def test_group(report, group):
    text = report.rule_text(group)
    if text:
        pytest.fail(text, pytrace=False)


def test_corpus_is_up_to_date(report):
    if report.stale:
        lines = ["the corpus is stale: run `cleo-rules corpus build`"]
        lines += [f"  {s.group}: {s.reason} ({s.file})" for s in report.stale]
        pytest.fail("\n".join(lines), pytrace=False)


def test_corpus_files_and_templates_have_no_problems(report):
    others = [p for p in report.problems if p.rule not in RULES]
    if others:
        pytest.fail("\n".join(p.format() for p in others), pytrace=False)
