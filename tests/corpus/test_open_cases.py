"""Open cases (issue 20, item 10): a regression saved from a wrong turn never bricks the pack.

A saved regression the pack gets wrong is `open: true` (semgrep's todoruleid): `check` and
`corpus check` report it in every format as a known failure, it never fails a check or the serving
gate, and once it passes the report says to close it, naming file:line. Only the cases of
corpus/regressions.yaml can be open: the key anywhere else is a located error, and the case is judged
as any other, so nothing hides a generated case's failure.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from junitparser import JUnitXml, Skipped

from cleo_rules import load_pack
from cleo_rules.cli import cli
from cleo_rules.corpus import run_corpus
from cleo_rules.corpus.regressions import regression_entry, render_entry, save_regression
from cleo_rules.errors import CleoError, PackError
from cleo_rules.reading.load import MAX_FILE_BYTES
from cleo_rules.runtime import PackManager, load_checked
from cleo_rules.pack_check import check

#: a reply to the starter pack's question that a designer wants searched as a follow-up; the starter takes it as
#: substantive (asserted where it is used, so the tests say so if the starter changes)
WANTED = ("Go on then, explain that part again.", ["Which supplier do we use for flour?"], "follow_up")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def team(tmp_path, monkeypatch):
    """A pack started with `cleo-rules init`: rules/, corpus/ (generated and regressions.yaml), schemas/."""
    from cleo_rules.starter import init_pack

    init_pack(tmp_path / "team", standalone=True)
    monkeypatch.chdir(tmp_path / "team")
    return tmp_path / "team"


def regressions(team: Path) -> Path:
    return team / "corpus" / "regressions.yaml"


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line)


def save_wanted(team: Path):
    pack = load_pack(team / "rules")
    message, history, expect = WANTED
    assert pack.classify(message, history).kind != expect  # the premise: the pack gets the turn wrong
    return pack, save_regression(pack, regression_entry(message, history, expect, pack=pack))


def mark_open(path: Path, case_id: str) -> int:
    """Add `open: true` to the case ``case_id`` of a hand-written file; the case's line."""
    text = path.read_text(encoding="utf-8")
    head = f"  - id: {case_id}\n"
    assert head in text
    path.write_text(text.replace(head, head + "    open: true\n", 1), encoding="utf-8")
    return line_of(path, f"- id: {case_id}")


# -- saving ---------------------------------------------------------------------------------------------------------

def test_item10_a_regression_saved_from_a_wrong_turn_is_open_and_the_pack_still_checks_and_serves(team):
    pack, saved = save_wanted(team)
    case = yaml.safe_load(saved.yaml)[0]
    assert case["open"] is True and "open: true" in saved.yaml
    result = check(team / "rules")
    assert result.ok, result.errors()
    report = result.corpus_report
    assert [o.case.id for o in report.open] == [saved.id] and not report.to_close and not report.failed
    assert report.summary_line().endswith("; 1 open")
    # the serving gate takes it, and so does a service starting afresh (no 503 everywhere)
    assert load_checked(team / "rules").content_hash == pack.content_hash
    with PackManager(team / "rules") as manager:
        assert manager.pack.content_hash == pack.content_hash and manager.last_error is None


def test_a_regression_the_pack_already_gets_right_is_saved_closed_and_then_holds(team):
    pack = load_pack(team / "rules")
    message, history = "Could you tell me more?", ["Which supplier do we use for flour?"]
    kind = pack.classify(message, history).kind
    saved = save_regression(pack, regression_entry(message, history, kind, pack=pack))
    assert "open" not in yaml.safe_load(saved.yaml)[0]
    assert check(team / "rules").ok
    # the rule it rests on is taken out: the closed case now fails the check, and the gate refuses the pack
    rules = team / "rules" / "follow_ups.yaml"
    rules.write_text(rules.read_text(encoding="utf-8").replace("(?:tell|show|give) (?:me|us) more",
                                                                "(?:show|give) (?:me|us) more"), encoding="utf-8")
    failing = check(team / "rules")
    assert not failing.ok and any(p.code == "E230" and saved.id in p.message for p in failing.errors())
    with pytest.raises(PackError):
        load_checked(team / "rules")


