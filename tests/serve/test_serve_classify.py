"""The service without memory, started for real: classify, batches, errors, the OpenAPI document, metrics.

One service for the module: the bundled pack, no keys, small limits so the
limits are easy to reach.
"""

from __future__ import annotations

import json
import re
import time
from types import SimpleNamespace

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.serve import ServeSettings, create_app
from cleo_rules.serve.problems import PROBLEM_TYPES

from helpers.service import Service, metric

LIMITS = {"max_message_chars": 200, "max_history": 4, "max_batch": 5, "max_body_bytes": 4096}
HISTORY = ["Compare the two van insurance quotes"]
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    args = [x for name, value in LIMITS.items() for x in (f"--{name.replace('_', '-')}", value)]
    s = Service(*args, log_path=tmp_path_factory.mktemp("serve") / "service.log")
    try:
        s.wait_ready(60)
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def http(svc):
    with svc.client() as client:
        yield client


@pytest.fixture(scope="module")
def pack():
    return load_pack()


@pytest.fixture(scope="module")
def doc(http):
    return http.get("/openapi.json").json()


def post(http, path, body, **kwargs):
    return http.post(path, content=json.dumps(body), headers={**JSON, **kwargs.pop("headers", {})}, **kwargs)


def record(decision) -> dict:
    d = decision.to_dict()
    d.pop("message")
    return d


