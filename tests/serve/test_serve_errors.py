"""Which error becomes which answer: the request's fault is a 400, the service's a 500, a store's passing trouble a 503.

In process, with a memory of a few documents embedded by the toy embedder
(no model). The body and its history are judged before any work
(:mod:`cleo_rules.serve.body`, whose :class:`BadRequest` is the only 400 for
them), so an error raised *inside* the work, even a ``ValueError`` whose
message reads like a history's, is a fault of the service: a 500 problem
carrying the request id, its traceback logged and never sent.
"""

from __future__ import annotations

import ast
import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cleo_rules.errors import StoreError
from cleo_rules.pack.model import Pack
from cleo_rules.serve import ServeSettings, create_app
from cleo_rules.serve.problems import PROBLEM_TYPES

from helpers import ROOT
from helpers.embedders import ToyEmbedder

JSON = {"Content-Type": "application/json"}
HISTORY = ["Compare the two van insurance quotes"]
DOCS = [{"type": "document", "id": f"doc-{i}", "title": f"Van insurance quote {i}", "date": f"2024-03-0{i}",
         "text": f"Quote {i} for van insurance covers tools up to {i}000 pounds."} for i in range(1, 4)]
#: every endpoint that classifies: (method, path, a body whose history the classifier refuses, its field)
CLASSIFYING = {
    "classify": ("/v1/classify", {"message": "Yes, the second one.", "history": HISTORY}),
    "batch": ("/v1/classify/batch", {"items": [{"message": "Yes, the second one.", "history": HISTORY}]}),
    "turns": ("/v1/tenants/acme/turns", {"message": "Yes, the second one.", "history": HISTORY}),
    "recall": ("/v1/tenants/acme/recall", {"message": "Yes, the second one.", "history": HISTORY}),
    "regressions": ("/v1/pack/regressions", {"message": "Yes, the second one.", "history": HISTORY,
                                             "expect": "follow_up"}),
}
BAD_ITEM = {"role": "robot", "content": "beep"}  # a role the history reader refuses


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from starlette.testclient import TestClient

    import cleo_rules.retrieval.embed as embed

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(embed, "Embedder", lambda model=None: ToyEmbedder())
        app = create_app(ServeSettings(memory=tmp_path_factory.mktemp("errors") / "memory", watch_interval=0))
        with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as client:
            service = app.state.service
            deadline = time.monotonic() + 60
            while not service.ready and time.monotonic() < deadline:
                time.sleep(0.05)
            assert service.ready
            body = "".join(json.dumps(d) + "\n" for d in DOCS)
            r = client.post("/v1/tenants/acme/memory", content=body, headers={"Content-Type": "application/x-ndjson"})
            assert r.status_code == 200 and r.json()["added"] == 3, r.text
            yield client, service


def post(client, path, body, **headers):
    return client.post(path, content=json.dumps(body), headers={**JSON, **headers})


def problem(r, status: int, name: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["type"] == f"/problems/{name}" and body["title"] == PROBLEM_TYPES[name][1]
    assert body["request_id"] == r.headers["x-request-id"] and "Traceback" not in r.text
    return body


def traces(service) -> int:
    """How many turns tenant acme's store has traced."""
    db = Path(service.settings.memory) / "acme" / "memory.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        found = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'traces'").fetchone()
        return con.execute("SELECT count(*) FROM traces").fetchone()[0] if found else 0


# -- a fault inside the work is the service's: 500 ----------------------------------------------------------------


def _deep_inside(message):
    raise ValueError(f"history[0]: {message} cannot be compared")  # reads like the history reader's own refusal


