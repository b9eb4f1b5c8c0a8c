"""``cleo-rules relevance sample``, ``relevance judge`` and ``relevance score``."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from cleo_rules.cli import main
from cleo_rules.retrieval import MemoryStore
from cleo_rules.trace import Tracer

from helpers.results import R, decision


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.fixture
def store_dir(tmp_path):
    """A store with no items (none are needed) and four traced turns."""
    path = tmp_path / "memory"
    with MemoryStore.open(path) as store:
        tracer = Tracer(store)
        snip = R("conversation", "c1", "c1#s0", "t", "2024-01-01", "x", 0.5)
        doc = R("document", "d1", "d1#p0", "t", "2024-01-01", "x", 0.4)
        tracer.record(time="2024-06-01T08:00:00+00:00", decision=decision(), results=[snip, doc], timings={}, k=5)
        tracer.record(time="2024-06-01T09:00:00+00:00", decision=decision(kind="skip", query=None), results=[],
                      timings={}, k=5)
        tracer.record(time="2024-06-02T08:00:00+00:00",
                      decision=decision(kind="substantive", query="kiln", message="kiln"), results=[snip, doc],
                      timings={}, k=5)
    return path


def test_sample_to_a_file_then_score(store_dir, tmp_path, capsys):
    out = tmp_path / "sample.jsonl"
    code, stdout, stderr = run(capsys, "relevance", "sample", "--db", str(store_dir), "--n", "10", "--out", str(out))
    assert code == 0 and stdout == ""
    assert stderr.strip() == f"4 pairs sampled to {out}"
    pairs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p["pair"] for p in pairs] == ["1:1", "1:2", "3:1", "3:2"]
    assert pairs[0]["query"] == "Compare the two quotes\nYes, the second one."
    assert pairs[0]["relevant"] is None and pairs[0]["text"] is None  # item not in this empty store
    for p in pairs:
        p["relevant"] = p["pair"] != "1:2"
    out.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    code, stdout, _ = run(capsys, "relevance", "score", "--db", str(store_dir), "--judgments", str(out))
    assert code == 0
    assert stdout.split("\n\n")[0].splitlines() == [
        "kind         snippets irrelevant  passages irrelevant",
        "-----------  -------------------  -------------------",
        "all                   0.0% (0/2)          50.0% (1/2)",
        "substantive           0.0% (0/1)           0.0% (0/1)",
        "follow_up             0.0% (0/1)         100.0% (1/1)",
        "correction                     -                    -",
    ]
    assert stdout.split("\n\n")[1].splitlines() == [  # the test's decisions all say vocab.choice
        "rule          snippets irrelevant  passages irrelevant",
        "------------  -------------------  -------------------",
        "vocab.choice           0.0% (0/2)          50.0% (1/2)",
    ]
    assert "worst irrelevant pairs by rule (highest retrieval score first)\nvocab.choice:\n  1:2  score 0.400" in stdout
    code, stdout, _ = run(capsys, "relevance", "score", "--db", str(store_dir), "--judgments", str(out), "--json")
    report = json.loads(stdout)
    assert report["by_kind"]["follow_up"]["passages"] == {"judged": 1, "irrelevant": 1, "share": 1.0}
    assert [(r["rule"], r["judged"], r["irrelevant"]) for r in report["by_rule"]] == [("vocab.choice", 4, 1)]
    assert [r["part"] for r in report["by_part"]] == ["(not recorded)"]  # the test's decisions have no parts
    assert [w["pair"] for w in report["by_rule"][0]["worst"]] == ["1:2"]


def test_sample_to_stdout_since_and_seed(store_dir, capsys):
    code, stdout, stderr = run(capsys, "relevance", "sample", "--db", str(store_dir), "--n", "1",
                               "--since", "2024-06-02", "--seed", "3")
    assert code == 0 and stderr.strip() == "1 pairs sampled"
    (pair,) = [json.loads(line) for line in stdout.splitlines()]
    assert pair["trace_id"] == 3 and pair["query"] == "kiln"
    again = run(capsys, "relevance", "sample", "--db", str(store_dir), "--n", "1", "--since", "2024-06-02",
                "--seed", "3")[1]
    assert again == stdout


def test_bad_since_and_missing_store(store_dir, tmp_path, capsys):
    code, _, err = run(capsys, "relevance", "sample", "--db", str(store_dir), "--n", "1", "--since", "June")
    assert code == 2 and err.startswith("Error: --since must be an ISO date")
    code, _, err = run(capsys, "relevance", "sample", "--db", str(tmp_path / "nope"), "--n", "1")
    assert code == 2 and err.startswith(f"Error: no memory store in {tmp_path / 'nope'}")


def test_bad_judgments_file(store_dir, tmp_path, capsys):
    path = tmp_path / "j.jsonl"
    path.write_text('{"pair": "1:1", "relevant": "maybe"}\n')
    code, _, err = run(capsys, "relevance", "score", "--db", str(store_dir), "--judgments", str(path))
    assert code == 2 and "j.jsonl:1: pair 1:1: \"relevant\" must be true or false" in err


def test_help_has_examples(capsys):
    for argv in (["relevance", "--help"], ["relevance", "sample", "--help"], ["relevance", "score", "--help"],
                 ["relevance", "judge", "--help"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and "Example" in out


def test_since_with_a_time_zone_is_compared_in_utc(store_dir, capsys):
    # 2024-06-02T10:00+02:00 is 08:00 UTC, the time of the third turn
    code, stdout, _ = run(capsys, "relevance", "sample", "--db", str(store_dir), "--n", "10",
                          "--since", "2024-06-02T10:00:00+02:00")
    assert code == 0 and {json.loads(line)["trace_id"] for line in stdout.splitlines()} == {3}
    code, stdout, _ = run(capsys, "relevance", "sample", "--db", str(store_dir), "--n", "10",
                          "--since", "2024-06-02T08:00:01")
    assert code == 0 and stdout == ""


def test_judge_a_sample_with_a_command_then_score_it(store_dir, tmp_path, capsys):
    sample = tmp_path / "sample.jsonl"
    assert run(capsys, "relevance", "sample", "--db", str(store_dir), "--n", "10", "--out", str(sample))[0] == 0
    judge = tmp_path / "judge.py"
    judge.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    p = json.loads(line)\n"
        "    answer = 'garbage' if p['pair'] == '3:2' else json.dumps({'relevant': p['source'] == 'conversation'})\n"
        "    print(answer, flush=True)\n")
    lines = [json.loads(x) for x in sample.read_text().splitlines()]
    for line in lines:
        line["text"] = "an item's text"  # the store of this test holds no items
    sample.write_text("".join(json.dumps(x) + "\n" for x in lines))
    judged, left = tmp_path / "judged.jsonl", tmp_path / "left.jsonl"
    code, stdout, stderr = run(capsys, "relevance", "judge", "--sample", str(sample), "--out", str(judged),
                               "--unjudged", str(left), "--command", shlex.join([sys.executable, str(judge)]))
    assert code == 1 and stdout == ""
    assert stderr.splitlines() == [
        "pair 3:2: bad answer: not valid JSON at column 1: Expecting value",
        f"3 pairs judged (2 relevant, 1 irrelevant), 1 unjudged, judged written to {judged}",
    ]
    assert [(x["pair"], x["relevant"]) for x in map(json.loads, judged.read_text().splitlines())] == [
        ("1:1", True), ("1:2", False), ("3:1", True)]
    (unjudged,) = map(json.loads, left.read_text().splitlines())
    assert (unjudged["pair"], unjudged["relevant"]) == ("3:2", None) and "not valid JSON" in unjudged["judge_error"]
    code, stdout, _ = run(capsys, "relevance", "score", "--db", str(store_dir), "--judgments", str(judged), "--json")
    assert code == 0
    assert json.loads(stdout)["by_kind"]["all"]["passages"] == {"judged": 1, "irrelevant": 1, "share": 1.0}


def test_judge_reads_the_sample_from_stdin_and_writes_stdout(tmp_path, capsys, monkeypatch):
    import io

    line = {"pair": "1:1", "query": "kiln", "source": "document", "text": "kiln", "relevant": None}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((json.dumps(line) + "\n").encode())))
    cmd = shlex.join([sys.executable, "-c", "import sys; sys.stdin.readline(); print('{\"relevant\": true}')"])
    code, stdout, stderr = run(capsys, "relevance", "judge", "--sample", "-", "--command", cmd)
    assert code == 0 and json.loads(stdout) == {**line, "relevant": True}
    assert stderr.strip() == "1 pairs judged (1 relevant, 0 irrelevant), 0 unjudged"


def test_judge_with_a_command_that_does_not_exist(tmp_path, capsys):
    sample = tmp_path / "s.jsonl"
    sample.write_text('{"pair": "1:1", "query": "q", "text": "t", "relevant": null}\n')
    code, _, err = run(capsys, "relevance", "judge", "--sample", str(sample), "--command", str(tmp_path / "nope"))
    assert code == 2 and err.startswith("Error: cannot run the judge command")
