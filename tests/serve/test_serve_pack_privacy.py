"""Where the server keeps things only to an operator (issue 30, item 3), endpoint by endpoint.

Every endpoint that reports the pack shows the pack's and the corpus's paths,
a refused pack's reason and its located problems only without keys or to a key
for every tenant (``*``); a key for some tenants sees the rest. One function
decides it (:meth:`cleo_rules.serve.service.Service.shows_paths`, through
:func:`cleo_rules.serve.endpoints.common.pack_status` and ``admit``).

The app runs through Starlette's test client on a team pack made by
``cleo-rules init`` in a temporary directory, outside the working directory,
so any path of it is named whole and a leak is seen as the directory's name
in the answer.
"""

from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from cleo_rules.serve import ServeSettings, create_app
from cleo_rules.serve.keys import KeyRing

BROKEN = "\nthis: [not yaml\n"


def _team(root):
    from cleo_rules.starter import init_pack

    init_pack(root / "team", standalone=True)
    return root / "team"


def _bearer(key: str | None) -> dict:
    return {"Authorization": f"Bearer {key}"} if key else {}


def _ready(client: TestClient) -> None:
    deadline = time.monotonic() + 60
    while client.get("/readyz").status_code != 200:  # the pack loads in the background
        assert time.monotonic() < deadline, "not ready in 60 s"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """A keyed service serving a team pack whose edit on disk was then refused by a reload."""
    root = tmp_path_factory.mktemp("privacy")
    team = _team(root)
    keys = root / "keys"
    tokens = {"acme": KeyRing.append(keys, "acme"), "*": KeyRing.append(keys, "*")}
    settings = ServeSettings(pack=str(team / "rules"), keys=keys, watch_interval=0)
    with TestClient(create_app(settings)) as client:
        _ready(client)
        follow_ups = team / "rules" / "follow_ups.yaml"
        follow_ups.write_text(follow_ups.read_text(encoding="utf-8") + BROKEN, encoding="utf-8")
        reload = client.post("/v1/pack/reload", headers=_bearer(tokens["*"]))
        assert reload.status_code == 422, reload.text
        yield {"client": client, "root": root, "team": team, "tokens": tokens}


def test_issue30_item3_pack_status_shows_paths_corpus_and_problems_only_to_a_key_for_every_tenant(refused):
    client, root, tokens = refused["client"], str(refused["root"]), refused["tokens"]
    r = client.get("/v1/pack", headers=_bearer(tokens["acme"]))
    assert r.status_code == 200, r.text
    status = r.json()
    assert not {"path", "corpus", "last_error", "problems"} & set(status)
    assert root not in r.text
    assert status["rejections"] == 1 and status["regressions"] == {"file": "corpus/regressions.yaml",
                                                                   "writable": False}
    whole = client.get("/v1/pack", headers=_bearer(tokens["*"])).json()
    assert whole["path"] == str((refused["team"] / "rules").resolve())
    assert whole["corpus"] == str((refused["team"] / "corpus").resolve())
    assert whole["last_error"] and whole["problems"] and root in whole["regressions"]["file"]
    assert client.get("/v1/pack").status_code == 401


def test_issue30_item3_readyz_shows_paths_and_the_refusal_only_to_a_key_for_every_tenant(refused):
    client, root, tokens = refused["client"], str(refused["root"]), refused["tokens"]
    for headers in ({}, _bearer(tokens["acme"]), _bearer("cleo_not-a-key")):
        r = client.get("/readyz", headers=headers)
        assert r.status_code == 200 and not {"path", "corpus", "last_error", "problems"} & set(r.json()["pack"])
        assert root not in r.text
    whole = client.get("/readyz", headers=_bearer(tokens["*"])).json()["pack"]
    assert whole["path"] == str((refused["team"] / "rules").resolve()) and whole["last_error"]


def test_issue30_item3_a_regression_preview_names_its_file_without_the_servers_path(refused):
    client, root, tokens = refused["client"], str(refused["root"]), refused["tokens"]
    body = {"message": "Tell me more.", "history": ["What is a van?"], "expect": "follow_up"}
    r = client.post("/v1/pack/regressions", json=body, headers=_bearer(tokens["acme"]))
    assert r.status_code == 200, r.text
    assert r.json()["file"] == "corpus/regressions.yaml" and root not in r.text
    whole = client.post("/v1/pack/regressions", json=body, headers=_bearer(tokens["*"])).json()
    assert whole["file"] == str((refused["team"] / "corpus" / "regressions.yaml").resolve())


def test_issue30_item3_a_reload_and_its_refusal_are_an_operators_only(refused):
    client, root, tokens = refused["client"], str(refused["root"]), refused["tokens"]
    r = client.post("/v1/pack/reload", headers=_bearer(tokens["acme"]))
    assert r.status_code == 403 and root not in r.text
    whole = client.post("/v1/pack/reload", headers=_bearer(tokens["*"]))
    assert whole.status_code == 422 and whole.json()["serving"]["path"] == str((refused["team"] / "rules").resolve())


def test_issue30_item3_metrics_name_no_path(refused):
    client, root = refused["client"], str(refused["root"])
    r = client.get("/metrics")
    assert r.status_code == 200 and "cleo_pack_rejections" in r.text and root not in r.text


#: every endpoint a key for one tenant may call while no pack serves: each answers 503 and must not say why
NOT_READY = [
    ("POST", "/v1/classify", {"message": "Tell me more."}),
    ("POST", "/v1/classify/batch", {"items": [{"message": "Tell me more."}]}),
    ("POST", "/v1/explain", {"message": "Tell me more."}),
    ("GET", "/v1/pack", None),
    ("GET", "/v1/pack/rules", None),
    ("GET", "/v1/pack/source?file=pack.yaml", None),
    ("POST", "/v1/pack/regressions", {"message": "Tell me more.", "expect": "follow_up"}),
    ("GET", "/v1/pack/files", None),
    ("GET", "/v1/pack/file?file=rules/pack.yaml", None),
]


@pytest.mark.parametrize("method, path, body", NOT_READY, ids=[f"{m} {p.split('?')[0]}" for m, p, _ in NOT_READY])
def test_issue30_item3_a_refused_pack_says_why_on_every_v1_endpoint_only_to_a_key_for_every_tenant(
        tmp_path, method, path, body):
    team = _team(tmp_path)
    follow_ups = team / "rules" / "follow_ups.yaml"
    follow_ups.write_text(follow_ups.read_text(encoding="utf-8") + BROKEN, encoding="utf-8")
    keys = tmp_path / "keys"
    tenant, admin = KeyRing.append(keys, "acme"), KeyRing.append(keys, "*")
    settings = ServeSettings(pack=str(team / "rules"), keys=keys, watch_interval=0, writable_pack=True)
    with TestClient(create_app(settings)) as client:
        deadline = time.monotonic() + 60
        while "rejected" not in client.get("/readyz").text:
            assert time.monotonic() < deadline, "the pack was not refused in 60 s"
            time.sleep(0.05)
        hidden = client.request(method, path, json=body, headers=_bearer(tenant))
        shown = client.request(method, path, json=body, headers=_bearer(admin))
    assert hidden.status_code == shown.status_code == 503
    assert hidden.json()["detail"] == "the rule pack was rejected: the service's log says why"
    assert str(tmp_path) not in hidden.text
    assert shown.json()["detail"].startswith("the rule pack was rejected: rule pack ")