def assert_problem(response, status: int, name: str, field: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == f"/problems/{name}" and body["status"] == status
    assert body["title"] == PROBLEM_TYPES[name][1] and body["detail"]
    assert body["request_id"] == response.headers["x-request-id"]
    assert "Traceback" not in response.text
    if field is not None:
        assert body.get("field") == field, body
    return body


# -- classify -------------------------------------------------------------------------------

@pytest.mark.parametrize("message, history", [
    ("Yes, go with the second one.", HISTORY),
    ("We tried that one already.", HISTORY),
    ("Tell me more.", ["Which van insurer covers tools left overnight?"]),
    ("ok", []),
    ("Which boiler service plan did we choose in 2023?", []),
    ("Go with the other one.", []),
])
def test_classify_answers_what_the_library_decides(http, pack, message, history):
    r = post(http, "/v1/classify", {"message": message, "history": history})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == record(pack.classify(message, history))


def test_history_may_be_absent_or_null(http, pack):
    expected = record(pack.classify("Tell me more."))
    assert post(http, "/v1/classify", {"message": "Tell me more."}).json() == expected
    assert post(http, "/v1/classify", {"message": "Tell me more.", "history": None}).json() == expected


def test_a_role_tagged_history_gets_what_the_library_gives(http, pack):
    """Role-tagged items are the library's to accept or refuse; the service says the same."""
    message = "Yes, go with the second one."
    history = [{"role": "user", "content": "Compare the two van insurance quotes"},
               {"role": "assistant", "content": "Hadley Commercial is cheaper; Cresswell has a lower excess."}]
    r = post(http, "/v1/classify", {"message": message, "history": history})
    try:
        expected = pack.classify(message, history)
    except (TypeError, ValueError) as exc:
        body = assert_problem(r, 400, "invalid-history")
        assert body["detail"] == str(exc) and body["field"].startswith("history")
        named = re.search(r"history\[\d+\]", str(exc))
        assert body["field"] == (named.group(0) if named else "history")
    else:
        assert r.status_code == 200 and r.json() == record(expected)


def test_server_timing_and_request_id(http):
    r = post(http, "/v1/classify", {"message": "Yes, go with the second one.", "history": HISTORY},
             headers={"X-Request-ID": "runtime-42.a"})
    assert r.headers["x-request-id"] == "runtime-42.a"
    timing = dict(re.findall(r"(\w+);dur=([\d.]+)", r.headers["server-timing"]))
    assert set(timing) == {"app", "classify"}
    assert 0 < float(timing["classify"]) <= float(timing["app"]) < 1000
    odd = post(http, "/v1/classify", {"message": "ok"}, headers={"X-Request-ID": "has spaces in it"})
    assert re.fullmatch(r"[0-9a-f]{32}", odd.headers["x-request-id"])


# -- batches ----------------------------------------------------------------------------------

def test_batch_answers_in_order_with_an_error_object_for_each_bad_item(http, pack):
    items = [{"message": "Yes, go with the second one.", "history": HISTORY}, {"mesage": "typo"},
             {"message": "We tried that one already."}, 7, {"message": "ok", "history": [1]}]
    r = post(http, "/v1/classify/batch", {"items": items})
    assert r.status_code == 200
    results = r.json()["results"]
    assert len(results) == 5
    assert results[0] == record(pack.classify(*items[0].values()))
    assert results[2] == record(pack.classify("We tried that one already."))
    fields = {1: "items[1].mesage", 3: "items[3]", 4: "items[4].history[0]"}
    for n, field in fields.items():
        error = results[n]["error"]
        assert error["status"] == 400 and error["type"] == "/problems/invalid-request" and error["field"] == field


def test_batch_limits_and_shape(http):
    assert_problem(post(http, "/v1/classify/batch", {"items": [{"message": "ok"}] * 6}), 400, "invalid-request",
                   "items")
    assert_problem(post(http, "/v1/classify/batch", {}), 400, "invalid-request", "items")
    assert_problem(post(http, "/v1/classify/batch", {"items": {"message": "ok"}}), 400, "invalid-request", "items")
    assert post(http, "/v1/classify/batch", {"items": []}).json() == {"results": []}


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("body, field", [
    ({}, "message"),
    ({"message": 5}, "message"),
    ({"message": "x" * 201}, "message"),
    ({"message": "ok", "history": "one string"}, "history"),
    ({"message": "ok", "history": ["a"] * 5}, "history"),
    ({"message": "ok", "history": ["fine", 3]}, "history[1]"),
    ({"message": "ok", "history": ["fine", "y" * 201]}, "history[1]"),
    ({"message": "ok", "histroy": []}, "histroy"),
    ([], None),
    ("a string", None),
])
def test_bad_fields_are_400_naming_the_field(http, body, field):
    assert_problem(post(http, "/v1/classify", body), 400, "invalid-request", field)


@pytest.mark.parametrize("raw", [b"{", b"", b'{"message": NaN}', b"\xff\xfe", b'{"message": "ok"} trailing'])
def test_bad_json_is_400(http, raw):
    assert_problem(http.post("/v1/classify", content=raw, headers=JSON), 400, "invalid-json")


def test_wrong_content_type_is_415(http):
    r = http.post("/v1/classify", content=b'{"message": "ok"}', headers={"Content-Type": "text/plain"})
    assert_problem(r, 415, "unsupported-media-type")
    assert_problem(http.post("/v1/classify", content=b'{"message": "ok"}'), 415, "unsupported-media-type")
    ok = http.post("/v1/classify", content=b'{"message": "ok"}',
                   headers={"Content-Type": "application/json; charset=utf-8"})
    assert ok.status_code == 200


def test_a_body_over_the_limit_is_413_with_or_without_a_length(http):
    body = json.dumps({"message": "ok", "history": ["z" * 150] * 30}).encode()
    assert len(body) > LIMITS["max_body_bytes"]
    assert_problem(http.post("/v1/classify", content=body, headers=JSON), 413, "payload-too-large")

    def chunks():  # no Content-Length: the limit is applied while reading
        for i in range(0, len(body), 512):
            yield body[i:i + 512]

    assert_problem(http.post("/v1/classify", content=chunks(), headers=JSON), 413, "payload-too-large")


def test_a_client_that_goes_away_mid_body_is_not_an_error(svc, http):
    import socket

    with socket.create_connection(("127.0.0.1", svc.port)) as sock:
        sock.sendall(b"POST /v1/classify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{\"message\": ")
    gone = {"endpoint": "/v1/classify", "method": "POST", "status": "499"}
    deadline = time.monotonic() + 10
    while metric(http.get("/metrics").text, "cleo_http_requests_total", **gone) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metric(http.get("/metrics").text, "cleo_http_requests_total", **gone) == 1
    assert "the client went away" in svc.log and "Traceback" not in svc.log
    assert post(http, "/v1/classify", {"message": "ok"}).status_code == 200


def test_unknown_paths_and_methods(http):
    assert_problem(http.get("/v2/classify"), 404, "not-found")
    r = http.get("/v1/classify")
    assert_problem(r, 405, "method-not-allowed")
    assert "POST" in r.headers["allow"]


def test_tenant_endpoints_without_memory_are_404(http):
    assert_problem(post(http, "/v1/tenants/acme/turns", {"message": "ok"}), 404, "unknown-tenant")
    r = http.post("/v1/tenants/acme/memory", content=b"", headers={"Content-Type": "application/x-ndjson"})
    assert_problem(r, 404, "unknown-tenant")
    assert_problem(post(http, "/v1/tenants/Not_Valid/turns", {"message": "ok"}), 400, "invalid-request", "tenant")


def test_problem_types_are_described_by_the_service(http):
    for name, (status, title, _) in PROBLEM_TYPES.items():
        r = http.get(f"/problems/{name}")
        assert r.status_code == 200 and r.json()["status"] == status and r.json()["title"] == title
    assert_problem(http.get("/problems/nonsense"), 404, "not-found")


# -- status, health, metrics ------------------------------------------------------------------------

def test_health_readiness_and_pack(http, pack):
    assert http.get("/healthz").json() == {"status": "ok"}
    ready = http.get("/readyz").json()
    assert ready["ready"] is True and ready["memory"] is False and ready["model"] == "not used"
    assert ready["embedding"] is None
    status = http.get("/v1/pack").json()
    assert (status["pack"], status["version"], status["hash"]) == (pack.name, pack.version, pack.content_hash)
    assert status["reloads"] == 0 and status["last_error"] is None and status["watching"] is True


def test_metrics_move(http):
    before = http.get("/metrics").text
    post(http, "/v1/classify", {"message": "Yes, go with the second one.", "history": HISTORY})
    post(http, "/v1/classify", {"message": 1})
    after = http.get("/metrics")
    assert after.headers["content-type"].startswith("text/plain")
    text = after.text
    ok = {"endpoint": "/v1/classify", "method": "POST", "status": "200"}
    bad = {**ok, "status": "400"}
    assert metric(text, "cleo_http_requests_total", **ok) == metric(before, "cleo_http_requests_total", **ok) + 1
    assert metric(text, "cleo_http_requests_total", **bad) == metric(before, "cleo_http_requests_total", **bad) + 1
    assert (metric(text, "cleo_http_request_duration_seconds_count", **ok)
            == metric(before, "cleo_http_request_duration_seconds_count", **ok) + 1)
    assert (metric(text, "cleo_decisions_total", kind="follow_up")
            == metric(before, "cleo_decisions_total", kind="follow_up") + 1)
    assert metric(text, "cleo_ready") == 1 and metric(text, "cleo_open_stores") == 0
    assert metric(text, "cleo_pack_reloads_total") == 0
    assert "/v1/tenants/acme" not in text  # endpoints are route templates, never raw paths


def test_without_memory_torch_is_never_loaded(svc, http):
    post(http, "/v1/classify", {"message": "Yes, go with the second one.", "history": HISTORY})
    maps = svc.mapped_files()
    assert "libtorch" not in maps and "/torch/" not in maps and "onnxruntime" not in maps
    assert "/regex/" in maps  # the check can see what was imported: the classifier's own extension is there


# -- the OpenAPI document ---------------------------------------------------------------------

def _validator(doc, name):
    schema = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    return jsonschema.Draft202012Validator(schema)


def test_openapi_lists_exactly_the_routes_served(doc):
    app = create_app(ServeSettings())
    served = {(route.path.replace(":path}", "}"), method.lower())
              for route in app.routes for method in route.methods if method != "HEAD"}
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert served == documented
    assert doc["openapi"] == "3.1.0"
    assert doc["components"]["schemas"]["ClassifyRequest"]["properties"]["message"]["maxLength"] == 200
    jsonschema.Draft202012Validator.check_schema({"components": doc["components"]})


def test_responses_match_their_schemas(http, doc):
    decision = post(http, "/v1/classify", {"message": "Yes, go with the second one.", "history": HISTORY}).json()
    _validator(doc, "Decision").validate(decision)
    batch = post(http, "/v1/classify/batch", {"items": [{"message": "ok"}, {"nope": 1}]}).json()
    _validator(doc, "BatchResponse").validate(batch)
    _validator(doc, "Problem").validate(post(http, "/v1/classify", {}).json())
    _validator(doc, "PackStatus").validate(http.get("/v1/pack").json())
    _validator(doc, "Ready").validate(http.get("/readyz").json())


texts = st.text(max_size=230)
values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                      | texts, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                      max_leaves=6)
history_items = st.one_of(texts, texts.map(lambda t: t[:30]), st.fixed_dictionaries(
    {}, optional={"role": st.sampled_from(["user", "assistant", "system"]), "content": texts}), values)