def test_item10_an_open_case_that_starts_passing_says_close_it_at_its_file_and_line(team):
    path = regressions(team)
    line = mark_open(path, "regression/tried-with-a-topic")  # a case the starter passes
    result = run("check")
    assert result.exit_code == 0, result.output
    shown = f"corpus/regressions.yaml:{line}"
    assert (f'{shown}:1: warning[E233]: open case regression/tried-with-a-topic "We tried the Leeds supplier in '
            f'March, how did it go?" passes now: close it (remove `open: true` at {shown})') in result.output
    assert "1 open (1 to close)" in result.output
    # both ways: the same case not open says nothing of closing
    path.write_text(path.read_text(encoding="utf-8").replace("    open: true\n", ""), encoding="utf-8")
    quiet = run("check")
    assert quiet.exit_code == 0 and "close it" not in quiet.output and "open" not in quiet.output.split("corpus ")[-1]


def test_an_open_case_still_wrong_is_a_note_with_what_it_expects_and_gets(team):
    _, saved = save_wanted(team)
    result = run("check")
    assert result.exit_code == 0, result.output
    line = line_of(regressions(team), f"- id: {saved.id}")
    got = load_pack(team / "rules").classify(*WANTED[:2]).kind
    assert (f'corpus/regressions.yaml:{line}:1: note[E232]: open case {saved.id} "{WANTED[0]}": expected '
            f"follow_up, got {got}") in result.output
    corpus = run("corpus", "check")
    assert corpus.exit_code == 0 and f"note[E232]: open case {saved.id}" in corpus.output


# -- only saved regressions can be open ------------------------------------------------------------------------------

def generated_line(team: Path, rule_file: str) -> tuple[Path, int, dict]:
    path = team / "corpus" / "generated" / rule_file
    lines = path.read_text(encoding="utf-8").split("\n")
    n = next(i for i, line in enumerate(lines) if line.startswith("  - {"))
    return path, n, json.loads(lines[n][4:])


def rewrite_case(path: Path, n: int, case: dict) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[n] = "  - " + json.dumps(case, ensure_ascii=False)
    path.write_text("\n".join(lines), encoding="utf-8")


def test_item10_open_on_a_generated_case_is_a_located_error_and_hides_nothing(team):
    path, n, case = generated_line(team, "follow_up.tell-me-more.yaml")
    wrong = {**case, "expect": "correction" if case["expect"] != "correction" else "skip"}
    rewrite_case(path, n, wrong)  # the generated case now fails ...
    before = check(team / "rules")
    assert [p.code for p in before.errors() if p.code in ("E230", "E215")] == ["E230"]
    rewrite_case(path, n, {**wrong, "open": True})  # ... and marking it open does not hide that
    after = check(team / "rules")
    errors = after.errors()
    assert not after.ok and any(p.code == "E230" and case["id"] in p.message for p in errors)
    located = [p for p in errors if p.code == "E215"]
    assert len(located) == 1 and located[0].file == "corpus/generated/follow_up.tell-me-more.yaml"
    assert located[0].line == n + 1 and located[0].col == path.read_text().split("\n")[n].index('"open"') + 1
    assert "a generated case is never open" in located[0].message and not after.corpus_report.open
    with pytest.raises(PackError) as refused:
        load_checked(team / "rules")
    assert {"E215", "E230"} <= {p.code for p in refused.value.problems}


