"""Editing the pack's own files over HTTP (`cleo-rules playground --writable-pack`, issue 24), started for real.

Two services for the module on copies of a pack started with `cleo-rules init`: ``writable``, the playground
with --writable-pack; ``readonly``, the playground without it. The browser tests of the same loop are in
tests/serve/test_playground_browser.py; the library under it in tests/test_editing.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import httpx
import jsonschema
import pytest

from cleo_rules import load_pack
from cleo_rules.reading.load import MAX_FILE_BYTES
from cleo_rules.resources import rules_dir

from helpers.service import Service

FOLLOW_UPS = "rules/follow_ups.yaml"
TEXT = {"Content-Type": "text/plain; charset=utf-8"}


def init(root):
    from cleo_rules.starter import init_pack

    init_pack(root / "team", standalone=True)
    return root / "team"


@pytest.fixture(scope="module")
def writable(tmp_path_factory):
    team = init(tmp_path_factory.mktemp("writable"))
    with Service("--pack", "rules", "--writable-pack", "--watch-interval", "0.2", command="playground",
                  log_path=team / "playground.log", cwd=team) as svc, svc.client() as http:
        yield {"team": team, "svc": svc, "http": http}


@pytest.fixture(scope="module")
def readonly(tmp_path_factory):
    team = init(tmp_path_factory.mktemp("readonly"))
    with Service("--pack", "rules", command="playground", log_path=team / "playground.log", cwd=team) as svc, svc.client() as http:
        yield {"team": team, "svc": svc, "http": http}


def problem(response, status, name):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == f"/problems/{name}"
    return body


def current(http, name=FOLLOW_UPS) -> tuple[str, str]:
    got = http.get("/v1/pack/file", params={"file": name})
    assert got.status_code == 200, got.text
    return got.json()["text"], got.json()["sha256"]


def put(http, text, *, name=FOLLOW_UPS, sha=None, headers=None):
    sent = {**TEXT, **({"If-Match": f'"{sha}"'} if sha else {}), **(headers or {})}
    return http.put("/v1/pack/file", params={"file": name}, content=text.encode("utf-8"), headers=sent)


def schema(http, name):
    doc = http.get("/openapi.json").json()
    return jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": doc["components"]})


def snapshot(team) -> dict:
    return {p.relative_to(team).as_posix(): p.read_bytes() for p in sorted(team.rglob("*.yaml"))}


# -- what can be edited ---------------------------------------------------------------------------------------------

def test_the_writable_playground_lists_the_packs_own_files_and_serves_their_text(writable):
    http, team = writable["http"], writable["team"]
    assert http.get("/v1/pack").json()["editing"] == {"writable": True}
    listed = http.get("/v1/pack/files").json()
    schema(http, "PackFiles").validate(listed)
    schema(http, "PackFileText").validate(http.get("/v1/pack/file", params={"file": FOLLOW_UPS}).json())
    assert listed["writable"] is True
    assert [(f["file"], f["role"]) for f in listed["files"]] == [
        ("rules/pack.yaml", "manifest"), ("rules/vocabulary.yaml", "rules"), ("rules/corrections.yaml", "rules"),
        (FOLLOW_UPS, "rules"), ("rules/slots.yaml", "rules"), ("corpus/regressions.yaml", "corpus")]
    text, sha = current(http)
    assert text == (team / FOLLOW_UPS).read_text(encoding="utf-8")
    assert http.get("/v1/pack/file", params={"file": FOLLOW_UPS}).headers["etag"] == f'"{sha}"'
    assert "its files are edited in the page" in writable["svc"].log


def test_a_read_only_playground_refuses_every_edit(readonly):
    http, team = readonly["http"], readonly["team"]
    before = snapshot(team)
    assert http.get("/v1/pack").json()["editing"] == {"writable": False}
    assert http.get("/v1/pack/files").json() == {"writable": False, "files": []}
    body = problem(http.get("/v1/pack/file", params={"file": FOLLOW_UPS}), 409, "pack-not-writable")
    assert "--writable-pack" in body["detail"]
    text = (team / FOLLOW_UPS).read_text(encoding="utf-8")
    problem(put(http, text + "# edited\n"), 409, "pack-not-writable")
    assert snapshot(team) == before


# -- an edit that checks, and one that does not ----------------------------------------------------------------------

def test_an_edit_that_checks_is_written_and_served_before_the_answer(writable):
    http, team = writable["http"], writable["team"]
    text, sha = current(http)
    assert http.post("/v1/classify", json={"message": "Could you bring me more?"}).json()["rule"] is None
    new = text.replace("(?:tell|show|give) (?:me|us) more", "(?:tell|show|give|bring) (?:me|us) more")
    done = put(http, new, sha=sha)
    assert done.status_code == 200, done.text
    body = done.json()
    schema(http, "Edited").validate(body)
    assert body["written"] is True and body["ok"] is True and body["errors"] == 0 and body["file"] == FOLLOW_UPS
    assert (team / FOLLOW_UPS).read_text(encoding="utf-8") == new
    edited = load_pack(team / "rules")
    assert body["pack"]["hash"] == body["serving"]["hash"] == edited.content_hash
    # served already: no wait for the watcher
    assert http.post("/v1/classify", json={"message": "Could you bring me more?"}).json()["rule"] == \
        "follow_up.tell-me-more"
    assert current(http)[1] == body["sha256"]
    restored = put(http, text, sha=body["sha256"])
    assert restored.status_code == 200 and restored.json()["written"] is True


def test_an_edit_that_does_not_check_is_answered_with_its_located_errors_and_writes_nothing(writable):
    http, team = writable["http"], writable["team"]
    text, sha = current(http)
    serving = http.get("/v1/pack").json()["hash"]
    before = snapshot(team)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "max_content_words: 3" in row)
    # judged, so answered 200 (a half-typed edit is an answer to show, not a failed request): `written` says
    answered = put(http, text.replace("max_content_words: 3", "max_content_words: lots"), sha=sha)
    assert answered.status_code == 200, answered.text
    refused = answered.json()
    schema(http, "Edited").validate(refused)
    assert refused["written"] is False and refused["ok"] is False and refused["errors"] == 1
    assert refused["sha256"] == sha and refused["pack"] is None
    first = refused["problems"][0]
    assert (first["code"], first["file"], first["line"], first["rule"]) == ("E123", FOLLOW_UPS, line,
                                                                           "follow_up.tell-me-more")
    assert first["help"] and first["severity"] == "error"
    assert snapshot(team) == before and http.get("/v1/pack").json()["hash"] == serving
    # a pattern that no longer takes its own examples and corpus: every error placed, the corpus's at the cases
    broken = put(http, text.replace("(?:me|us) more", "(?:me|us) mor"), sha=sha).json()
    assert broken["written"] is False and broken["pack"]["name"] == "team"
    codes = {(p["code"], p["file"].split("/")[0]) for p in broken["problems"]}
    assert ("E134", "rules") in codes and ("E230", "corpus") in codes
    assert snapshot(team) == before


def test_a_limit_edit_is_written_with_the_generated_corpus_built_again_when_asked(writable):
    http, team = writable["http"], writable["team"]
    text, sha = current(http, "rules/pack.yaml")
    assert http.post("/v1/classify", json={"message": "Thank you"}).json()["kind"] == "skip"
    generated = {p: p.read_bytes() for p in (team / "corpus" / "generated").iterdir()}
    new = text.replace("min_chars: 10 ", "min_chars: 9  ")
    stale = put(http, new, name="rules/pack.yaml", sha=sha).json()
    assert stale["written"] is False and {p["code"] for p in stale["problems"] if p["severity"] == "error"} == {"E231"}
    done = http.put("/v1/pack/file", params={"file": "rules/pack.yaml", "rebuild": "true"}, content=new.encode(),
                    headers={**TEXT, "If-Match": f'"{sha}"'})
    assert done.status_code == 200, done.text
    body = done.json()
    schema(http, "Edited").validate(body)
    assert body["written"] is True and body["rebuilt"] and all(f.startswith("corpus/generated/") for f in body["rebuilt"])
    assert body["serving"]["hash"] == load_pack(team / "rules").content_hash
    assert {f"corpus/generated/{p.name}" for p, raw in generated.items() if p.read_bytes() != raw} == set(body["rebuilt"])
    assert http.post("/v1/classify", json={"message": "Thank you"}).json()["kind"] != "skip"  # 9 characters now pass
    problem(http.put("/v1/pack/file", params={"file": "rules/pack.yaml", "rebuild": "maybe"}, content=new.encode(),
                     headers=TEXT), 400, "invalid-request")
    # back as it was, with its corpus
    back = http.put("/v1/pack/file", params={"file": "rules/pack.yaml", "rebuild": "true"}, content=text.encode(),
                    headers={**TEXT, "If-Match": f'"{body["sha256"]}"'})
    assert back.status_code == 200 and back.json()["written"] is True
    assert {p: p.read_bytes() for p in (team / "corpus" / "generated").iterdir()} == generated


def test_a_file_changed_meanwhile_is_a_conflict_and_is_kept(writable):
    http, team = writable["http"], writable["team"]
    text, sha = current(http)
    path = team / FOLLOW_UPS
    path.write_text(text + "# saved in another editor\n", encoding="utf-8")
    try:
        body = problem(put(http, text + "# mine\n", sha=sha), 412, "edit-conflict")
        assert body["code"] == "E242" and "changed on disk since the edit began" in body["detail"]
        assert path.read_text(encoding="utf-8") == text + "# saved in another editor\n"
    finally:
        path.write_text(text, encoding="utf-8")


def test_a_text_over_the_file_limit_and_a_wrong_type_are_refused(writable):
    http, team = writable["http"], writable["team"]
    text, sha = current(http)
    before = snapshot(team)
    big = problem(put(http, text + "#" * MAX_FILE_BYTES, sha=sha), 413, "payload-too-large")
    assert f"over the limit of {MAX_FILE_BYTES} bytes (1 MiB) every pack file is held to" in big["detail"]
    problem(http.put("/v1/pack/file", params={"file": FOLLOW_UPS}, json={"text": text}), 415, "unsupported-media-type")
    bad = problem(http.put("/v1/pack/file", params={"file": FOLLOW_UPS}, content=b"kind: \xff\n", headers=TEXT),
                  400, "invalid-request")
    assert "UTF-8" in bad["detail"]
    problem(http.put("/v1/pack/file", content=text.encode(), headers=TEXT), 400, "invalid-request")
    assert snapshot(team) == before


# -- what may not be edited, and who may not edit ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../../../../etc/passwd", "/etc/passwd", "rules/../../outside.yaml",
                                  "corpus/generated/vocab.nod.yaml", "pack.yaml", "rules/../rules/follow_ups.yaml"])
def test_a_path_outside_the_packs_own_files_is_refused(writable, name):
    http, team = writable["http"], writable["team"]
    before = snapshot(team)
    for response in (put(http, "kind: vocabulary\nsets: []\n", name=name),
                     http.get("/v1/pack/file", params={"file": name})):
        body = problem(response, 404, "not-found")
        assert body["code"] == "E241" and "rules/pack.yaml" in body["detail"]
    assert snapshot(team) == before and not (team.parent / "outside.yaml").exists()


def test_a_file_of_the_bundled_pack_is_refused(writable):
    http = writable["http"]
    bundled = rules_dir() / "follow_ups.yaml"
    before = bundled.read_bytes()
    body = problem(put(http, "kind: follow_ups\nrules: []\n", name=str(bundled)), 404, "not-found")
    assert body["code"] == "E241"
    assert bundled.read_bytes() == before


def test_a_write_from_another_origin_or_host_is_refused(writable):
    http, svc, team = writable["http"], writable["svc"], writable["team"]
    text, sha = current(http)
    before = snapshot(team)
    foreign = put(http, text + "# from elsewhere\n", sha=sha, headers={"Origin": "http://evil.example"})
    assert "only pages of this service's own origin" in problem(foreign, 403, "origin-not-allowed")["detail"]
    rebound = put(http, text + "# rebound\n", sha=sha, headers={"Host": "evil.example"})
    problem(rebound, 403, "host-not-allowed")
    assert snapshot(team) == before
    own = put(http, text + "# mine\n", sha=sha, headers={"Origin": svc.url})
    assert own.status_code == 200 and own.json()["written"] is True
    assert put(http, text, sha=own.json()["sha256"]).status_code == 200


def test_with_keys_an_edit_needs_a_key_for_every_tenant(tmp_path):
    from starlette.testclient import TestClient

    from cleo_rules.serve import ServeSettings, create_app
    from cleo_rules.serve.keys import KeyRing

    team = init(tmp_path)
    keys = tmp_path / "keys"
    tenant_key = KeyRing.append(keys, "acme")
    admin_key = KeyRing.append(keys, "*")
    settings = ServeSettings(pack=str(team / "rules"), keys=keys, writable_pack=True, watch_interval=0)
    text = (team / FOLLOW_UPS).read_text(encoding="utf-8")
    with TestClient(create_app(settings)) as client:
        deadline = time.monotonic() + 60
        while client.get("/readyz").status_code != 200:  # the pack loads in the background
            assert time.monotonic() < deadline, "not ready in 60 s"
            time.sleep(0.05)
        listed = client.get("/v1/pack/files", headers={"Authorization": f"Bearer {admin_key}"}).json()
        name = next(f["file"] for f in listed["files"] if f["file"].endswith("follow_ups.yaml"))
        for key, status in ((None, 401), (tenant_key, 403)):
            headers = {**TEXT, **({"Authorization": f"Bearer {key}"} if key else {})}
            response = client.put("/v1/pack/file", params={"file": name}, content=(text + "#\n").encode(),
                                  headers=headers)
            assert response.status_code == status, response.text
        assert (team / FOLLOW_UPS).read_text(encoding="utf-8") == text
        done = client.put("/v1/pack/file", params={"file": name}, content=(text + "#\n").encode(),
                          headers={**TEXT, "Authorization": f"Bearer {admin_key}"})
        assert done.status_code == 200 and (team / FOLLOW_UPS).read_text(encoding="utf-8") == text + "#\n"


# -- refused at start ------------------------------------------------------------------------------------------------

def test_the_writable_playground_refuses_a_bundled_or_installed_pack_at_start(tmp_path):
    installed = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "acme_rules" / "pack"
    shutil.copytree(rules_dir(), installed)
    for pack in (str(rules_dir()), str(installed)):
        started = subprocess.run([sys.executable, "-m", "cleo_rules", "playground", "--writable-pack", "--pack", pack,
                                  "--port", "0"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert started.returncode == 2, started.stderr
        assert "error" in started.stderr.lower() and "only a team's own pack can be edited, never a bundled or " \
            "installed one" in started.stderr
        assert "playground: http" not in started.stdout
    assert (installed / "follow_ups.yaml").read_bytes() == (rules_dir() / "follow_ups.yaml").read_bytes()