@pytest.mark.parametrize("endpoint", sorted(CLASSIFYING))
def test_an_internal_value_error_is_a_500_with_the_request_id_never_a_400(served, endpoint, monkeypatch, caplog):
    client, service = served
    path, body = CLASSIFYING[endpoint]
    monkeypatch.setattr(Pack, "classify", lambda self, message, history=(): _deep_inside("secret internals"))
    before = traces(service)
    r = post(client, path, body, **{"X-Request-ID": f"internal-{endpoint}"})
    answer = problem(r, 500, "internal-error")
    assert answer["request_id"] == f"internal-{endpoint}" and f"internal-{endpoint}" in answer["detail"]
    assert "secret internals" not in r.text and "history" not in r.text and "field" not in answer
    logged = [rec for rec in caplog.records if f"internal-{endpoint}" in rec.getMessage()]
    assert logged and logged[0].exc_info is not None and "secret internals" in str(logged[0].exc_info[1])
    assert traces(service) == before


@pytest.mark.parametrize("endpoint", sorted(CLASSIFYING))
def test_a_history_the_classifier_refuses_is_a_400_before_any_work(served, endpoint, monkeypatch):
    client, service = served
    path, body = CLASSIFYING[endpoint]
    calls = []
    real = Pack.classify
    monkeypatch.setattr(Pack, "classify", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    bad = [*HISTORY, BAD_ITEM]
    body = ({"items": [{"message": "ok"}, {"message": "Yes.", "history": bad}]} if endpoint == "batch"
            else {**body, "history": bad})
    before = traces(service)
    r = post(client, path, body)
    if endpoint == "batch":  # the item fails alone
        assert r.status_code == 200, r.text
        ok, refused = r.json()["results"]
        assert ok["kind"] and refused["error"]["type"] == "/problems/invalid-history"
        assert refused["error"]["status"] == 400 and refused["error"]["field"] == "items[1].history[1]"
        assert "unknown role 'robot'" in refused["error"]["detail"] and len(calls) == 1
        return
    answer = problem(r, 400, "invalid-history")
    assert answer["field"] == "history[1]" and answer["detail"].startswith("history[1]: unknown role 'robot'")
    assert calls == [] and traces(service) == before  # refused before anything was classified or searched


def test_a_body_the_reader_refuses_is_still_a_400_naming_its_field(served):
    client, _ = served
    assert problem(post(client, "/v1/classify", {"message": 3}), 400, "invalid-request")["field"] == "message"
    r = client.post("/v1/classify", content=b'{"message": "a\\ud800"}', headers=JSON)
    assert problem(r, 400, "invalid-request")["code"] == "E319"
    r = client.post("/v1/classify", content=b"[" * 100_000 + b"]" * 100_000, headers=JSON)
    assert problem(r, 400, "invalid-json")["detail"]


roles = st.sampled_from(["user", "assistant", "system", "tool", "robot", "", "USER"]) | st.none() | st.integers()
contents = (st.text(max_size=20) | st.none() | st.integers()
            | st.lists(st.text(max_size=5) | st.fixed_dictionaries({"type": st.sampled_from(["text", "image"])},
                                                                   optional={"text": st.text(max_size=5) | st.none()})
                       | st.integers(), max_size=3))
items = st.text(max_size=20) | st.fixed_dictionaries({}, optional={"role": roles, "content": contents,
                                                                   "name": st.text(max_size=5)})


@settings(max_examples=400, deadline=None)
@given(st.lists(items, max_size=6))
def test_the_body_reader_refuses_exactly_the_histories_the_classifier_would(history):
    """Within the limits, a history is refused in the reading step (BadRequest, 400 invalid-history) exactly
    when the classifier's history reader refuses it, with its words; else it is passed on as it came."""
    from cleo_rules.history import read_history
    from cleo_rules.serve.body import BadRequest, read_classify

    try:
        read_history(history)
        reason = None
    except (TypeError, ValueError) as exc:
        reason = str(exc)
    event("refused" if reason else "accepted")
    body = {"message": "Tell me more.", "history": history}
    if reason is None:
        assert read_classify(body, ServeSettings()) == ("Tell me more.", history)
        return
    with pytest.raises(BadRequest) as refused:
        read_classify(body, ServeSettings(), field="items[2]")
    assert refused.value.name == "invalid-history" and refused.value.status == 400
    assert refused.value.detail == reason and refused.value.extra["field"].startswith("items[2].history")


def test_no_endpoint_catches_type_or_value_errors():
    """The handlers catch only the errors they mean: the reading step's BadRequest, an ingest's IngestError,
    a regression file's CleoError. A broad ``except (TypeError, ValueError)`` would blame the request."""
    root = ROOT / "cleo_rules" / "serve" / "endpoints"
    caught = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = [n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)]
                caught += [(path.name, name) for name in names]
    assert caught and not [c for c in caught if c[1] in ("TypeError", "ValueError", "Exception")], caught


