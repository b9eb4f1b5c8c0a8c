"""The rule-pack commands as a user runs them: exact output, exit codes, no torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from cleo_rules import load_pack
from cleo_rules.cli import cli
from cleo_rules.resources import rules_dir

PACK = load_pack()
IDENT = f"{PACK.name} {PACK.version} ({PACK.content_hash})"
BUNDLED = f"{IDENT} at {rules_dir()} (bundled)"


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Run from a directory with no pack of its own, so commands use the bundled pack."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def test_classify_for_people(elsewhere):
    result = run("classify", "Yes, go with the second one.", "-H", "Compare the two van insurance quotes")
    assert result.exit_code == 0
    assert result.output == (
        "kind:    follow_up\n"
        "rule:    vocab.choice  (matched 'go with' at 5..12)\n"
        "anchor:  Compare the two van insurance quotes\n"
        "query:   Compare the two van insurance quotes\n"
        "         Yes, go with the second one.\n"
        f"pack:    {BUNDLED}\n"
    )


def test_classify_skip_says_not_searched():
    result = run("classify", "ok thanks")
    assert result.output.splitlines()[:2] == ["kind:    skip", "query:   (none: not searched)"]


def test_classify_json():
    result = run("classify", "We tried that one already.", "--json", "-H", "Which van insurer?")
    record = json.loads(result.output)
    assert record["kind"] == "correction" and record["query"] == "We tried that one already."
    assert record["anchor"] is None and record["rule"] == "correction.already-tried"


def test_classify_jsonl_in_order_with_bad_lines_reported():
    lines = [
        {"message": "Tell me more", "history": ["Quotes for van insurance"], "id": 7},
        "not json",
        {"message": "We ruled that one out.", "history": ["Quotes for van insurance"]},
        {"message": 5},
        {"message": "Which supplier delivers rye flour on Sundays?"},
        {"message": "Yes, the second one.", "history": None},
    ]
    stdin = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n\n"
    result = CliRunner().invoke(cli, ["classify", "--jsonl"], input=stdin)
    assert result.exit_code == 2
    out = [json.loads(x) for x in result.stdout.splitlines()]
    assert [o.get("kind") for o in out] == ["follow_up", None, "correction", None, "substantive", "follow_up"]
    assert out[0]["query"] == "Quotes for van insurance\nTell me more"
    assert out[1] == {"error": {"code": "E311", "message": "not valid JSON at column 1: Expecting value"}, "line": 2}
    assert out[3] == {"error": {"code": "E320", "message": '"message" is a number, not a string',
                                "pointer": "/message"}, "line": 4}
    assert out[5]["query"] == "Yes, the second one."
    assert all({"kind", "rule", "query", "anchor"} <= set(o) for o in out if "error" not in o)


def test_classify_needs_a_message_or_jsonl():
    result = CliRunner().invoke(cli, ["classify"])
    assert result.exit_code == 2 and "give a MESSAGE" in result.output


def test_explain_marks_the_rule_that_decided():
    result = run("explain", "Not that one, the other one.", "-H", "Which van insurer?", "--all")
    assert result.exit_code == 0
    decided = [line for line in result.output.splitlines() if line.startswith("=>")]
    assert decided == ["=> correction correction.no-not-that-one           fired  on 'Not that one,' [0:13]"]
    assert "query:   Not that one, the other one." in result.output


def test_explain_gives_spans_in_the_users_own_text():
    message = "   \uff2e\uff4f\uff54 that one, the other one."   # full-width letters after three spaces
    result = run("explain", message, "--all")
    assert result.exit_code == 0
    decided = [line for line in result.output.splitlines() if line.startswith("=>")]
    assert decided == ["=> correction correction.no-not-that-one           fired  on '\uff2e\uff4f\uff54 that one,' [3:16]"]
    assert "(matched '\uff2e\uff4f\uff54 that one,' at 3..16)" in result.output
    assert "normalised: 'not that one, the other one.'" in result.output
    not_tried = [line for line in result.output.splitlines() if "not tried: its required words/strings are absent" in line]
    assert not_tried and all(line.split()[0] == "correction" for line in not_tried)  # before the decider


def test_check_names_the_pack_then_says_ok(elsewhere):
    result = run("check")
    assert result.exit_code == 0
    assert result.output.startswith(f"pack: {BUNDLED}\nok: {len(PACK.corrections)} corrections, "
                                    f"{len(PACK.follow_ups)} follow-up patterns, {len(PACK.vocab_sets)} vocabulary sets\n")


@pytest.mark.parametrize("argv", [
    ["classify", "Yes, go with the second one."],
    ["classify", "--jsonl"],
    ["explain", "Tell me more about it."],
    ["check"],
])
def test_rule_commands_do_not_import_torch(argv):
    code = (
        "import sys\n"
        "from cleo_rules.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'onnxruntime', 'tokenizers',"
        " 'hnswlib') if m in sys.modules)\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], input='{"message": "Tell me more"}\n',
                            capture_output=True, text=True, timeout=60)
    assert "HEAVY=\n" in result.stderr, result.stderr


def test_classify_takes_the_assistants_reply_and_shows_where_the_referent_came_from():
    result = run("classify", "Yes, go with the second one.", "-H", "Compare the two van insurance quotes",
                 "-H", "assistant: Hadley quotes 2,140 a year and Cresswell 1,865.")
    assert result.exit_code == 0
    assert "referent: Cresswell 1,865  (from assistant turn 1, 31..46, by referent.position)" in result.output
    assert ("query:   Compare the two van insurance quotes\n         Cresswell 1,865\n         Yes, go with the second one."
            in result.output)
    as_user = run("classify", "Yes, go with the second one.", "-H", "user: assistant: says hello")
    assert "anchor:  assistant: says hello" in as_user.output
