"""An endpoint is one function and one registration (``cleo_rules.serve.routes.endpoint``): the app routes every
endpoint registered and its OpenAPI document lists every one, and nothing else; a toy endpoint registered here
is answered, documented with its schemas, and on the ``/docs`` page, as a bundled one is."""

from __future__ import annotations

import json

import pytest
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient

from cleo_rules.serve import ServeSettings, create_app
from cleo_rules.serve.keys import KeyRing
from cleo_rules.serve.responses import json_response
from cleo_rules.serve.routes import REF, documented_path, endpoint, registered, unregister

METHODS = {"get", "post", "put", "delete", "patch"}


def routed(app) -> set[tuple[str, str]]:
    """(method, path as the document writes it) for every route of ``app`` (HEAD is GET's)."""
    return {(method.lower(), documented_path(route.path)) for route in app.routes if isinstance(route, Route)
            for method in route.methods or () if method != "HEAD"}


def documented(document: dict) -> set[tuple[str, str]]:
    return {(method, path) for path, operations in document["paths"].items() for method in operations
            if method in METHODS}


def refs(value) -> set[str]:
    """Every component a ``$ref`` in ``value`` names."""
    found, stack = set(), [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("$ref"), str):
                found.add(item["$ref"].removeprefix(REF))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def served(app) -> dict:
    """The document ``app`` serves at /openapi.json (built with the app)."""
    return json.loads(app.state.openapi)


@pytest.mark.parametrize("keys", [False, True])
def test_every_route_is_documented_and_every_documented_operation_is_routed(tmp_path, keys):
    settings = ServeSettings(watch_interval=0)
    if keys:
        KeyRing.append(tmp_path / "keys", "*")
        settings = ServeSettings(watch_interval=0, keys=tmp_path / "keys")
    app = create_app(settings)
    document = served(app)
    assert routed(app) == documented(document) and len(routed(app)) == 25
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            names = [p["name"] for p in operation.get("parameters", ()) if p["in"] == "path"]
            assert names == [part[1:-1] for part in path.split("/") if part.startswith("{")], (method, path)
            assert operation["summary"] and "200" in operation["responses"], (method, path)
    schemas = document["components"]["schemas"]
    named = refs(document["paths"])
    reached, stack = set(), list(named)
    while stack:  # every schema named, directly or through another, is defined, and every one defined is named
        name = stack.pop()
        if name not in reached:
            reached.add(name)
            assert name in schemas, name
            stack.extend(refs(schemas[name]))
    assert reached == set(schemas)


async def toy(request: Request):
    return json_response({"echo": request.path_params["word"], "length": len(request.path_params["word"])})


TOY_SCHEMAS = {"Toy": {"type": "object", "required": ["echo", "length"],
                       "properties": {"echo": {"type": "string"}, "length": {"type": "integer"}}}}


@pytest.fixture
def toy_registered():
    endpoint("GET", "/v1/toy/{word}", summary="Say the word back", ok="Toy", statuses=(503,),
             params={"word": {"type": "string", "maxLength": 40}}, schemas=lambda settings: TOY_SCHEMAS)(toy)
    try:
        yield
    finally:
        unregister("GET", "/v1/toy/{word}")


def test_a_toy_endpoint_is_one_function_and_one_registration(toy_registered):
    app = create_app(ServeSettings(watch_interval=0))
    with TestClient(app, base_url="http://127.0.0.1:8080") as client:
        answer = client.get("/v1/toy/sourdough")
        assert answer.status_code == 200 and answer.json() == {"echo": "sourdough", "length": 9}
        assert client.post("/v1/toy/sourdough").status_code == 405
        document = client.get("/openapi.json").json()
        page, script = client.get("/docs"), client.get("/docs/docs.js")
    operation = document["paths"]["/v1/toy/{word}"]["get"]
    assert operation["summary"] == "Say the word back"
    assert operation["parameters"] == [{"name": "word", "in": "path", "required": True,
                                        "schema": {"type": "string", "maxLength": 40}}]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": REF + "Toy"}
    assert sorted(operation["responses"]) == ["200", "403", "503"]
    assert document["components"]["schemas"]["Toy"] == TOY_SCHEMAS["Toy"]
    assert routed(app) == documented(document) and ("get", "/v1/toy/{word}") in routed(app)
    # /docs is Swagger UI on this app's /openapi.json, the document just read, the toy in it (as the browser test
    # tests/serve/test_pages_browser.py shows every operation of that document on the page)
    assert page.status_code == 200 and '<script src="/docs/docs.js">' in page.text
    assert script.status_code == 200 and 'url: "/openapi.json"' in script.text


def test_a_toy_taken_back_is_neither_routed_nor_documented():
    endpoint("GET", "/v1/toy/{word}", summary="Say the word back", ok="Toy", schemas=lambda settings: TOY_SCHEMAS)(toy)
    unregister("GET", "/v1/toy/{word}")
    app = create_app(ServeSettings(watch_interval=0))
    document = served(app)
    assert ("get", "/v1/toy/{word}") not in routed(app) | documented(document)
    assert "Toy" not in document["components"]["schemas"]


def test_a_method_and_path_are_registered_once(toy_registered):
    async def other(request):  # pragma: no cover - never answers
        return json_response({})

    with pytest.raises(ValueError, match="registered already"):
        endpoint("GET", "/v1/toy/{word}", summary="Another")(other)
    with pytest.raises(ValueError, match="registered already"):
        endpoint("POST", "/v1/classify", summary="A second classify")(other)
    assert [e.function for e in registered() if e.path == "/v1/toy/{word}"] == [toy]


def test_two_endpoints_may_not_give_one_schema_two_definitions(toy_registered):
    async def clash(request):  # pragma: no cover - never answers
        return json_response({})

    endpoint("GET", "/v1/clash", summary="Clash", ok="Toy", schemas=lambda settings: {"Toy": {"type": "string"}})(clash)
    try:
        with pytest.raises(ValueError, match="Toy"):
            create_app(ServeSettings(watch_interval=0))
    finally:
        unregister("GET", "/v1/clash")