# -- a store that cannot be used just now: 503 with Retry-After ------------------------------------------------


@pytest.mark.parametrize("code", ["E302", "E306", "E307"])
@pytest.mark.parametrize("request_", ["stats", "turn", "ingest", "delete"])
def test_a_store_busy_or_out_of_reach_is_a_503_with_retry_after(served, monkeypatch, code, request_):
    client, service = served
    where = "postgresql://cleo:***@db.internal/cleo (tenant acme)"

    def failing(tenant, work):
        raise StoreError(f"cannot reach the database of memory store {where}: connection refused", code=code)

    monkeypatch.setattr(service.tenants, "_call", failing)
    r = {"stats": lambda: client.get("/v1/tenants/acme/memory"),
         "turn": lambda: post(client, "/v1/tenants/acme/turns", {"message": "Which van quote covers tools?"}),
         "ingest": lambda: client.post("/v1/tenants/acme/memory", content=json.dumps(DOCS[0]) + "\n",
                                       headers={"Content-Type": "application/x-ndjson"}),
         "delete": lambda: client.delete("/v1/tenants/acme/memory/document/doc-1")}[request_]()
    answer = problem(r, 503, "not-ready")
    assert r.headers["retry-after"] == "1" and answer["code"] == code
    assert "db.internal" not in r.text and "memory store" in answer["detail"]


def test_another_store_error_is_a_500(served, monkeypatch):
    client, service = served

    def failing(tenant, work):
        raise StoreError("memory store /srv/acme: the database is damaged", code="E303")

    monkeypatch.setattr(service.tenants, "_call", failing)
    answer = problem(client.get("/v1/tenants/acme/memory"), 500, "internal-error")
    assert "/srv/acme" not in json.dumps(answer)


def test_a_tenant_is_looked_up_off_the_event_loop_and_an_unreachable_lookup_is_a_503(served, monkeypatch):
    client, service = served
    tenants = service.tenants
    seen: dict[str, str] = {}
    known, exists = tenants.known, tenants.exists

    def spy_known(name):
        seen.setdefault("known", threading.current_thread().name)  # the first ask; exists() asks again
        return known(name)

    def spy_exists(name):
        seen["exists"] = threading.current_thread().name
        return exists(name)

    monkeypatch.setattr(tenants, "known", spy_known)
    monkeypatch.setattr(tenants, "exists", spy_exists)
    problem(client.get("/v1/tenants/nobody/memory"), 404, "unknown-tenant")
    assert seen["known"] != seen["exists"]  # the loop asked what it knew; a worker looked
    assert client.get("/v1/tenants/acme/memory").status_code == 200  # a known tenant: no lookup at all

    def unreachable(name):
        raise StoreError("cannot reach the database of memory store postgresql://x/y: refused", code="E306")

    monkeypatch.setattr(tenants, "exists", unreachable)
    r = client.get("/v1/tenants/nobody/memory")
    assert problem(r, 503, "not-ready")["code"] == "E306" and r.headers["retry-after"] == "1"


# -- the shape of the service -----------------------------------------------------------------------------------


def test_every_endpoint_is_a_module_level_function_of_the_service():
    from starlette.routing import Route

    app = create_app(ServeSettings(watch_interval=0))
    endpoints = {(route.path, route.endpoint) for route in app.routes if isinstance(route, Route)}
    assert len(endpoints) == 25
    for path, endpoint in endpoints:
        assert "<locals>" not in endpoint.__qualname__ and endpoint.__qualname__ == endpoint.__name__, path
        assert endpoint.__module__.startswith("cleo_rules.serve."), path
