"""`check` and `corpus check` for CI: SARIF 2.1.0, JUnit XML, GitHub workflow commands, exit codes.

The SARIF output is validated against the OASIS SARIF 2.1.0 JSON Schema kept in
tests/data/ (see tests/data/README.md); the JUnit output is read back with junitparser.
"""

from __future__ import annotations

import json
import re
import shutil

import jsonschema
import pytest
from click.testing import CliRunner
from junitparser import Failure, JUnitXml

from cleo_rules import load_pack
from cleo_rules.cli import cli
from cleo_rules.resources import rules_dir

from helpers import DATA

SARIF_SCHEMA = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
SARIF = jsonschema.Draft4Validator(SARIF_SCHEMA)
BUNDLED = load_pack()


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def valid_sarif(text: str) -> dict:
    doc = json.loads(text)
    errors = sorted(SARIF.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    assert doc["version"] == "2.1.0"
    return doc


def junit(text: str):
    xml = JUnitXml.fromstring(text)
    suites = list(xml) if isinstance(xml, JUnitXml) else [xml]
    assert len(suites) == 1
    return suites[0]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A copy of the bundled pack and its corpus as a team keeps them: rules/ and corpus/ side by side."""
    shutil.copytree(rules_dir(), tmp_path / "rules")
    shutil.copytree(rules_dir().parent / "corpus", tmp_path / "corpus")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def widened(repo):
    """A correction widened to take request forms: its own request forms and generated cases fail."""
    path = repo / "rules" / "corrections.yaml"
    text = path.read_text()
    old = "      - '\\bbeen there,? done that\\b'\n"
    assert text.count(old) == 1
    path.write_text(text.replace(old, old + "      - '\\btry (?:that|this|it)\\b'\n"))
    return repo


@pytest.fixture
def broken(repo):
    path = repo / "rules" / "follow_ups.yaml"
    path.write_text(path.read_text().replace("max_content_words: 4", "max_content_words: lots", 1))
    return repo


def rule_line(rule_id: str) -> int:
    return BUNDLED.rule(rule_id).line


# -- a clean pack ----------------------------------------------------------------------


def test_clean_pack_sarif_is_valid_and_empty(repo):
    result = run("check", "--format", "sarif")
    assert result.exit_code == 0
    doc = valid_sarif(result.stdout)
    run_ = doc["runs"][0]
    assert run_["tool"]["driver"]["name"] == "cleo-rules" and run_["results"] == []
    assert run_["properties"]["pack"]["name"] == "cleo-en" and run_["properties"]["pack"]["found_by"] == "./rules"


def test_clean_pack_junit_has_one_passing_case_per_rule(repo):
    result = run("check", "--format", "junit")
    assert result.exit_code == 0
    suite = junit(result.stdout)
    cases = {c.name: c for c in suite}
    assert set(cases) == ({r.id for r in BUNDLED.rules + BUNDLED.referent_rules} | set(BUNDLED.sources)
                          | {"(pack)", "(corpus)"})
    assert cases["referent.position"].classname == "cleo-en.referent"
    assert cases["lexicon.yaml"].classname == "cleo-en.file" and cases["lexicon.yaml"]._elem.get("file") == "rules/lexicon.yaml"
    assert all(c.is_passed for c in cases.values())
    assert suite.tests == len(cases) and suite.failures == 0
    case = cases["correction.already-tried"]
    assert case.classname == "cleo-en.correction"


def test_clean_pack_github_prints_only_the_summary(repo):
    result = run("check", "--format", "github")
    assert result.exit_code == 0
    assert not [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert result.stdout.startswith("cleo-rules check: cleo-en 1.0.0: ok; corpus ok: ")


# -- findings -------------------------------------------------------------------------------


def test_corpus_failures_point_at_the_rule_with_the_case_related(widened):
    result = run("check", "--format", "sarif")
    assert result.exit_code == 1
    doc = valid_sarif(result.stdout)
    results = doc["runs"][0]["results"]
    rule_ids = {r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert {"E136", "E230"} <= rule_ids == {r["ruleId"] for r in results}
    cases = [r for r in results if r["ruleId"] == "E230" and r["properties"]["packRule"] == "correction.already-tried"]
    assert len(cases) >= 5
    assert any(r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"]
               == "corpus/generated/correction.already-tried.yaml" for r in cases)
    for r in cases:
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"] == {"uri": "rules/corrections.yaml", "uriBaseId": "%SRCROOT%"}
        assert loc["region"]["startLine"] == rule_line("correction.already-tried")
        related = r["relatedLocations"][0]["physicalLocation"]
        assert related["artifactLocation"]["uri"].startswith("corpus/")
        assert related["region"]["startLine"] > 1
        assert r["level"] == "error" and "got correction by correction.already-tried" in r["message"]["text"]
    own = [r for r in results if r["ruleId"] == "E136"]
    assert own and own[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "rules/corrections.yaml"


def test_corpus_failures_in_junit(widened):
    result = run("check", "--format", "junit")
    assert result.exit_code == 1
    suite = junit(result.stdout)
    cases = {c.name: c for c in suite}
    failed = {name for name, c in cases.items() if not c.is_passed}
    # the widened rule, and the rules whose cases it now takes
    assert "correction.already-tried" in failed and failed <= {r.id for r in BUNDLED.rules}
    assert suite.failures == len(failed) and suite.tests == len(cases)
    failure = cases["correction.already-tried"].result[0]
    assert isinstance(failure, Failure) and failure.type == "E136"
    assert "corpus/generated/correction.already-tried.yaml:" in failure.text
    assert "rules/corrections.yaml:" in failure.text


def test_corpus_failures_as_github_commands(widened):
    result = run("check", "--format", "github")
    assert result.exit_code == 1
    commands = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    line = rule_line("correction.already-tried")
    at_rule = [c for c in commands if c.startswith(f"::error file=rules/corrections.yaml,line={line},col=1,"
                                                   f"title=E230 correction.already-tried::")]
    assert len(at_rule) >= 5
    assert all("%0Athe case " in c and "corpus/" in c for c in at_rule)
    assert any("corpus/generated/correction.already-tried.yaml:" in c for c in at_rule)
    assert all("\n" not in c for c in commands)


def test_a_pack_that_does_not_compile(broken):
    result = run("check", "--format", "sarif")
    assert result.exit_code == 1
    doc = valid_sarif(result.stdout)
    (first,) = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "E123"]
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "rules/follow_ups.yaml"
    assert loc["region"]["startColumn"] > 1
    assert doc["runs"][0]["properties"]["pack"]["name"] == "cleo-en"

    suite = junit(run("check", "--format", "junit").stdout)
    failed = [c for c in suite if c.result and isinstance(c.result[0], Failure)]
    assert [c.name for c in failed] == ["follow_up.what-about"]
    # the rest were not judged: skipped, not passed
    assert all(c.is_skipped for c in suite if c not in failed) and suite.skipped == len(list(suite)) - 1

    out = run("check", "--format", "github").stdout
    assert re.search(r"^::error file=rules/follow_ups\.yaml,line=\d+,col=\d+,title=E123 follow_up\.what-about::"
                     r"expected a whole number, found a string%0Ahelp: ", out, re.M)


def test_corpus_check_formats(widened):
    for fmt in ("sarif", "junit", "github", "json"):
        result = run("corpus", "check", "--format", fmt)
        assert result.exit_code == 1, fmt
        if fmt == "sarif":
            doc = valid_sarif(result.stdout)
            assert doc["runs"][0]["properties"]["command"] == "corpus check"
        elif fmt == "junit":
            suite = junit(result.stdout)
            assert "correction.already-tried" in [c.name for c in suite if not c.is_passed]
        elif fmt == "github":
            assert result.stdout.rstrip().splitlines()[-1].startswith("cleo-rules corpus check: FAILED: ")
        else:
            assert json.loads(result.stdout)["ok"] is False


def test_stale_corpus_is_a_finding(repo):
    path = repo / "rules" / "slots.yaml"
    path.write_text(path.read_text().replace("seed: 2024", "seed: 2025"))
    doc = valid_sarif(run("corpus", "check", "--format", "sarif").stdout)
    stale = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "E231"]
    assert stale and all(r["message"]["text"].count("stale") for r in stale)


def test_a_file_outside_the_working_directory_is_a_file_uri(tmp_path, monkeypatch, widened):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    doc = valid_sarif(run("check", str(widened / "rules"), "--format", "sarif").stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]}
    assert (widened / "rules" / "corrections.yaml").as_uri() in uris


def test_json_flag_is_format_json(repo):
    assert json.loads(run("check", "--json").stdout) == json.loads(run("check", "--format", "json").stdout)


@pytest.mark.parametrize("argv", [["check", "--help"], ["corpus", "check", "--help"], ["--help"]])
def test_exit_codes_are_documented_in_help(argv):
    out = run(*argv).stdout
    assert "Exit codes: 0 clean; 1 findings in the pack or corpus; 2 usage, input or environment error" in \
        " ".join(out.split())
    assert "3 internal error" in " ".join(out.split())


# -- JUnit case ids stay the same from a red run to a green one ------------------------------------------------


def case_ids(text: str) -> list[tuple[str, str]]:
    return [(c.classname, c.name) for c in junit(text)]


@pytest.fixture
def team(tmp_path, monkeypatch):
    from cleo_rules.starter import init_pack

    init_pack(tmp_path / "team", standalone=True)
    monkeypatch.chdir(tmp_path / "team")
    return tmp_path / "team"


@pytest.mark.parametrize("command", [["check"], ["corpus", "check"]])
def test_junit_case_ids_are_the_same_red_and_green(team, command):
    green = run(*command, "--format", "junit")
    assert green.exit_code == 0, green.output
    path = team / "rules" / "follow_ups.yaml"
    good = path.read_text(encoding="utf-8")
    path.write_text(good.replace("max_content_words: 3", "max_content_words: lots", 1), encoding="utf-8")
    red = run(*command, "--format", "junit")
    assert red.exit_code == 1
    assert case_ids(red.stdout) == case_ids(green.stdout)
    assert ("team.follow_up", "follow_up.tell-me-more") in case_ids(green.stdout)
    assert {("team.file", name) for name in ("vocabulary.yaml", "corrections.yaml", "follow_ups.yaml", "slots.yaml")} \
        <= set(case_ids(green.stdout))
    assert [c.name for c in junit(red.stdout) if c.result and isinstance(c.result[0], Failure)] == \
        ["follow_up.tell-me-more"]


def test_junit_case_ids_are_the_same_when_examples_and_corpus_fail(widened):
    green = run("check", "--format", "junit", "--corpus", str(widened / "corpus"))
    ids = case_ids(run("check", str(rules_dir()), "--format", "junit").stdout)
    assert green.exit_code == 1 and case_ids(green.stdout) == ids
    failed = {c.name for c in junit(green.stdout) if not c.is_passed}
    assert "correction.already-tried" in failed and not any(c.is_skipped for c in junit(green.stdout))


def test_a_file_that_cannot_be_read_is_one_case_named_after_it(team):
    green = case_ids(run("check", "--format", "junit").stdout)
    path = team / "rules" / "corrections.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("kind:", "kind: [", 1), encoding="utf-8")
    suite = junit(run("check", "--format", "junit").stdout)
    # the file's own rule has no case (nothing can be read from the file); every other case is there
    assert case_ids(suite_text := run("check", "--format", "junit").stdout) == \
        [c for c in green if c != ("team.correction", "correction.already-tried")]
    cases = {c.name: c for c in suite}
    failure = cases["corrections.yaml"].result[0]
    assert isinstance(failure, Failure) and failure.type == "E110"
    assert "rules/corrections.yaml:" in failure.text and suite_text.count("<failure ") == 1


def test_a_rule_file_missing_from_the_pack_is_a_case_too(team):
    (team / "rules" / "slots.yaml").unlink()
    cases = {c.name: c for c in junit(run("check", "--format", "junit").stdout)}
    assert cases["slots.yaml"].classname == "team.file" and cases["slots.yaml"].result[0].type == "E115"


# -- -o/--output and --F-output: reports into files ----------------------------------------------------------------

FORMATS = ("text", "json", "sarif", "junit", "github")


def parsed(fmt: str, text: str):
    """A report read back as its format is read: the thing compared between stdout and a file."""
    if fmt == "json":
        return json.loads(text)
    if fmt == "sarif":
        return valid_sarif(text)
    if fmt == "junit":
        return [(c.classname, c.name, c.is_passed) for c in junit(text)]
    return text


@pytest.mark.parametrize("command", [["check"], ["corpus", "check"]])
@pytest.mark.parametrize("fmt", FORMATS)
def test_output_writes_the_format_into_a_file_instead_of_stdout(widened, command, fmt):
    printed = run(*command, "--format", fmt)
    assert printed.exit_code == 1
    result = run(*command, "--format", fmt, "-o", widened / f"report.{fmt}")
    assert result.exit_code == 1 and result.output == ""  # a red run writes its report all the same
    text = (widened / f"report.{fmt}").read_text(encoding="utf-8")
    # the whole report, as printed (for text, the findings printed on stderr too, in the same order)
    assert text == printed.output
    assert parsed(fmt, text) == parsed(fmt, printed.stdout if fmt != "text" else printed.output)
    assert not list(widened.glob(".report.*"))  # no temporary file left behind
    assert run(*command, "--format", fmt, "-o", "-").stdout == printed.stdout  # `-o -` is stdout


@pytest.mark.parametrize("command", [["check"], ["corpus", "check"]])
def test_every_format_into_its_own_file_while_text_goes_to_the_log(widened, command):
    files = {fmt: widened / f"out-{fmt}" for fmt in FORMATS}
    result = run(*command, *[a for fmt in FORMATS for a in (f"--{fmt}-output", files[fmt])])
    assert result.exit_code == 1
    assert result.output == run(*command).output  # the log shows the text report as without the files
    for fmt in FORMATS:
        assert files[fmt].read_text(encoding="utf-8") == run(*command, "--format", fmt).output, fmt
    assert "correction.already-tried" in [name for _, name, ok in parsed("junit", files["junit"].read_text())
                                          if not ok]
    sarif = parsed("sarif", files["sarif"].read_text())
    assert sarif["runs"][0]["properties"]["command"] == " ".join(command)


def test_primary_format_and_more_files_together(repo):
    result = run("check", "--format", "github", "--sarif-output", "cleo.sarif", "-o", "cleo.gh")
    assert result.exit_code == 0 and result.output == ""
    assert (repo / "cleo.gh").read_text().startswith("cleo-rules check: cleo-en 1.0.0: ok; corpus ok: ")
    assert valid_sarif((repo / "cleo.sarif").read_text())["runs"][0]["results"] == []


def test_a_pack_that_does_not_compile_still_writes_its_reports(broken):
    result = run("check", "--sarif-output", "cleo.sarif", "--junit-output", "cleo.xml")
    assert result.exit_code == 1 and "error[E123]" in result.stderr
    assert [r["ruleId"] for r in valid_sarif((broken / "cleo.sarif").read_text())["runs"][0]["results"]] == ["E123"]
    assert [c.name for c in junit((broken / "cleo.xml").read_text()) if not c.is_passed and not c.is_skipped] == \
        ["follow_up.what-about"]
    corpus = run("corpus", "check", "--text-output", "corpus.txt")
    assert corpus.exit_code == 1 and corpus.stderr.startswith("Error: rules/follow_ups.yaml:")
    assert (broken / "corpus.txt").read_text() == corpus.output


def test_an_output_file_that_cannot_be_written_is_an_error(repo, capsys):
    from cleo_rules.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["check", "--no-corpus", "--sarif-output", str(repo / "missing" / "cleo.sarif")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"Error: cannot write {repo / 'missing' / 'cleo.sarif'}: No such file or directory\n"
