"""The service with memory and keys, started for real: tenants, turns, ingest, auth, overload, clients, drain.

One service for the module, with the real embedding model (hence ``model``):
tenant ``acme`` holds the sample memory, tenant ``beta`` a few documents of
its own. The last test stops the service with SIGTERM while an ingest is in
flight.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
import warnings

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.context import build_context
from cleo_rules.resources import data_dir
from cleo_rules.serve.keys import KeyRing

from helpers.readme import example_env
from helpers.service import ROOT, Service, metric

pytestmark = pytest.mark.model

SAMPLE = data_dir() / "sample_memory.jsonl"
NDJSON = {"Content-Type": "application/x-ndjson"}
HISTORY = ["Which van insurer did we go with last year?"]
BETA_SECRET = "The zebra hangar door code is QX4471 and only Beta knows it"
BETA_LINES = "".join(json.dumps(d) + "\n" for d in [
    {"type": "document", "id": "beta-hangar", "title": "Hangar access", "date": "2024-05-01", "text": BETA_SECRET},
    {"type": "document", "id": "beta-rota", "title": "Beta rota", "date": "2024-05-02",
     "text": "Beta's van insurance is with Zebra Mutual; the hangar rota changes on Mondays."},
])


class Tenant:
    def __init__(self, svc, name, key):
        self.svc, self.name, self.key = svc, name, key
        self.headers = {"Authorization": f"Bearer {key}"}

    def post(self, path, body=None, *, content=None, headers=None, **kwargs):
        if content is None:
            content = json.dumps(body)
            headers = {"Content-Type": "application/json", **(headers or {})}
        return httpx.post(self.svc.url + path, content=content, headers={**self.headers, **(headers or {})},
                          timeout=60, **kwargs)

    def get(self, path, **kwargs):
        return httpx.get(self.svc.url + path, headers=self.headers, timeout=60, **kwargs)

    def delete(self, path):
        return httpx.delete(self.svc.url + path, headers=self.headers, timeout=60)

    def turn(self, message, history=(), **extra):
        return self.post(f"/v1/tenants/{self.name}/turns", {"message": message, "history": list(history), **extra})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("serve-memory")
    keys = base / "keys.txt"
    key_a, key_b, key_all = (KeyRing.append(keys, t) for t in ("acme", "beta", "*"))
    root = base / "memory"
    svc = Service("--memory", root, "--keys", keys, "--queue", "2", "--max-ingest-bytes", "100000",
                  log_path=base / "service.log")
    try:
        svc.wait_up(60)
        early = httpx.post(svc.url + "/v1/classify", content=b'{"message": "ok"}',
                           headers={"Content-Type": "application/json", "Authorization": f"Bearer {key_a}"})
        svc.wait_ready(120)
        acme, beta, admin = Tenant(svc, "acme", key_a), Tenant(svc, "beta", key_b), Tenant(svc, "acme", key_all)
        first_turn = acme.turn("Which boiler service plan did we choose?")  # before acme has a store: 404
        ingested = acme.post("/v1/tenants/acme/memory", content=SAMPLE.read_bytes(), headers=NDJSON)
        assert ingested.status_code == 200, ingested.text
        assert beta.post("/v1/tenants/beta/memory", content=BETA_LINES.encode(), headers=NDJSON).status_code == 200
        yield {"svc": svc, "root": root, "acme": acme, "beta": beta, "admin": admin, "early": early,
               "first_turn": first_turn, "ingested": ingested.json(), "keys": (key_a, key_b, key_all)}
    finally:
        svc.stop()


def problem(r, status, name):
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["type"] == f"/problems/{name}" and body["request_id"] == r.headers["x-request-id"]
    return body


def timings(r) -> dict:
    return {k: float(v) for k, v in re.findall(r"(\w+);dur=([\d.]+)", r.headers["server-timing"])}


# -- readiness, ingest, turns -------------------------------------------------------------------

def test_not_ready_until_the_model_is_warm_and_the_first_turn_does_not_load_it(world):
    svc = world["svc"]
    assert svc.statuses[0] == 503 and svc.statuses[-1] == 200
    assert problem(world["early"], 503, "not-ready")["detail"]
    assert world["early"].headers["retry-after"] == "1"
    assert problem(world["first_turn"], 404, "unknown-tenant")
    turn = world["acme"].turn("Which boiler service plan did we choose?")
    assert turn.status_code == 200
    assert timings(turn)["embed"] < 1000  # the model was warm: no multi-second load on the first turn
    ready = httpx.get(svc.url + "/readyz").json()
    assert ready["memory"] is True and ready["model"] == "warm"
    embedding = ready["embedding"]  # the default backend, one thread, applied when the model loaded
    assert (embedding["backend"], embedding["model"], embedding["threads"], embedding["loaded"]) == (
        "onnx", "all-MiniLM-L6-v2", 1, True)
    assert embedding["runtime"].startswith("onnxruntime ") and len(embedding["model_sha256"]) == 64


def test_ingest_report_and_stats(world):
    report = world["ingested"]
    lines = sum(1 for line in SAMPLE.read_text().splitlines() if line.strip())
    assert report["added"] == lines and report["skipped"] == 0 and report["source"] == "request body"
    stats = world["acme"].get("/v1/tenants/acme/memory").json()
    assert stats["conversations"] + stats["documents"] == lines and "path" not in stats
    stored, embedder = stats["embedding"]["stored"], stats["embedding"]["embedder"]
    assert (stored["backend"], stored["recorded"], embedder["backend"], embedder["threads"]) == ("onnx", True, "onnx", 1)
    assert stored["model_sha256"] == embedder["model_sha256"] and stored["runtime"] == embedder["runtime"]
    again = world["acme"].post("/v1/tenants/acme/memory", content=SAMPLE.read_bytes(), headers=NDJSON).json()
    assert again["unchanged"] == lines and again["added"] == 0


def test_a_turn_searches_the_shaped_query_and_writes_its_trace(world):
    acme = world["acme"]
    r = acme.turn("Yes, the second one.", HISTORY, k=3)
    assert r.status_code == 200
    turn = r.json()
    decision = load_pack().classify("Yes, the second one.", HISTORY)
    assert (turn["kind"], turn["rule"], turn["query"], turn["anchor"]) == (
        decision.kind, decision.rule, decision.query, decision.anchor)
    assert 1 <= len(turn["results"]) <= 3
    assert set(turn["results"][0]) == {"source", "id", "item", "title", "date", "text", "score"}
    assert turn["results"][0]["title"] in turn["context"]
    assert set(timings(r)) == {"app", "classify", "embed", "search", "metadata", "context", "trace"}
    with sqlite3.connect(f"file:{world['root'] / 'acme' / 'memory.db'}?mode=ro", uri=True) as db:
        row = db.execute("SELECT query, kind, k, results FROM traces WHERE id = ?", (turn["trace_id"],)).fetchone()
    assert row[:3] == (turn["query"], turn["kind"], 3)
    assert [x["item"] for x in json.loads(row[3])] == [x["item"] for x in turn["results"]]


def test_a_skipped_turn_searches_nothing(world):
    turn = world["acme"].turn("ok", HISTORY).json()
    assert turn["kind"] == "skip" and turn["query"] is None and turn["results"] == []
    assert turn["context"] == build_context(load_pack().context, query=None, message="ok", kind="skip")


def test_turn_fields_are_checked(world):
    acme = world["acme"]
    for body, field in [({"message": "ok", "k": 0}, "k"), ({"message": "ok", "k": 101}, "k"),
                        ({"message": "ok", "k": "3"}, "k"), ({"message": "ok", "k": True}, "k"),
                        ({"message": "ok", "history": [None]}, "history[0]"), ({"k": 3}, "message")]:
        r = acme.post("/v1/tenants/acme/turns", body)
        assert problem(r, 400, "invalid-request")["field"] == field
    assert acme.turn("Which van insurer?", k=2.0).status_code == 200  # JSON does not tell 2 from 2.0


def test_ingest_errors(world):
    acme = world["acme"]
    good = "".join(json.dumps({"type": "document", "id": f"acme-extra-{i}", "title": "Extra", "date": "2024-01-0" + str(i),
                               "text": f"Extra note {i} about the stores cupboard."}) + "\n" for i in (1, 2))
    bad = good + '{"type": "document", "id": "x"}\nnot json\n'
    strict = acme.post("/v1/tenants/acme/memory?strict=true", content=bad.encode(), headers=NDJSON)
    body = problem(strict, 400, "invalid-ingest")
    assert sorted({p["line"] for p in body["problems"]}) == [3, 4]
    lenient = acme.post("/v1/tenants/acme/memory", content=bad.encode(), headers=NDJSON).json()
    assert lenient["skipped"] == 2 and lenient["added"] == 2 and {p["line"] for p in lenient["problems"]} == {3, 4}
    assert acme.delete("/v1/tenants/acme/memory/document/acme-extra-1").status_code == 200
    assert acme.delete("/v1/tenants/acme/memory/document/acme-extra-2").status_code == 200
    problem(acme.post("/v1/tenants/acme/memory", content=good.encode(),
                      headers={"Content-Type": "application/json"}), 415, "unsupported-media-type")
    problem(acme.post("/v1/tenants/acme/memory", content=b"x" * 100_001, headers=NDJSON), 413, "payload-too-large")
    body = problem(acme.post("/v1/tenants/acme/memory?strict=maybe", content=b"", headers=NDJSON), 400,
                   "invalid-request")
    assert body["field"] == "strict"


def test_only_an_ingest_creates_a_tenant(world):
    admin, root = world["admin"], world["root"]
    problem(admin.post("/v1/tenants/gamma/turns", {"message": "Which van insurer?"}), 404, "unknown-tenant")
    problem(admin.get("/v1/tenants/gamma/memory"), 404, "unknown-tenant")
    problem(admin.delete("/v1/tenants/gamma/memory/document/x"), 404, "unknown-tenant")
    assert not (root / "gamma").exists()
    r = admin.post("/v1/tenants/gamma/memory", content=b"", headers=NDJSON)
    assert r.status_code == 200 and r.json()["added"] == 0
    assert (root / "gamma" / "memory.db").is_file()
    assert admin.post("/v1/tenants/gamma/turns", {"message": "Which van insurer?"}).json()["results"] == []
    problem(admin.post("/v1/tenants/..%2F..%2Fetc/turns", {"message": "x"}), 404, "not-found")
    assert problem(admin.post("/v1/tenants/Gamma/turns", {"message": "x"}), 400, "invalid-request")["field"] == "tenant"


def test_a_store_that_cannot_open_is_a_500_with_the_request_id_logged(world):
    admin, root, svc = world["admin"], world["root"], world["svc"]
    (root / "corrupt").mkdir()
    (root / "corrupt" / "memory.db").write_bytes(b"this is not an SQLite database " * 64)
    r = admin.post("/v1/tenants/corrupt/turns", {"message": "Which van insurer covers tools?"},
                   headers={"X-Request-ID": "corrupt-store-1"})
    body = problem(r, 500, "internal-error")
    assert body["request_id"] == "corrupt-store-1" and "corrupt-store-1" in body["detail"]
    assert "Traceback" not in r.text and str(root) not in r.text
    log = svc.log
    assert "request corrupt-store-1: POST /v1/tenants/corrupt/turns failed" in log
    assert "Traceback" in log[log.index("request corrupt-store-1"):]
    # the other tenants are untouched
    assert world["acme"].turn("Which van insurer covers tools?").status_code == 200


def test_delete(world):
    beta = world["beta"]
    beta.post("/v1/tenants/beta/memory", content=BETA_LINES.encode(), headers=NDJSON)
    found = beta.turn("What is the zebra hangar door code?").json()
    assert "beta-rota" in {r["id"] for r in found["results"]}
    assert beta.delete("/v1/tenants/beta/memory/document/beta-rota").json() == {
        "source": "document", "id": "beta-rota", "deleted": True}
    after = beta.turn("What is the zebra hangar door code?").json()
    assert "beta-rota" not in {r["id"] for r in after["results"]}
    problem(beta.delete("/v1/tenants/beta/memory/document/beta-rota"), 404, "not-found")
    assert problem(beta.delete("/v1/tenants/beta/memory/folder/x"), 400, "invalid-request")["field"] == "source"
    beta.post("/v1/tenants/beta/memory", content=BETA_LINES.encode(), headers=NDJSON)


# -- who gets in ----------------------------------------------------------------------------------

def test_keys_are_required_and_name_their_tenants(world):
    svc, acme, beta = world["svc"], world["acme"], world["beta"]
    body = {"message": "What is the zebra hangar door code?"}
    no_key = httpx.post(svc.url + "/v1/classify", json=body)
    assert problem(no_key, 401, "unauthorized") and no_key.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.post(svc.url + "/v1/classify", json=body, headers={"Authorization": "Bearer cleo_not-a-key"})
    problem(wrong, 401, "unauthorized")
    basic = httpx.post(svc.url + "/v1/classify", json=body, headers={"Authorization": f"Basic {acme.key}"})
    problem(basic, 401, "unauthorized")
    assert acme.post("/v1/classify", body).status_code == 200

    # acme's key on beta's paths: 403 every time, not one byte of beta's memory, and nothing changed
    held = beta.get("/v1/tenants/beta/memory").json()
    answers = [acme.post("/v1/tenants/beta/turns", body), acme.get("/v1/tenants/beta/memory"),
               acme.post("/v1/tenants/beta/memory", content=BETA_LINES.encode(), headers=NDJSON),
               acme.delete("/v1/tenants/beta/memory/document/beta-hangar")]
    for r in answers:
        problem(r, 403, "forbidden")
        assert "QX4471" not in r.text and "door code" not in r.text and "Zebra Mutual" not in r.text
    assert beta.get("/v1/tenants/beta/memory").json() == held
    # and acme's own turn searches acme's memory only
    own = acme.turn("What is the zebra hangar door code?").json()
    assert own["results"] and not any(r["id"].startswith("beta-") for r in own["results"])
    assert "QX4471" not in json.dumps(own)
    # beta's key reads beta's memory
    theirs = beta.turn("What is the zebra hangar door code?").json()
    assert any(BETA_SECRET in r["text"] for r in theirs["results"])
    # reloading the pack needs a key for every tenant
    problem(acme.post("/v1/pack/reload"), 403, "forbidden")
    assert world["admin"].post("/v1/pack/reload").status_code == 200
    # health, readiness, metrics and the document need no key
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
        assert httpx.get(svc.url + path).status_code == 200


# -- load -------------------------------------------------------------------------------------------

def test_a_full_queue_sheds_with_503_and_retry_after(world):
    svc, acme = world["svc"], world["acme"]
    before = metric(httpx.get(svc.url + "/metrics").text, "cleo_requests_shed_total",
                    endpoint="/v1/tenants/{tenant}/turns")

    async def burst():
        async with httpx.AsyncClient(base_url=svc.url, headers=acme.headers, timeout=60) as client:
            body = json.dumps({"message": "Which van insurer covers tools left overnight?"})
            return await asyncio.gather(*[client.post("/v1/tenants/acme/turns", content=body,
                                                      headers={"Content-Type": "application/json"})
                                          for _ in range(12)])

    answers = asyncio.run(burst())
    statuses = [r.status_code for r in answers]
    shed = [r for r in answers if r.status_code == 503]
    # --queue 2: turns (reads) may hold one slot, the other is kept for a write; how many of the twelve
    # find the slot free depends on when each arrives, so at least the first is served and some are shed
    assert set(statuses) <= {200, 503} and shed and statuses.count(200) >= 1, statuses
    for r in shed:
        assert problem(r, 503, "overloaded") and r.headers["retry-after"] == "1"
    after = metric(httpx.get(svc.url + "/metrics").text, "cleo_requests_shed_total",
                   endpoint="/v1/tenants/{tenant}/turns")
    assert after == before + len(shed)


def test_metrics_of_turns_and_stores(world):
    svc, acme = world["svc"], world["acme"]
    before = httpx.get(svc.url + "/metrics").text
    acme.turn("Yes, the second one.", HISTORY)
    text = httpx.get(svc.url + "/metrics").text
    for stage in ("classify", "embed", "search", "metadata", "context", "trace", "total"):
        assert (metric(text, "cleo_turn_stage_seconds_count", stage=stage)
                == metric(before, "cleo_turn_stage_seconds_count", stage=stage) + 1)
    assert (metric(text, "cleo_decisions_total", kind="follow_up")
            == metric(before, "cleo_decisions_total", kind="follow_up") + 1)
    assert metric(text, "cleo_open_stores") >= 2
    turns = {"endpoint": "/v1/tenants/{tenant}/turns", "method": "POST", "status": "200"}
    assert metric(text, "cleo_http_requests_total", **turns) == metric(before, "cleo_http_requests_total", **turns) + 1


def test_with_memory_the_model_is_loaded_in_the_service(world):
    maps = world["svc"].mapped_files()
    assert "onnxruntime" in maps  # the contrast to the service without memory
    assert "libtorch" not in maps and "/torch/" not in maps  # the default backend needs no torch


texts = st.text(max_size=60)
values = st.none() | st.booleans() | st.integers(-3, 200) | st.floats(allow_nan=False, allow_infinity=False) | texts
turn_bodies = st.fixed_dictionaries({}, optional={
    "message": st.one_of(st.sampled_from(["Which van insurer covers tools?", "Yes, the second one.", "ok"]), values),
    "history": st.one_of(st.none(), st.lists(st.one_of(texts, values), max_size=3), values),
    "k": st.one_of(st.integers(-1, 102), values),
    "x": values,
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(body=turn_bodies)
def test_turns_accept_exactly_what_the_document_says(world, body):
    acme = world["acme"]
    doc = httpx.get(acme.svc.url + "/openapi.json").json()
    schema = {"$ref": "#/components/schemas/TurnRequest", "components": doc["components"]}
    valid = jsonschema.Draft202012Validator(schema).is_valid(body)
    r = acme.post("/v1/tenants/acme/turns", body)
    if valid:
        assert r.status_code == 200, r.text
        response = {"$ref": "#/components/schemas/TurnResponse", "components": doc["components"]}
        jsonschema.validate(r.json(), response, cls=jsonschema.Draft202012Validator)
    else:
        problem(r, 400, "invalid-request")


# -- the playground's endpoints with memory and keys ------------------------------------------------

def _traces(world) -> int:
    with sqlite3.connect(f"file:{world['root'] / 'acme' / 'memory.db'}?mode=ro", uri=True) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'traces'").fetchone():
            return 0  # no turn has been traced yet: the table comes with the first
        return db.execute("SELECT count(*) FROM traces").fetchone()[0]


def test_recall_gives_the_shaped_query_beside_the_message_as_typed_and_traces_nothing(world):
    acme = world["acme"]
    message = "Yes, the second one."
    before = _traces(world)
    recalled = acme.post("/v1/tenants/acme/recall", {"message": message, "history": HISTORY, "k": 3})
    assert recalled.status_code == 200, recalled.text
    body = recalled.json()
    assert _traces(world) == before  # a look, not a turn
    doc = httpx.get(world["svc"].url + "/openapi.json").json()
    jsonschema.Draft202012Validator({"$ref": "#/components/schemas/RecallResponse",
                                     "components": doc["components"]}).validate(body)
    decision = load_pack().classify(message, HISTORY)
    assert body["decision"]["kind"] == decision.kind and body["decision"]["query"] == decision.query
    shaped = acme.turn(message, HISTORY, k=3).json()           # the turn searches the shaped query
    assert body["shaped"] == shaped["results"]
    raw = acme.turn(message, [], k=3).json()                   # with no history the message is searched as typed
    assert raw["query"] == message and body["raw"] == raw["results"]
    assert [r["item"] for r in body["shaped"]] != [r["item"] for r in body["raw"]]
    skipped = acme.post("/v1/tenants/acme/recall", {"message": "ok", "history": HISTORY}).json()
    assert skipped["decision"]["kind"] == "skip" and skipped["shaped"] is None and isinstance(skipped["raw"], list)
    problem(world["beta"].post("/v1/tenants/acme/recall", {"message": message}), 403, "forbidden")
    problem(world["admin"].post("/v1/tenants/nobody/recall", {"message": message}), 404, "unknown-tenant")
    problem(acme.post("/v1/tenants/acme/recall", {"message": message, "k": 0}), 400, "invalid-request")


def test_the_playground_page_is_public_and_what_it_reads_needs_a_key(world):
    url = world["svc"].url
    assert httpx.get(url + "/").status_code == 200
    assert httpx.get(url + "/playground/playground.js").status_code == 200
    problem(httpx.get(url + "/v1/pack/rules"), 401, "unauthorized")
    assert world["acme"].get("/v1/pack/rules").status_code == 200
    status = world["acme"].get("/v1/pack").json()
    # a key for one tenant sees no problems and no paths (only a key for every tenant does)
    assert status["regressions"]["writable"] is False and "problems" not in status and "path" not in status
    assert world["admin"].get("/v1/pack").json()["problems"] == []
    body = {"message": "Thanks!", "expect": "skip"}
    assert world["acme"].post("/v1/pack/regressions", body).json()["written"] is False
    # appending to the corpus is for a key that covers every tenant, and this service was not started to write it
    problem(world["acme"].post("/v1/pack/regressions", {**body, "write": True}), 403, "forbidden")
    problem(world["admin"].post("/v1/pack/regressions", {**body, "write": True}), 409, "corpus-not-writable")


# -- clients ----------------------------------------------------------------------------------------

def _readme_block(language: str, after: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(after)
    block = re.search(rf"```{language}\n(.*?)```", text[start:], re.S)
    return block.group(1)


def test_the_readme_node_example_runs_against_the_service(world, tmp_path):
    node = shutil.which("node")
    assert node, "Node is needed (.ci/run installs it)"
    script = tmp_path / "recall.mjs"
    script.write_text(_readme_block("js", "From Node"))
    assert len(script.read_text().splitlines()) <= 25
    env = {**os.environ, "CLEO_URL": world["svc"].url, "CLEO_KEY": world["acme"].key}
    done = subprocess.run([node, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    decision = load_pack().classify("Yes, the second one.", HISTORY)
    assert lines[0] == f"{decision.kind} {decision.rule} {json.dumps(decision.query)}"
    assert re.fullmatch(r"\d\.\d\d (conversation|document) .+ \d{4}-\d\d-\d\d", lines[1])
    assert "Which van insurer did we go with last year?" in done.stdout  # the context names the query searched
    # and a failing request comes back as the problem's title and detail
    bad = {**env, "CLEO_KEY": "cleo_wrong"}
    failed = subprocess.run([node, str(script)], capture_output=True, text=True, env=bad, timeout=60)
    assert failed.returncode != 0 and "401 A valid key is needed" in failed.stderr


def test_the_readme_curl_examples_run_against_the_service(world, tmp_path):
    assert shutil.which("curl")
    commands = _readme_block("sh", "From the shell").replace("\\\n", " ").strip().splitlines()
    assert len(commands) == 4 and commands[0] == "cleo-rules memory sample > sample_memory.jsonl"
    # outside the checkout, as a client of the service runs them: the sample comes from the command
    env = example_env(tmp_path, CLEO_URL=world["svc"].url, CLEO_KEY=world["acme"].key)
    run = [subprocess.run(["bash", "-c", c], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
                          check=True).stdout for c in commands]
    assert run[0] == "" and (tmp_path / "sample_memory.jsonl").read_bytes() == SAMPLE.read_bytes()
    outputs = [json.loads(out) for out in run[1:]]
    assert outputs[0]["unchanged"] + outputs[0]["added"] + outputs[0]["updated"] == world["ingested"]["added"]
    assert outputs[1]["kind"] == "follow_up" and outputs[1]["anchor"] == HISTORY[0]
    assert outputs[2]["kind"] == "follow_up" and len(outputs[2]["results"]) == 3


# -- shutdown (last: it stops the service) ------------------------------------------------------------

def test_sigterm_drains_the_ingest_in_flight_and_closes_every_store(world):
    svc, admin, root = world["svc"], world["admin"], world["root"]
    n = 256
    lines = "".join(json.dumps({"type": "document", "id": f"drain-{i:03d}", "title": f"Job sheet {i}",
                                "date": "2024-06-01",
                                "text": f"Job {i}: replaced the valve on radiator {i} and bled the system at "
                                        f"house number {i}; the customer paid on the day."}) + "\n"
                    for i in range(n))
    answer = {}

    def ingest():
        answer["r"] = httpx.post(svc.url + "/v1/tenants/drain/memory", content=lines.encode(),
                                 headers={**admin.headers, **NDJSON}, timeout=120)

    thread = threading.Thread(target=ingest)
    thread.start()
    db = root / "drain" / "memory.db"

    def committed() -> int:
        if not db.exists():
            return 0
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
                return con.execute("SELECT count(*) FROM documents").fetchone()[0]
        except sqlite3.OperationalError:
            return 0

    deadline = time.monotonic() + 60
    while committed() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    in_flight = committed()
    assert 0 < in_flight < n, "the ingest must still be running when SIGTERM arrives"
    svc.signal(signal.SIGTERM)
    time.sleep(0.5)
    with pytest.raises(httpx.ConnectError):  # no new connections while draining
        httpx.get(svc.url + "/healthz", timeout=2)
    thread.join(120)
    r = answer["r"]
    assert r.status_code == 200, r.text
    assert r.json()["added"] == n
    code = svc.wait_exit(60)
    assert code in (0, -signal.SIGTERM), svc.log
    log = svc.log
    shutdown = log[log.index("Shutting down"):]
    assert "Waiting for connections to close" in shutdown
    assert re.search(r"closed [3-9] memory stores", shutdown), shutdown
    assert "Traceback" not in shutdown and "ERROR" not in shutdown

    from cleo_rules.retrieval import MemoryStore, StoreWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)  # saved cleanly: nothing to repair
        with MemoryStore.open(root / "drain") as store:
            stats = store.stats()
    assert stats["documents"] == n and stats["indexes"]["passages"]["elements"] == stats["passages"]
