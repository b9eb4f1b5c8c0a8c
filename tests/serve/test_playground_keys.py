"""``cleo-rules playground --keys FILE`` (issue 30, item 5), started for real on loopback and stopped by pid.

The playground takes the key file ``serve`` takes, in the same format and read
again the same way: without a key every ``/v1`` request is a 401 problem, with
one it works, and an edit of the pack's files needs a key for every tenant.
The page asking for the key is tested in tests/serve/test_playground_keys_browser.py.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from cleo_rules.serve.keys import KeyRing, hash_key

from helpers.service import Service

FOLLOW_UPS = "rules/follow_ups.yaml"
TEXT = {"Content-Type": "text/plain; charset=utf-8"}


def _bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def _until(predicate, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def problem(response, status: int, name: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == f"/problems/{name}"
    return response.json()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    from cleo_rules.starter import init_pack

    root = tmp_path_factory.mktemp("keyed")
    init_pack(root / "team", standalone=True)
    team = root / "team"
    keys = root / "keys.txt"
    tokens = {"acme": KeyRing.append(keys, "acme"), "*": KeyRing.append(keys, "*")}
    with Service("--pack", "rules", "--writable-pack", "--keys", keys, "--watch-interval", "0.2",
                 command="playground", log_path=root / "playground.log", cwd=team) as svc:
        yield {"svc": svc, "team": team, "keys": keys, "tokens": tokens}


def test_issue30_item5_the_keyed_playground_refuses_a_request_without_a_key(keyed):
    svc, team = keyed["svc"], keyed["team"]
    before = (team / FOLLOW_UPS).read_bytes()
    with svc.client() as http:
        assert http.get("/").status_code == 200  # the page itself needs no key: it asks for one
        for response in (http.get("/v1/pack"), http.post("/v1/classify", json={"message": "Tell me more."}),
                         http.put("/v1/pack/file", params={"file": FOLLOW_UPS}, content=before + b"#\n",
                                  headers=TEXT)):
            body = problem(response, 401, "unauthorized")
            assert response.headers["www-authenticate"] == 'Bearer realm="cleo-rules"'
            assert "Authorization" in body["detail"]
        problem(http.get("/v1/pack", headers=_bearer("cleo_not-a-key")), 401, "unauthorized")
    assert (team / FOLLOW_UPS).read_bytes() == before


def test_issue30_item5_with_a_key_the_playground_works_and_edits_need_a_key_for_every_tenant(keyed):
    svc, team, tokens = keyed["svc"], keyed["team"], keyed["tokens"]
    path = team / FOLLOW_UPS
    with svc.client() as http:
        decided = http.post("/v1/classify", json={"message": "Tell me more.", "history": ["Which flour?"]},
                            headers=_bearer(tokens["acme"]))
        assert decided.status_code == 200 and decided.json()["kind"] == "follow_up"
        assert http.get("/v1/pack", headers=_bearer(tokens["acme"])).json()["editing"] == {"writable": True}
        got = http.get("/v1/pack/file", params={"file": FOLLOW_UPS}, headers=_bearer(tokens["*"]))
        assert got.status_code == 200
        text, sha = got.json()["text"], got.json()["sha256"]
        sent = {**TEXT, "If-Match": f'"{sha}"'}
        refused = http.put("/v1/pack/file", params={"file": FOLLOW_UPS}, content=(text + "# acme\n").encode(),
                           headers={**sent, **_bearer(tokens["acme"])})
        problem(refused, 403, "forbidden")
        assert path.read_text(encoding="utf-8") == text
        done = http.put("/v1/pack/file", params={"file": FOLLOW_UPS}, content=(text + "# operator\n").encode(),
                        headers={**sent, **_bearer(tokens["*"])})
        assert done.status_code == 200 and done.json()["written"] is True
    assert path.read_text(encoding="utf-8") == text + "# operator\n"


def test_issue30_item5_the_playground_reads_its_key_file_again_as_serve_does(keyed):
    svc, keys, tokens = keyed["svc"], keyed["keys"], keyed["tokens"]
    original = keys.read_text()

    def status(key: str) -> int:
        return httpx.get(svc.url + "/v1/pack", headers=_bearer(key), timeout=10).status_code

    try:
        added = KeyRing.append(keys, "globex")
        assert _until(lambda: status(added) == 200), svc.log
        keys.write_text("".join(line + "\n" for line in original.splitlines()
                                if hash_key(tokens["acme"]) not in line))
        assert _until(lambda: status(tokens["acme"]) == 401), svc.log
        assert status(added) == 401 and status(tokens["*"]) == 200
    finally:
        keys.write_text(original)
        assert _until(lambda: status(tokens["acme"]) == 200)


def _playground(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cleo_rules", "playground", *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def test_issue30_item5_playground_new_key_appends_a_key_and_help_says_to_use_keys(tmp_path):
    keys = tmp_path / "keys.txt"
    made = _playground("--keys", keys, "--new-key", "*", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    found = KeyRing.load(keys).lookup(key)
    assert found is not None and found.all_tenants and key not in keys.read_text()
    helped = _playground("--help", cwd=tmp_path)
    assert helped.returncode == 0
    words = " ".join(helped.stdout.split())
    assert "--keys FILE" in words and "on a shared machine start it with --keys FILE" in words
    missing = _playground("--keys", tmp_path / "absent.txt", "--port", 0, cwd=tmp_path)
    assert missing.returncode == 2 and "cannot read the key file" in missing.stderr
