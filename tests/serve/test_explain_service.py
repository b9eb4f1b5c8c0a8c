"""``POST /v1/explain``: the library's explanation over HTTP, its near misses what the playground shows."""

from __future__ import annotations

import json
import time

import jsonschema
import pytest
from starlette.testclient import TestClient

from cleo_rules import load_pack
from cleo_rules.serve import ServeSettings, create_app
from cleo_rules.serve.keys import KeyRing

PACK = load_pack()
JSON = {"Content-Type": "application/json"}
HISTORY = ["Which van insurer covers tools left in the van overnight?",
           {"role": "assistant", "content": "Two do: Brightline Commercial and Zego Van. Brightline is cheaper."}]


def ready(http: TestClient) -> TestClient:
    """The client once the service says it is ready (the pack loads after start-up)."""
    deadline = time.monotonic() + 60
    while http.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "the service was not ready in 60 s"
        time.sleep(0.05)
    return http


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(ServeSettings(watch_interval=0, max_message_chars=300)),
                    base_url="http://127.0.0.1:8080") as http:
        yield ready(http)


def explain(http, body, **headers):
    return http.post("/v1/explain", content=json.dumps(body), headers={**JSON, **headers})


@pytest.mark.parametrize("message, history", [
    ("How should we price the new sourdough loaf at the Leeds shop?", []),
    ("What about the smaller one?", HISTORY),
    ("When was the album released?", ["Tell me about Portishead"]),
    ("  ok  ", []),
])
def test_the_service_explains_as_the_library_does(client, message, history):
    got = explain(client, {"message": message, "history": history})
    assert got.status_code == 200, got.text
    ex = PACK.explain(message, history)
    doc = got.json()
    assert doc["near_misses"] == [n.to_dict() for n in ex.near_misses]
    assert doc["attempts"] == ex.to_dict()["attempts"]
    decision = ex.decision.to_dict()
    decision.pop("message")  # as /v1/classify answers it
    assert doc["decision"] == decision == client.post("/v1/classify", json={"message": message,
                                                                            "history": history}).json()
    schema = {"$ref": "#/components/schemas/Explanation", **{"components": client.get("/openapi.json").json()[
        "components"]}}
    jsonschema.Draft202012Validator(schema).validate(doc)


def test_a_turn_no_rule_took_names_its_near_misses(client):
    doc = explain(client, {"message": "How should we price the new sourdough loaf at the Leeds shop?"}).json()
    assert doc["decision"]["rule"] is None
    assert {"rule": "follow_up.definite", "reason": "guard", "setting": "head_in"}.items() <= \
        next(n for n in doc["near_misses"] if n["rule"] == "follow_up.definite").items()


def test_a_bad_body_is_a_problem_and_nothing_is_explained(client):
    got = explain(client, {"message": "x" * 301})
    assert got.status_code == 400 and got.headers["content-type"] == "application/problem+json"
    assert got.json()["field"] == "message"
    got = explain(client, {"message": "Tell me more.", "history": [{"role": "robot", "content": "hello"}]})
    assert got.status_code == 400 and "history[0]" in got.json()["detail"]


def test_explain_needs_a_key_as_classify_does(tmp_path):
    keys = tmp_path / "keys"
    key = KeyRing.append(keys, "acme")
    with TestClient(create_app(ServeSettings(keys=keys, watch_interval=0)), base_url="http://127.0.0.1") as http:
        ready(http)
        assert explain(http, {"message": "Tell me more."}).status_code == 401
        got = explain(http, {"message": "Tell me more."}, Authorization=f"Bearer {key}")
        assert got.status_code == 200 and got.json()["decision"]["kind"] == "follow_up"
