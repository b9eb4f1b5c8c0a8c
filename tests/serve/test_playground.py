"""The playground's page and endpoints over HTTP, started for real (the browser tests are test_playground_browser.py).

Two services for the module: ``team``, ``cleo-rules serve --writable-corpus`` on a team's copy of the
bundled pack with its corpus beside it; ``alone``, ``cleo-rules playground`` on a copy of the rules only.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
from functools import partial
from pathlib import Path

import httpx
import jsonschema
import pytest
import yaml

from cleo_rules import load_pack
from cleo_rules.resources import corpus_dir, rules_dir
from cleo_rules.serve.playground import ASSETS, CSP

from helpers import ROOT
from helpers.service import Service, eventually as eventually_within

STATIC = ROOT / "cleo_rules" / "serve" / "static"
JSON = {"Content-Type": "application/json"}
HISTORY = ["Which van insurer covers tools left in the van overnight?",
           {"role": "assistant", "content": "Two do: Brightline Commercial and Zego Van. Brightline is cheaper."}]


eventually = partial(eventually_within, timeout=30.0)


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    root = tmp_path_factory.mktemp("team")
    shutil.copytree(rules_dir(), root / "rules")
    shutil.copytree(corpus_dir(), root / "corpus")
    with Service("--pack", root / "rules", "--writable-corpus", "--watch-interval", "0.2",
                  log_path=root / "service.log") as svc, svc.client() as http:
        yield {"root": root, "svc": svc, "http": http}


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    root = tmp_path_factory.mktemp("alone")
    shutil.copytree(rules_dir(), root / "rules")
    with Service("--pack", root / "rules", command="playground", log_path=root / "playground.log") as svc, svc.client() as http:
        yield {"root": root, "svc": svc, "http": http}


def post(http, path, body):
    return http.post(path, content=json.dumps(body), headers=JSON)


def problem(response, status, name):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == f"/problems/{name}"
    return body


def schema(http, name):
    doc = http.get("/openapi.json").json()
    return jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": doc["components"]})


# -- the page -------------------------------------------------------------------------------------

def test_the_page_and_its_files_come_from_the_package(alone):
    http = alone["http"]
    page = http.get("/")
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"] == CSP and "connect-src 'self'" in CSP
    assert page.text == (STATIC / "index.html").read_text(encoding="utf-8")
    assert '<script type="module" src="/playground/playground.js">' in page.text
    assert '<link rel="stylesheet" href="/playground/playground.css">' in page.text
    for name, media in ASSETS.items():
        got = http.get(f"/playground/{name}")
        assert got.status_code == 200 and got.headers["content-type"] == media
        assert got.content == (STATIC / name).read_bytes()
    problem(http.get("/playground/index.html.bak"), 404, "not-found")
    # no CDN, nothing from elsewhere: no absolute URL in any file the page (or the API page beside it) is made of
    for path in (p for p in STATIC.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), path.name
        assert "@import" not in text and "import(" not in text


def test_the_playground_command_prints_its_url_has_no_memory_and_opens_nothing(alone):
    svc = alone["svc"]
    out = eventually(lambda: "playground: http" in svc.log and svc.log)
    url = re.search(r"playground: (http://\S+)", out).group(1)
    assert url == f"http://127.0.0.1:{svc.port}/"
    assert f"(pack {alone['root'] / 'rules'}, given;" in out
    ready = httpx.get(svc.url + "/readyz").json()
    assert ready["memory"] is False and ready["pack"]["watching"] is True
    assert httpx.get(url).status_code == 200
    children = Path(f"/proc/{svc.pid}/task/{svc.pid}/children").read_text().split()
    assert children == []  # no browser, nothing else started


def test_the_playground_command_needs_a_pack_that_is_there(tmp_path):
    from click.testing import CliRunner

    from cleo_rules.cli import cli

    result = CliRunner().invoke(cli, ["playground", "--pack", str(tmp_path / "nowhere")])
    assert result.exit_code != 0 and "nowhere" in str(result.exception)
    helped = CliRunner().invoke(cli, ["playground", "--help"])
    assert helped.exit_code == 0 and "cleo-rules playground --pack rules/" in helped.output
    assert "Nothing is opened" in helped.output


def test_the_readme_shows_a_screenshot_the_browser_tests_take():
    readme = (STATIC.parents[2] / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"^!\[The playground[^\]]*\]\((docs/[^)]+\.png)\)$", readme, re.M)
    assert shown, "the README's playground section has no screenshot"
    head = (STATIC.parents[2] / shown.group(1)).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1280, 800)


# -- what the page reads ----------------------------------------------------------------------------

def test_the_rules_endpoint_names_every_rule_with_its_file_and_line(alone):
    http = alone["http"]
    pack = load_pack(alone["root"] / "rules")
    data = http.get("/v1/pack/rules").json()
    schema(http, "PackRules").validate(data)
    assert data["hash"] == pack.content_hash
    want = {r.id: (r.kind, r.line, Path(r.file).name) for r in (*pack.rules, *pack.referent_rules)}
    assert {r["id"]: (r["kind"], r["line"], Path(r["file"]).name) for r in data["rules"]} == want
    for rule in data["rules"]:
        assert Path(rule["file"]).resolve().parent == (alone["root"] / "rules").resolve()
    what_about = next(r for r in data["rules"] if r["id"] == "follow_up.what-about")
    lines = (alone["root"] / "rules" / "follow_ups.yaml").read_text(encoding="utf-8").splitlines()
    assert lines[what_about["line"] - 1].strip() == "- id: follow_up.what-about"


def test_the_source_endpoint_serves_only_the_pack_files(alone):
    http = alone["http"]
    rules = http.get("/v1/pack/rules").json()["rules"]
    name = next(r["file"] for r in rules if r["id"] == "follow_up.what-about")
    source = http.get("/v1/pack/source", params={"file": name})
    assert source.status_code == 200
    schema(http, "PackSource").validate(source.json())
    assert source.json()["lines"] == (alone["root"] / "rules" / "follow_ups.yaml").read_text().splitlines()
    manifest = str(alone["root"] / "rules" / "pack.yaml")
    assert http.get("/v1/pack/source", params={"file": manifest}).json()["lines"][0].startswith("# yaml-language")
    for other in ("/etc/passwd", str(alone["root"] / "rules" / "lexicon.yaml"),
                  str(alone["root"] / "rules" / ".." / "playground.log"), "follow_ups.yaml"):
        body = problem(http.get("/v1/pack/source", params={"file": other}), 404, "not-found")
        assert "has no file" in body["detail"]
    problem(http.get("/v1/pack/source"), 400, "invalid-request")


def test_pack_status_says_where_regressions_go_and_whether_they_are_written(alone, team):
    quiet = alone["http"].get("/v1/pack").json()
    schema(alone["http"], "PackStatus").validate(quiet)
    assert quiet["problems"] == [] and quiet["regressions"]["writable"] is False
    assert quiet["regressions"]["file"] == str(alone["root"] / "corpus" / "regressions.yaml")
    loud = team["http"].get("/v1/pack").json()
    assert loud["regressions"] == {"file": str(team["root"] / "corpus" / "regressions.yaml"), "writable": True}


# -- saving a regression --------------------------------------------------------------------------

def test_without_writable_corpus_the_case_is_shown_and_not_written(alone):
    http = alone["http"]
    body = {"message": "Yes, go with the second one.", "history": HISTORY, "expect": "follow_up"}
    preview = post(http, "/v1/pack/regressions", body)
    assert preview.status_code == 200, preview.text
    schema(http, "RegressionSaved").validate(preview.json())
    saved = preview.json()
    assert saved["written"] is False and saved["id"] == "regression/yes-go-with-the-second-one"
    case = yaml.safe_load(saved["yaml"])[0]
    assert case["message"] == body["message"] and case["history"] == HISTORY and case["expect"] == "follow_up"
    refused = problem(post(http, "/v1/pack/regressions", {**body, "write": True}), 409, "corpus-not-writable")
    assert "--writable-corpus" in refused["detail"] and refused["yaml"] == saved["yaml"]
    assert not (alone["root"] / "corpus").exists()
    problem(post(http, "/v1/pack/regressions", {**body, "expect": "nod"}), 400, "invalid-request")
    problem(post(http, "/v1/pack/regressions", {**body, "extra": 1}), 400, "invalid-request")
    assert problem(post(http, "/v1/pack/regressions", {**body, "history": [{"role": "bot", "content": "x"}]}),
                   400, "invalid-history")["field"] == "history[0]"


def test_with_writable_corpus_the_case_is_appended_and_the_pack_judged_with_it(team):
    http, root = team["http"], team["root"]
    path = root / "corpus" / "regressions.yaml"
    before = path.read_text(encoding="utf-8")
    first = http.get("/v1/pack").json()
    saved = post(http, "/v1/pack/regressions", {"message": "We tried that one already.", "history": HISTORY,
                                                "expect": "correction", "write": True})
    assert saved.status_code == 200, saved.text
    schema(http, "RegressionSaved").validate(saved.json())
    assert saved.json()["written"] is True and saved.json()["file"] == str(path) and saved.json()["open"] is False
    after = path.read_text(encoding="utf-8")
    assert after == before.rstrip("\n") + "\n\n" + saved.json()["yaml"]

    # a case the pack gets wrong (issue 20, item 10): saved open, so the pack on disk is still accepted ...
    wrong = post(http, "/v1/pack/regressions", {"message": "Thanks!", "history": HISTORY, "expect": "follow_up",
                                                "write": True})
    assert wrong.status_code == 200 and wrong.json()["open"] is True
    case = yaml.safe_load(wrong.json()["yaml"])[0]
    assert case["open"] is True and path.read_text(encoding="utf-8").endswith(wrong.json()["yaml"])
    judged = post(http, "/v1/pack/reload", {})
    assert judged.status_code == 200, judged.text
    assert judged.json()["last_error"] is None and judged.json()["hash"] == first["hash"]
    assert http.get("/v1/pack").json()["problems"] == []
    # ... and a service started afresh on these files serves at once instead of answering 503 everywhere
    again = Service("--pack", root / "rules", "--watch-interval", "0", log_path=root / "again.log")
    try:
        again.wait_ready(90)
        assert httpx.post(again.url + "/v1/classify", json={"message": "Thanks!"}).json()["kind"] == "skip"
    finally:
        again.stop()
    # the open case is reported, with where it is, by `check` on the same files
    from cleo_rules.pack_check import check

    report = check(root / "rules").corpus_report
    assert [o.case.id for o in report.open] == [wrong.json()["id"]] and report.ok
    path.write_text(after, encoding="utf-8")  # the designer takes the open case out again; the right one stays


def test_a_regressions_file_that_cannot_take_a_case_is_left_alone(team):
    http, root = team["http"], team["root"]
    path = root / "corpus" / "regressions.yaml"
    before = path.read_text(encoding="utf-8")
    odd = before + "\ndescription: a key after the cases\n"
    path.write_text(odd.replace("description: Regressions and edge cases, written by hand.\n", ""), encoding="utf-8")
    try:
        written = path.read_text(encoding="utf-8")
        refused = problem(post(http, "/v1/pack/regressions", {"message": "Thanks!", "expect": "skip", "write": True}),
                          409, "corpus-not-writable")
        assert refused["code"] == "E206" and "does not end the file" in refused["detail"]
        assert yaml.safe_load(refused["yaml"])[0]["message"] == "Thanks!"
        assert path.read_text(encoding="utf-8") == written
    finally:
        path.write_text(before, encoding="utf-8")


def test_a_regressions_file_at_its_size_limit_is_named_so(team):
    from cleo_rules.reading.load import MAX_FILE_BYTES

    http, root = team["http"], team["root"]
    path = root / "corpus" / "regressions.yaml"
    before = path.read_text(encoding="utf-8")
    filler = "# " + "x" * 98 + "\n"
    full = before.replace("kind: corpus\n", filler * ((MAX_FILE_BYTES - len(before.encode()) - 40) // 100)
                          + "kind: corpus\n", 1)
    path.write_text(full, encoding="utf-8")
    try:
        refused = problem(post(http, "/v1/pack/regressions", {"message": "Thanks a lot for that!", "expect": "skip",
                                                              "write": True}), 409, "corpus-not-writable")
        assert refused["code"] == "E207" and "does not end the file" not in refused["detail"]
        assert f"over the limit of {MAX_FILE_BYTES} bytes (1 MiB) every corpus file is held to" in refused["detail"]
        assert yaml.safe_load(refused["yaml"])[0]["message"] == "Thanks a lot for that!"
        assert path.read_text(encoding="utf-8") == full
    finally:
        path.write_text(before, encoding="utf-8")