messages = st.one_of(st.sampled_from(["Yes, go with the second one.", "Tell me more.", "ok", "We tried that one."]),
                     texts)
well_formed = st.fixed_dictionaries({"message": messages}, optional={
    "history": st.one_of(st.none(), st.lists(st.one_of(texts, st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": texts})), max_size=5))})
bodies = st.one_of(
    well_formed,
    values,
    st.fixed_dictionaries({}, optional={
        "message": st.one_of(messages, values),
        "history": st.one_of(st.none(), st.lists(history_items, max_size=6), values),
        "extra": values,
    }),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(body=bodies)
def test_the_service_accepts_exactly_what_the_document_says(http, doc, pack, body):
    """200 for a body the ClassifyRequest schema accepts (400 only if the library refuses the history);
    400 naming a field for every body it does not."""
    valid = _validator(doc, "ClassifyRequest").is_valid(body)
    event("valid" if valid else "invalid")
    r = post(http, "/v1/classify", body)
    if not valid:
        assert_problem(r, 400, "invalid-request")
        return
    try:
        expected = pack.classify(body["message"], body.get("history") or [])
    except (TypeError, ValueError) as exc:
        event("refused by the library")
        assert assert_problem(r, 400, "invalid-history")["detail"] == str(exc)
    else:
        assert r.status_code == 200, r.text
        assert r.json() == record(expected)


def test_an_unexpected_error_is_a_500_with_the_request_id_and_no_traceback(caplog):
    """In process: a pack whose classify raises stands for a bug; the client gets the id, the log the rest."""
    from starlette.testclient import TestClient

    class Broken:
        def classify(self, message, history):
            raise RuntimeError("secret internals")

    app = create_app(ServeSettings(watch_interval=0))
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as client:
        service = app.state.service
        deadline = time.monotonic() + 30
        while not service.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        real = service.manager
        service.manager = SimpleNamespace(pack=Broken())
        try:
            r = client.post("/v1/classify", content=b'{"message": "ok"}', headers=JSON)
        finally:
            service.manager = real
    assert r.status_code == 500 and r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["type"] == "/problems/internal-error" and body["request_id"] in body["detail"]
    assert "secret internals" not in r.text and "Traceback" not in r.text
    logged = [rec for rec in caplog.records if body["request_id"] in rec.getMessage()]
    assert logged and logged[0].exc_info is not None and "secret internals" in str(logged[0].exc_info[1])


def test_without_keys_every_request_is_let_in_but_only_on_loopback(svc):
    r = httpx.post(svc.url + "/v1/classify", content=b'{"message": "ok"}', headers={**JSON, "Authorization": "x"})
    assert r.status_code == 200
