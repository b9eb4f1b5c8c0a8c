"""docs/ci.md's jobs run as written: the GitHub Actions workflow and the GitLab CI file are read as YAML, and
every `run:` and `script:` step runs, in order, in a team pack started with `cleo-rules init --standalone team`,
with the installed command on PATH.

Steps that need GitHub itself are `uses:` actions (checkout, setup-python, upload-sarif, upload-artifact), not
`run:` steps; what they are given is checked against what the steps write. The install step runs with
PIP_NO_INDEX=1: it passes because the environment already holds the version it pins, so the pin must be the
package's own version (it never reaches the network).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from junitparser import Failure, JUnitXml

from helpers import DATA, ROOT

DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent
SARIF = jsonschema.Draft4Validator(json.loads((DATA / "sarif-schema-2.1.0.json")
                                              .read_text(encoding="utf-8")))


def version() -> str:
    return re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M).group(1)


def github() -> dict:
    return yaml.safe_load((DOCS / "ci" / "github-workflow.yml").read_text(encoding="utf-8"))


def gitlab() -> dict:
    return yaml.safe_load((DOCS / "ci" / "gitlab-ci.yml").read_text(encoding="utf-8"))


def github_steps() -> list[dict]:
    (job,) = github()["jobs"].values()
    return job["steps"]


def gitlab_job() -> dict:
    (job,) = [v for k, v in gitlab().items() if isinstance(v, dict) and "script" in v]
    return job


def option(commands: list[str], name: str) -> str:
    """The value of ``--name FILE`` in the steps' cleo-rules commands."""
    (value,) = [m for c in commands for m in re.findall(rf"--{name} (\S+)", c)]
    return value


@pytest.fixture
def team(tmp_path):
    subprocess.run([str(BIN / "cleo-rules"), "init", "--standalone", "team"], cwd=tmp_path, check=True,
                   capture_output=True)
    return tmp_path / "team"


def run_steps(steps: list[str], cwd: Path, home: Path) -> list[subprocess.CompletedProcess]:
    """Each step in bash as a CI runner runs it (`bash -e`), in order; the first that fails stops the job."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLEO_RULES", "VIRTUAL_ENV", "PIP_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               CLEO_RULES_CACHE=str(home / "pack-cache"))
    done = []
    for step in steps:
        result = subprocess.run(["bash", "-e", "-c", step], cwd=cwd, env=env, capture_output=True, text=True,
                                timeout=600)
        done.append(result)
        if result.returncode != 0:
            break
    return done


def sarif_results(path: Path) -> list[dict]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert not list(SARIF.iter_errors(doc))
    return doc["runs"][0]["results"]


def junit_cases(path: Path) -> list[tuple[str, str, str]]:
    """``(classname, name, outcome)`` for every test case, as a JUnit reader sees them."""
    (suite,) = list(JUnitXml.fromfile(str(path)))
    out = []
    for case in suite:
        outcome = "failed" if case.result and isinstance(case.result[0], Failure) else (
            "skipped" if case.is_skipped else "passed")
        out.append((case.classname, case.name, outcome))
    return out


def break_a_rule(team: Path) -> None:
    path = team / "rules" / "follow_ups.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count("max_content_words: 3") == 1
    path.write_text(text.replace("max_content_words: 3", "max_content_words: lots"), encoding="utf-8")


def test_the_docs_show_the_files_as_they_are():
    text = (DOCS / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    assert (DOCS / "ci" / "github-workflow.yml").read_text(encoding="utf-8") in blocks
    assert (DOCS / "ci" / "gitlab-ci.yml").read_text(encoding="utf-8") in blocks
    assert f"cleo-rules=={version()}" in text


def test_the_github_workflow_uploads_what_its_check_writes():
    workflow = github()
    assert workflow["permissions"]["security-events"] == "write"
    steps = github_steps()
    runs = [s["run"] for s in steps if "run" in s]
    assert runs[0] == f'pip install "cleo-rules=={version()}"'
    assert all(set(s) <= {"name", "run", "uses", "with", "if"} and ("run" in s) != ("uses" in s) for s in steps)
    (upload,) = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload["with"]["sarif_file"] == option(runs, "sarif-output")
    assert "always()" in upload["if"]  # a failing check is uploaded too
    (junit,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert junit["with"]["path"] == option(runs, "junit-output") and "always()" in junit["if"]


def test_the_gitlab_job_reports_what_its_check_writes():
    job = gitlab_job()
    assert job["script"][0] == f'pip install "cleo-rules=={version()}"'
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == option(job["script"], "junit-output")
    assert job["artifacts"]["paths"] == [option(job["script"], "sarif-output")]


def test_the_github_steps_run_on_a_team_pack_green_then_red(team, tmp_path):
    runs = [s["run"] for s in github_steps() if "run" in s]
    sarif, junit = team / option(runs, "sarif-output"), team / option(runs, "junit-output")
    green = run_steps(runs, team, tmp_path)
    assert [r.returncode for r in green] == [0] * len(runs), [r.stdout + r.stderr for r in green]
    log = green[-1].stdout
    assert log.startswith("pack: team 0.1.0 (") and "\ncorpus ok: " in log  # the log shows text
    assert sarif_results(sarif) == []
    cases = junit_cases(junit)
    assert ("team.follow_up", "follow_up.tell-me-more", "passed") in cases
    assert {outcome for _, _, outcome in cases} == {"passed"}

    break_a_rule(team)
    red = run_steps(runs, team, tmp_path)
    assert [r.returncode for r in red] == [0] * (len(runs) - 1) + [1]  # the check fails the job ...
    assert "error[E123]" in red[-1].stderr
    # ... and leaves both reports for the `if: always()` uploads
    (finding,) = sarif_results(sarif)
    assert finding["ruleId"] == "E123"
    assert finding["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "rules/follow_ups.yaml"
    broken = junit_cases(junit)
    assert [c[:2] for c in broken] == [c[:2] for c in cases]  # the same test cases, red and green
    assert [c[1] for c in broken if c[2] == "failed"] == ["follow_up.tell-me-more"]


def test_the_gitlab_script_runs_on_a_team_pack_green_then_red(team, tmp_path):
    job = gitlab_job()
    script = job["script"]
    junit = team / job["artifacts"]["reports"]["junit"]
    green = run_steps(script, team, tmp_path)
    assert [r.returncode for r in green] == [0] * len(script), [r.stdout + r.stderr for r in green]
    assert "\ncorpus ok: " in green[-1].stdout
    cases = junit_cases(junit)
    assert {outcome for _, _, outcome in cases} == {"passed"} and len(cases) == 3 + 4 + 2  # rules, files, (pack), (corpus)
    for path in job["artifacts"]["paths"]:
        assert sarif_results(team / path) == []

    break_a_rule(team)
    red = run_steps(script, team, tmp_path)
    assert [r.returncode for r in red] == [0] * (len(script) - 1) + [1]
    broken = junit_cases(junit)
    assert [c[:2] for c in broken] == [c[:2] for c in cases]
    assert [c[1] for c in broken if c[2] == "failed"] == ["follow_up.tell-me-more"]
    assert {c[2] for c in broken if c[1] != "follow_up.tell-me-more"} == {"skipped"}
