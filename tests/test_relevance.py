"""The nightly relevance check: reproducible samples and scored judgments."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules.errors import UsageError
from cleo_rules.relevance import sample_pairs, score_judgments, traced_pairs
from cleo_rules.retrieval import MemoryStore
from cleo_rules.trace import Tracer

from helpers.results import R, decision


def result(source, n, score=0.5):
    pid = f"{'c' if source == 'conversation' else 'd'}{n}"
    sep = "#s" if source == "conversation" else "#p"
    return R(source, pid, f"{pid}{sep}0", f"title {pid}", "2024-01-01", f"text {pid}", score)


@pytest.fixture
def memory(tmp_path, toy_embedder):
    """A memory with no items and the traces of six turns: follow-ups, a substantive, a correction, a skip."""
    store = MemoryStore.open(tmp_path / "memory", embedder=toy_embedder)
    tracer = Tracer(store)
    turns = [
        ("2024-05-30T10:00:00+00:00", decision(kind="substantive", query="kiln quotes", message="kiln quotes"),
         [result("conversation", 1), result("document", 2)]),
        ("2024-06-01T10:00:00+00:00", decision(), [result("conversation", 3), result("conversation", 4),
                                                  result("document", 5)]),
        ("2024-06-01T11:00:00+00:00", decision(kind="skip", query=None, message="Yes."), []),
        ("2024-06-02T09:00:00+00:00", decision(kind="correction", query="We tried that one already.",
                                               message="We tried that one already."),
         [result("conversation", 6), result("document", 7)]),
        ("2024-06-02T10:00:00+00:00", decision(), [result("document", 8)]),
        ("2024-06-03T10:00:00+00:00", decision(kind="substantive", query="vat", message="vat"), []),
    ]
    for time, d, results in turns:
        tracer.record(time=time, decision=d, results=results, timings={}, k=5)
    yield store
    store.close()


@pytest.fixture
def traces(memory):
    return memory.traces


def test_pairs_are_the_searched_query_against_each_item(traces):
    pairs = traced_pairs(traces)
    assert [p["pair"] for p in pairs] == ["1:1", "1:2", "2:1", "2:2", "2:3", "4:1", "4:2", "5:1"]
    follow = [p for p in pairs if p["trace_id"] == 2]
    assert {p["query"] for p in follow} == {"Compare the two quotes\nYes, the second one."}
    assert all("message" not in p for p in pairs)


def test_sample_is_reproducible_and_respects_n_and_since(memory):
    a = sample_pairs(memory, 4, seed=7)
    b = sample_pairs(memory, 4, seed=7)
    assert a == b and len(a) == 4
    assert [p["pair"] for p in a] == sorted((p["pair"] for p in a), key=lambda s: tuple(map(int, s.split(":"))))
    assert all(p["relevant"] is None for p in a)
    assert len(sample_pairs(memory, 100)) == 8
    since = sample_pairs(memory, 100, since="2024-06-02")
    assert {p["trace_id"] for p in since} == {4, 5}
    assert len({frozenset(p["pair"] for p in sample_pairs(memory, 3, seed=s)) for s in range(10)}) > 1


def test_sample_never_draws_from_skipped_turns(memory):
    assert all(p["kind"] != "skip" and p["query"] for p in sample_pairs(memory, 100))


def test_sample_n_must_be_positive(memory):
    with pytest.raises(UsageError):
        sample_pairs(memory, 0)


def test_sample_carries_the_current_text_of_each_item_fetched_at_once(memory):
    memory.add_conversation("c3", "Kiln quotes", "2024-05-01", [{"role": "user", "text": "Two kiln quotes came in."}])
    memory.add_document("d5", "Kiln manual", "2024-04-01", "Fire the kiln slowly.")
    memory.add_document("d7", "Old note", "2024-04-02", "Soon deleted.")
    memory.delete_document("d7")
    statements = []
    memory.db.conn.set_trace_callback(statements.append)
    try:
        pairs = {p["item"]: p for p in sample_pairs(memory, 100)}
    finally:
        memory.db.conn.set_trace_callback(None)
    assert len([s for s in statements if "title" in s]) == 1
    assert (pairs["c3#s0"]["title"], pairs["c3#s0"]["text"]) == ("Kiln quotes", "user: Two kiln quotes came in.")
    assert (pairs["d5#p0"]["title"], pairs["d5#p0"]["date"]) == ("Kiln manual", "2024-04-01")
    assert pairs["d7#p0"]["text"] is None and pairs["c1#s0"]["title"] is None  # deleted, never stored


def judge(pairs, irrelevant):
    return [{"pair": p["pair"], "relevant": p["pair"] not in irrelevant} for p in pairs]


def test_score_by_source_and_kind(memory, traces):
    pairs = sample_pairs(memory, 100)
    report = score_judgments(traces, judge(pairs, {"2:1", "2:3", "4:1", "5:1"}))
    d = report.to_dict()["by_kind"]
    assert d["all"]["snippets"] == {"judged": 4, "irrelevant": 2, "share": 0.5}
    assert d["all"]["passages"] == {"judged": 4, "irrelevant": 2, "share": 0.5}
    assert d["follow_up"]["snippets"] == {"judged": 2, "irrelevant": 1, "share": 0.5}
    assert d["follow_up"]["passages"] == {"judged": 2, "irrelevant": 2, "share": 1.0}
    assert d["substantive"]["snippets"]["irrelevant"] == 0 and d["substantive"]["passages"]["judged"] == 1
    assert d["correction"]["snippets"] == {"judged": 1, "irrelevant": 1, "share": 1.0}
    text = report.format()
    assert text.splitlines()[0].split() == ["kind", "snippets", "irrelevant", "passages", "irrelevant"]
    assert "50.0% (2/4)" in text and "100.0% (2/2)" in text


def test_kind_and_source_come_from_the_traces_not_the_file(memory, traces, tmp_path):
    path = tmp_path / "j.jsonl"
    lines = [{**p, "kind": "substantive", "source": "document", "relevant": False} for p in sample_pairs(memory, 100)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    d = score_judgments(traces, path).to_dict()["by_kind"]
    assert d["follow_up"]["snippets"]["judged"] == 2


@pytest.mark.parametrize("line, message", [
    ("not json", "not valid JSON"),
    ('{"relevant": true}', "needs a \"pair\""),
    ('{"pair": "1:1"}', "must be true or false, not null"),
    ('{"pair": "1:1", "relevant": "yes"}', "must be true or false"),
    ('{"pair": "99:1", "relevant": true}', "not in the traces"),
])
def test_bad_judgments_are_usage_errors_with_line_numbers(traces, tmp_path, line, message):
    path = tmp_path / "j.jsonl"
    path.write_text('{"pair": "1:2", "relevant": true}\n\n' + line + "\n")
    with pytest.raises(UsageError) as err:
        score_judgments(traces, path)
    text = str(err.value)
    assert message in text
    assert "j.jsonl:3:" in text or "line 3:" in text


def test_a_pair_judged_twice_is_an_error(traces, tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"pair": "1:2", "relevant": true}\n{"pair": "1:2", "relevant": false}\n')
    with pytest.raises(UsageError, match="twice"):
        score_judgments(traces, path)


def test_missing_judgments_file(traces, tmp_path):
    with pytest.raises(UsageError, match="not found"):
        score_judgments(traces, tmp_path / "nope.jsonl")


# -- by rule and by query part ------------------------------------------------------------------------------------

def parted(kind, rule, parts, query="q"):
    """A decision whose query had ``parts``: (name, source, rule) each."""
    from cleo_rules.decision import Decision, Part

    return Decision(kind=kind, rule=rule, span=None, matched=None, query=query, anchor=None, message="m",
                    pack="cleo-en", pack_version="1.0.0", pack_hash="abc123",
                    parts=tuple(Part(name=n, text=f"{n} text", source=s, rule=r) for n, s, r in parts))


@pytest.fixture
def parted_memory(tmp_path, toy_embedder):
    """Four traced turns whose traces keep their query parts (the last one none, as an older trace)."""
    store = MemoryStore.open(tmp_path / "memory", embedder=toy_embedder)
    tracer = Tracer(store)
    turns = [
        (parted("follow_up", "follow_up.definite", [("anchor", "user", None),
                                                    ("referent", "assistant", "referent.description"),
                                                    ("message", "message", None), ("reply", "assistant", None)],
                query="definite query"),
         [result("conversation", 1, 0.9), result("document", 2, 0.8)]),
        (parted("follow_up", "vocab.choice", [("anchor", "user", None), ("referent", "assistant", "referent.position"),
                                              ("message", "message", None)], query="choice query"),
         [result("conversation", 3, 0.7), result("document", 4, 0.3)]),
        (parted("substantive", None, [("message", "message", None)], query="kiln quotes"),
         [result("conversation", 5, 0.6), result("document", 6, 0.5), result("conversation", 7, 0.95),
          result("document", 8, 0.2)]),
        (parted("correction", "correction.already-tried", [], query="tried"), [result("document", 9, 0.4)]),
    ]
    for n, (d, results) in enumerate(turns):
        tracer.record(time=f"2024-06-0{n + 1}T10:00:00+00:00", decision=d, results=results, timings={}, k=5)
    yield store
    store.close()


PARTED_IRRELEVANT = {"1:1", "1:2", "2:2", "3:1", "3:2", "3:3", "3:4", "4:1"}


def test_score_by_rule_names_the_rule_with_most_irrelevant_pairs_first(parted_memory):
    pairs = traced_pairs(parted_memory)
    d = score_judgments(parted_memory, judge(pairs, PARTED_IRRELEVANT)).to_dict()
    rows = {r["rule"]: r for r in d["by_rule"]}
    assert [r["rule"] for r in d["by_rule"]] == [
        "(no rule)", "follow_up.definite", "referent.description", "correction.already-tried", "referent.position",
        "vocab.choice"]  # ties by name
    assert (rows["(no rule)"]["judged"], rows["(no rule)"]["irrelevant"]) == (4, 4)
    assert rows["(no rule)"]["snippets"] == {"judged": 2, "irrelevant": 2, "share": 1.0}
    assert rows["vocab.choice"]["passages"] == {"judged": 1, "irrelevant": 1, "share": 1.0}
    assert rows["vocab.choice"]["snippets"] == {"judged": 1, "irrelevant": 0, "share": 0.0}
    assert rows["referent.position"] == {**rows["vocab.choice"], "rule": "referent.position"}
    # the worst three: judged irrelevant, the highest retrieval score first
    assert [w["pair"] for w in rows["(no rule)"]["worst"]] == ["3:3", "3:1", "3:2"]
    assert rows["(no rule)"]["worst"][0] == {"pair": "3:3", "kind": "substantive", "rule": None,
                                             "source": "conversation", "item": "c7#s0", "score": 0.95,
                                             "query": "kiln quotes"}
    assert [w["pair"] for w in rows["vocab.choice"]["worst"]] == ["2:2"]


def test_score_by_query_part(parted_memory):
    pairs = traced_pairs(parted_memory)
    d = score_judgments(parted_memory, judge(pairs, PARTED_IRRELEVANT)).to_dict()
    rows = {r["part"]: r for r in d["by_part"]}
    assert [r["part"] for r in d["by_part"]] == ["anchor", "referent", "message", "reply", "(not recorded)"]
    assert (rows["anchor"]["judged"], rows["anchor"]["irrelevant"]) == (4, 3)
    assert (rows["reply"]["judged"], rows["reply"]["irrelevant"]) == (2, 2)
    assert (rows["message"]["judged"], rows["message"]["irrelevant"]) == (8, 7)
    assert (rows["(not recorded)"]["judged"], rows["(not recorded)"]["irrelevant"]) == (1, 1)
    assert [w["pair"] for w in rows["anchor"]["worst"]] == ["1:1", "1:2", "2:2"]
    assert [w["pair"] for w in rows["message"]["worst"]] == ["3:3", "1:1", "1:2"]


def test_score_text_has_the_rule_and_part_tables_and_the_worst_pairs(parted_memory):
    pairs = traced_pairs(parted_memory)
    text = score_judgments(parted_memory, judge(pairs, PARTED_IRRELEVANT)).format()
    blocks = text.split("\n\n")
    assert blocks[0].splitlines()[0].split()[0] == "kind"
    rule_lines = blocks[1].splitlines()
    assert rule_lines[0].split() == ["rule", "snippets", "irrelevant", "passages", "irrelevant"]
    assert rule_lines[2].split() == ["(no", "rule)", "100.0%", "(2/2)", "100.0%", "(2/2)"]
    assert blocks[2].splitlines()[0].startswith("query part")
    assert blocks[3].splitlines()[:3] == [
        "worst irrelevant pairs by rule (highest retrieval score first)",
        "(no rule):",
        '  3:3  score 0.950  snippet c7#s0  query "kiln quotes"',
    ]
    assert blocks[4].startswith("worst irrelevant pairs by query part")
    assert '  1:1  score 0.900  snippet c1#s0  query "definite query"' in blocks[4].splitlines()


def test_a_long_query_is_cut_and_quoted_in_the_worst_pairs(tmp_path, toy_embedder):
    with MemoryStore.open(tmp_path / "memory", embedder=toy_embedder) as store:
        Tracer(store).record(time="2024-06-01T10:00:00+00:00",
                             decision=parted("substantive", None, [("message", "message", None)],
                                             query="line one\n\x1b[31m" + "x" * 200),
                             results=[result("document", 1)], timings={}, k=5)
        text = score_judgments(store, [{"pair": "1:1", "relevant": False}]).format()
    line = [x for x in text.splitlines() if x.startswith("  1:1")][0]
    assert '"line one\\n\\u001b[31m' in line and line.endswith('\u2026"') and len(line) < 160


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(verdicts=st.lists(st.booleans(), min_size=9, max_size=9))
def test_rule_and_part_rows_agree_with_a_count_by_hand(parted_memory, verdicts):
    from cleo_rules.relevance import WORST

    pairs = traced_pairs(parted_memory, parts=True)
    judged = [{"pair": p["pair"], "relevant": v} for p, v in zip(pairs, verdicts)]
    d = score_judgments(parted_memory, judged).to_dict()
    for axis, key, of in (("by_rule", "rule", lambda p: {p["rule"] or "(no rule)"} | {
            x["rule"] for x in p["parts"] or () if x["rule"]}),
                          ("by_part", "part", lambda p: {x["name"] for x in p["parts"] or ()} or {"(not recorded)"})):
        rows = {r[key]: r for r in d[axis]}
        names = set().union(*(of(p) for p in pairs))
        assert set(rows) == names
        for name in names:
            mine = [(p, v) for p, v in zip(pairs, verdicts) if name in of(p)]
            bad = sorted((p for p, v in mine if not v), key=lambda p: (-p["score"], p["trace_id"], p["rank"]))
            assert (rows[name]["judged"], rows[name]["irrelevant"]) == (len(mine), len(bad))
            assert [w["pair"] for w in rows[name]["worst"]] == [p["pair"] for p in bad[:WORST]]
    irrelevant = [r["irrelevant"] for r in d["by_rule"]]
    assert irrelevant == sorted(irrelevant, reverse=True)