def test_open_in_any_other_hand_written_file_is_an_error_too(team):
    other = team / "corpus" / "edge-cases.yaml"
    other.write_text('kind: corpus\ncases:\n  - id: edge/one\n    message: "Could you tell me more?"\n'
                     "    expect: follow_up\n    open: true\n", encoding="utf-8")
    result = check(team / "rules")
    located = [p for p in result.errors() if p.code == "E215"]
    assert [(p.file, p.line, p.col) for p in located] == [("corpus/edge-cases.yaml", 6, 5)]
    assert "only a saved regression, a case of regressions.yaml, can be open" in located[0].message
    # a regressions.yaml laid out as a generated file (a `generated:` header) holds no open case either
    other.unlink()
    path = regressions(team)
    mark_open(path, "regression/tried-with-a-topic")
    path.write_text(path.read_text(encoding="utf-8").replace("kind: corpus\n", "kind: corpus\ngenerated:\n  rule: x\n"),
                    encoding="utf-8")
    assert "E215" in {p.code for p in check(team / "rules").errors()}


def test_a_saved_regression_needs_no_open_to_fail_and_cannot_be_opened_in_a_generated_file(team):
    """``open`` must be true to open a case: `open: false` is a closed case that fails as any other."""
    _, saved = save_wanted(team)
    path = regressions(team)
    path.write_text(path.read_text(encoding="utf-8").replace("    open: true\n", "    open: false\n"),
                    encoding="utf-8")
    result = check(team / "rules")
    assert not result.ok and any(p.code == "E230" and saved.id in p.message for p in result.errors())


def test_an_open_case_that_disagrees_with_another_is_a_warning_a_closed_one_an_error(team):
    pack = load_pack(team / "rules")
    path = regressions(team)
    message = "We tried the Leeds supplier in March, how did it go?"  # the starter's own case expects substantive
    entry = regression_entry(message, [], "follow_up", pack=pack, case_id="regression/disagrees")
    assert entry["open"] is True
    save_regression(pack, entry)
    opened = check(team / "rules")
    assert opened.ok, opened.errors()
    warned = [p for p in opened.corpus_report.problems if p.code == "E223"]
    assert [p.severity for p in warned] == ["warning"] and "open case cannot be closed" in warned[0].help
    path.write_text(path.read_text(encoding="utf-8").replace("    open: true\n", ""), encoding="utf-8")
    closed = check(team / "rules")
    assert any(p.code == "E223" and p.severity == "error" for p in closed.errors())


# -- every format ----------------------------------------------------------------------------------------------------

