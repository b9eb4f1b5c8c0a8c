"""A command as the relevance judge: the protocol, and every way a judge can fail one pair."""

from __future__ import annotations

import io
import json
import shlex
import sys
import textwrap

import pytest

from cleo_rules.errors import UsageError
from cleo_rules.relevance_judge import ASKED_FIELDS, judge_pairs, read_sample


def pair(n, text: str | None = "a kiln manual", query="kiln", relevant=None, **extra):
    return {"pair": f"{n}:1", "trace_id": n, "rank": 1, "kind": "substantive", "rule": None, "query": query,
            "source": "document", "id": f"d{n}", "item": f"d{n}#p0", "score": 0.5, "title": f"title {n}",
            "date": "2024-01-01", "text": text, "relevant": relevant, **extra}


def script(tmp_path, name, body):
    """A judge: a small Python file run with this interpreter; the command line for it."""
    path = tmp_path / f"{name}.py"
    path.write_text("import json, sys, time\n" + textwrap.dedent(body))
    return shlex.join([sys.executable, str(path)])


def test_a_judge_by_rule_gives_the_lines_a_person_would_write(tmp_path):
    seen = tmp_path / "seen.jsonl"
    cmd = script(tmp_path, "by_rule", f"""
        log = open({str(seen)!r}, "a")
        for line in sys.stdin:
            asked = json.loads(line)
            log.write(line); log.flush()
            print(json.dumps({{"relevant": "kiln" in asked["text"], "pair": asked["pair"]}}), flush=True)
    """)
    pairs = [pair(1), pair(2, text="van insurance"), pair(3, relevant=False), pair(4)]
    problems = []
    run = judge_pairs(pairs, cmd, on_problem=problems.append)
    assert [(p["pair"], p["relevant"]) for p in run.judged] == [("1:1", True), ("2:1", False), ("3:1", False),
                                                               ("4:1", True)]
    assert run.judged[0] == {**pairs[0], "relevant": True}  # the sample's line, "relevant" filled in
    assert run.unjudged == [] and problems == [] and run.summary() == "4 pairs judged (2 relevant, 2 irrelevant), 0 unjudged"
    asked = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [a["pair"] for a in asked] == ["1:1", "2:1", "4:1"]  # a pair the sample had judged is not asked again
    assert all(tuple(a) == ASKED_FIELDS for a in asked)  # no kind, rule or score to sway the verdict
    assert asked[1]["text"] == "van insurance" and asked[1]["query"] == "kiln"


def test_bad_answers_are_reported_per_pair_and_counted_neither_way(tmp_path):
    answers = {
        "1:1": '{"relevant": true}',
        "2:1": "not json",
        "3:1": '{"relevant": "yes"}',
        "4:1": "[true]",
        "5:1": '{"pair": "9:1", "relevant": true}',
        "6:1": "{}",
        "7:1": '{"relevant": false, "why": "' + "x" * 200 + '"}',
        "8:1": "",
        "9:1": '{"relevant": false}',
    }
    cmd = script(tmp_path, "garbage", f"""
        answers = {answers!r}
        for line in sys.stdin:
            print(answers[json.loads(line)["pair"]], flush=True)
    """)
    problems = []
    run = judge_pairs([pair(n) for n in range(1, 10)], cmd, max_answer_bytes=100, on_problem=problems.append)
    assert [(p["pair"], p["relevant"]) for p in run.judged] == [("1:1", True), ("9:1", False)]
    reasons = {p.pair: p.reason for p in problems}
    assert list(reasons) == ["2:1", "3:1", "4:1", "5:1", "6:1", "7:1", "8:1"]
    assert reasons["2:1"].startswith("bad answer: not valid JSON at column 1")
    assert reasons["3:1"] == '"relevant" must be true or false, not "yes"'
    assert reasons["4:1"] == 'the answer must be an object {"relevant": true|false}, not an array'
    assert reasons["5:1"] == 'the answer is for pair "9:1", not 5:1'
    assert reasons["6:1"] == '"relevant" must be true or false, not missing'
    assert reasons["7:1"] == "the answer is longer than 100 bytes"
    assert reasons["8:1"] == "the answer is an empty line"
    assert [(p["pair"], p["relevant"], p["judge_error"]) for p in run.unjudged][0] == ("2:1", None, reasons["2:1"])
    assert "9 pairs" not in run.summary() and run.summary().endswith("7 unjudged")


def test_a_judge_that_exits_early_leaves_that_pair_unjudged_and_is_started_again(tmp_path):
    cmd = script(tmp_path, "exits", """
        for n, line in enumerate(sys.stdin):
            if n == 2:
                sys.exit(3)
            print(json.dumps({"relevant": True}), flush=True)
    """)
    problems = []
    run = judge_pairs([pair(n) for n in range(1, 6)], cmd, on_problem=problems.append)
    assert [p["pair"] for p in run.judged] == ["1:1", "2:1", "4:1", "5:1"]
    assert [(p.pair, p.reason) for p in problems] == [("3:1", "the judge exited with status 3 before answering")]