def test_each_format_reports_open_cases_as_a_known_failure(team):
    _, saved = save_wanted(team)
    path = regressions(team)
    close_line = mark_open(path, "regression/tried-with-a-topic")
    open_line = line_of(path, f"- id: {saved.id}")

    sarif = run("check", "--format", "sarif")
    assert sarif.exit_code == 0
    run_ = json.loads(sarif.stdout)["runs"][0]
    levels = {r["ruleId"]: (r["level"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
              for r in run_["results"]}
    assert levels == {"E232": ("note", open_line), "E233": ("warning", close_line)}
    assert {r["id"]: r["defaultConfiguration"]["level"] for r in run_["tool"]["driver"]["rules"]} == \
        {"E232": "note", "E233": "warning"}

    junit = run("check", "--format", "junit")
    assert junit.exit_code == 0
    suite = next(iter(JUnitXml.fromstring(junit.stdout)))
    opened = {c.name: c for c in suite if c.classname == "team.open"}
    assert set(opened) == {saved.id, "regression/tried-with-a-topic"}
    kinds = {name: (c.result[0].type, c.result[0].message) for name, c in opened.items()
             if c.result and isinstance(c.result[0], Skipped)}
    assert kinds[saved.id][0] == "open" and "expected follow_up" in kinds[saved.id][1]
    assert kinds["regression/tried-with-a-topic"][0] == "close" and \
        f"close it (remove `open: true` at corpus/regressions.yaml:{close_line})" in kinds["regression/tried-with-a-topic"][1]
    assert not any(c.result and c.result[0].__class__.__name__ in ("Failure", "Error") for c in suite)
    assert int(suite.skipped) == 2

    github = run("check", "--format", "github")
    assert github.exit_code == 0
    assert re.search(rf"^::notice file=corpus/regressions.yaml,line={open_line},col=1,title=E232::open case ",
                     github.stdout, re.M)
    assert re.search(rf"^::warning file=corpus/regressions.yaml,line={close_line},col=1,title=E233::.*close it",
                     github.stdout, re.M)

    doc = json.loads(run("check", "--format", "json").stdout)
    assert doc["ok"] is True and doc["corpus"]["summary"]["open"] == 2 and doc["corpus"]["summary"]["to_close"] == 1
    assert {o["id"]: o["close"] for o in doc["corpus"]["open"]} == {saved.id: False, "regression/tried-with-a-topic": True}
    assert all(o["message"] != o["says"] for o in doc["corpus"]["open"])  # the case's message is kept as it is


def test_junit_keeps_the_open_cases_when_the_pack_does_not_compile(team):
    _, saved = save_wanted(team)
    green = JUnitXml.fromstring(run("check", "--format", "junit").stdout)
    rules = team / "rules" / "follow_ups.yaml"
    rules.write_text(rules.read_text(encoding="utf-8").replace("max_content_words: 3", "max_content_words: lots"),
                     encoding="utf-8")
    red = JUnitXml.fromstring(run("check", "--format", "junit").stdout)
    ids = lambda xml: [(c.classname, c.name) for c in next(iter(xml))]  # noqa: E731
    assert ids(red) == ids(green) and ("team.open", saved.id) in ids(red)
    case = next(c for c in next(iter(red)) if c.name == saved.id)
    assert isinstance(case.result[0], Skipped) and "not judged: the pack does not compile" in case.result[0].message


# -- the regressions file's size limit -------------------------------------------------------------------------------

def test_item10_the_regressions_file_limit_is_named_when_a_case_would_pass_it(team):
    pack = load_pack(team / "rules")
    path = regressions(team)
    base = path.read_text(encoding="utf-8")
    filler = "# " + "x" * 98 + "\n"
    room = MAX_FILE_BYTES - len(base.encode()) - 60
    full = base.replace("kind: corpus\n", filler * (room // len(filler)) + "kind: corpus\n", 1)
    path.write_text(full, encoding="utf-8")
    assert len(full.encode()) <= MAX_FILE_BYTES and run_corpus(pack, team / "corpus").ok  # still read as it is
    entry = regression_entry("Thanks a lot for all of that help!", [], "skip", pack=pack)
    with pytest.raises(CleoError) as caught:
        save_regression(pack, entry)
    message = str(caught.value)
    assert caught.value.code == "E207" and "does not end the file" not in message
    assert re.fullmatch(rf"corpus/regressions.yaml would be \d+ bytes with the case, over the limit of "
                        rf"{MAX_FILE_BYTES} bytes \(1 MiB\) every corpus file is held to; the case was not appended",
                        message), message
    assert path.read_text(encoding="utf-8") == full
    assert sorted(p.name for p in path.parent.iterdir()) == ["generated", "regressions.yaml"]
    # a file already over the limit is named so too, and never read whole
    path.write_text(full + filler * 200, encoding="utf-8")
    with pytest.raises(CleoError, match=r"regressions.yaml is \d+ bytes, over the limit of 1048576 bytes \(1 MiB\)"):
        save_regression(pack, entry)


def test_an_open_entry_renders_and_reads_back_with_its_key():
    entry = regression_entry("Thanks!", ["Which supplier?"], "follow_up", open=True, note="")
    assert entry["open"] is True and yaml.safe_load(render_entry(entry)) == [entry]
    assert "open" not in regression_entry("Thanks!", [], "skip", open=False, note="")
    assert "open" not in regression_entry("Thanks!", [], "skip", note="")  # no pack to judge by: closed