def test_a_judge_that_always_fails_is_given_up_after_three_in_a_row(tmp_path):
    cmd = script(tmp_path, "dies", "sys.exit(1)\n")
    run = judge_pairs([pair(n) for n in range(1, 6)] + [pair(6, text=None)], cmd)
    reasons = [(p.pair, p.reason) for p in run.problems]
    assert reasons[:3] == [(f"{n}:1", "the judge exited with status 1 before answering") for n in (1, 2, 3)]
    assert reasons[3:5] == [(f"{n}:1", "not sent: the judge failed 3 times in a row (last: the judge exited with "
                                       "status 1 before answering)") for n in (4, 5)]
    assert reasons[5] == ("6:1", "not sent: the item is no longer in the memory (its text is null)")
    assert run.judged == []


def test_a_judge_that_hangs_times_out_per_pair_and_is_killed(tmp_path):
    started = tmp_path / "pids"
    cmd = script(tmp_path, "hangs", f"""
        import os
        with open({str(started)!r}, "a") as fh:
            fh.write(f"{{os.getpid()}}\\n")
        for line in sys.stdin:
            time.sleep(3600)
    """)
    run = judge_pairs([pair(n) for n in range(1, 5)], cmd, timeout=0.3)
    assert [(p.pair, p.reason) for p in run.problems] == [
        ("1:1", "no answer within 0.3 s"), ("2:1", "no answer within 0.3 s"), ("3:1", "no answer within 0.3 s"),
        ("4:1", "not sent: the judge failed 3 times in a row (last: no answer within 0.3 s)")]
    pids = [int(x) for x in started.read_text().split()] if started.exists() else []
    assert len(pids) <= 3  # one run per timed-out pair (a run killed before it started writes no pid)
    import os
    for pid in pids:  # each was killed and reaped: no such process is left
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_judge_that_closes_its_stdout_and_stays_is_killed(tmp_path):
    cmd = script(tmp_path, "closes", """
        import os
        sys.stdin.readline()
        os.close(1)
        time.sleep(3600)
    """)
    # the timeout bounds both the wait for the end of its stdout and the wait for its exit after it, which never
    # comes: long enough that a slow start still closes stdout in time
    run = judge_pairs([pair(1)], cmd, timeout=3.0)
    assert [(p.pair, p.reason) for p in run.problems] == [("1:1", "the judge closed its stdout before answering")]


def test_an_endless_answer_line_is_never_held_in_memory(tmp_path):
    cmd = script(tmp_path, "floods", """
        sys.stdin.readline()
        chunk = "x" * 65536
        while True:
            sys.stdout.write(chunk)
            sys.stdout.flush()
    """)
    import tracemalloc

    tracemalloc.start()
    try:
        run = judge_pairs([pair(1)], cmd, timeout=1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(p.pair, p.reason) for p in run.problems] == [("1:1", "no answer within 1 s")]
    assert peak < 4_000_000  # the judge wrote far more in that second; pieces of 64 KiB were read and let go


def test_stderr_of_the_judge_is_passed_on(tmp_path):
    cmd = script(tmp_path, "talks", """
        for line in sys.stdin:
            print("judging", json.loads(line)["pair"], file=sys.stderr, flush=True)
            print('{"relevant": true}', flush=True)
    """)
    log = tmp_path / "judge.log"
    with open(log, "wb") as fh:
        run = judge_pairs([pair(1), pair(2)], cmd, stderr=fh)
    assert len(run.judged) == 2
    assert log.read_text().splitlines() == ["judging 1:1", "judging 2:1"]


def test_redacted_traces_are_not_sent(tmp_path):
    cmd = script(tmp_path, "never", "raise SystemExit('should not run')\n")
    run = judge_pairs([pair(1, query="[redacted]")], cmd)
    assert [p.reason for p in run.problems] == ["not sent: the trace keeps no query text (redacted)"]


def test_a_command_that_cannot_run_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="cannot run the judge command"):
        judge_pairs([pair(1)], str(tmp_path / "no-such-judge"))
    with pytest.raises(UsageError, match="empty"):
        judge_pairs([pair(1)], "  ")


@pytest.mark.parametrize("text, message", [
    ('{"pair": "1:1", "relevant": "maybe"}\n', 'line 1: pair 1:1: "relevant" must be null, true or false'),
    ('{"relevant": null}\n', 'line 1: each line needs a "pair"'),
    ('{"pair": "1:1"}\n{"pair": "1:1"}\n', "line 2: pair 1:1 is given twice"),
    ("\n", "no pairs in the sample"),
    ("{\n", "line 1: "),
])
def test_bad_sample_lines_are_usage_errors(text, message):
    with pytest.raises(UsageError) as err:
        read_sample(io.BytesIO(text.encode()))
    assert message in str(err.value)


def test_sample_file_errors_name_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"pair": "1:1", "relevant": null}\n[]\n')
    with pytest.raises(UsageError, match=r"s\.jsonl:2: each line needs"):
        read_sample(path)
    with pytest.raises(UsageError, match="sample file not found"):
        read_sample(tmp_path / "nope.jsonl")
