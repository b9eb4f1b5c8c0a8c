"""The OpenAPI document as a page (``GET /docs``): Swagger UI's files from the swagger-ui-py package and the page's
own, a Content-Security-Policy without 'unsafe-inline', nothing from another host, and admitted as
``/openapi.json`` is: no key, behind the Host guard. (The page in a browser: tests/serve/test_pages_browser.py.)"""

from __future__ import annotations

import re
import time

import pytest
from starlette.testclient import TestClient

from cleo_rules.serve import ServeSettings, api_page, create_app
from cleo_rules.serve.keys import KeyRing
from cleo_rules.serve.playground import CSP

from helpers import ROOT

FILES = ROOT / "cleo_rules" / "serve" / "static" / "api"
PUBLIC = ("/docs", "/docs/docs.js", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/openapi.json")


def ready(http: TestClient) -> TestClient:
    deadline = time.monotonic() + 60
    while http.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "the service was not ready in 60 s"
        time.sleep(0.05)
    return http


@pytest.fixture(scope="module")
def plain():
    with TestClient(create_app(ServeSettings(watch_interval=0)), base_url="http://127.0.0.1:8080") as http:
        yield ready(http)


def test_the_page_and_its_files_come_from_the_package_with_the_policy(plain):
    page = plain.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.text == (FILES / "index.html").read_text(encoding="utf-8")
    assert re.findall(r"<script\b[^>]*>", page.text) == ['<script src="/docs/swagger-ui-bundle.js">',
                                                         '<script src="/docs/docs.js">']
    assert re.findall(r'<link rel="stylesheet" href="([^"]+)">', page.text) == ["/docs/swagger-ui.css", "/docs/docs.css"]
    vendored = api_page.vendored_dir()
    assert vendored is not None and (vendored / "swagger-ui-bundle.js").is_file()
    for name, media in api_page.ASSETS.items():
        got = plain.get(f"/docs/{name}")
        assert got.status_code == 200 and got.headers["content-type"] == media
        assert got.content == ((FILES if name in api_page.OWN else vendored) / name).read_bytes()
    assert sorted(p.name for p in FILES.iterdir()) == sorted([api_page.INDEX, *api_page.OWN])
    assert "Apache License" in plain.get("/docs/LICENSE").text  # Swagger UI's, served beside it
    for path in ("/docs", *(f"/docs/{name}" for name in api_page.ASSETS)):
        headers = plain.get(path).headers
        assert headers["content-security-policy"] == CSP
        assert headers["x-content-type-options"] == "nosniff"
    for name in ("api.js", "swagger-ui-bundle.js.map", "swagger-initializer.js", "index.html"):
        missing = plain.get(f"/docs/{name}")  # only the files named: nothing else of the package's directory
        assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
        assert missing.json()["type"] == "/problems/not-found"


def test_the_policy_allows_nothing_inline_and_nothing_from_elsewhere():
    directives = dict(d.strip().split(" ", 1) for d in CSP.split(";"))
    assert "unsafe-inline" not in CSP and "unsafe-eval" not in CSP
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == directives["style-src"] == directives["connect-src"] == "'self'"


def test_the_page_s_own_files_name_no_other_host_and_nothing_inline():
    """The page's own files; Swagger UI's names hosts in its text (links, defaults the page turns off) and the
    browser test (tests/serve/test_pages_browser.py) holds that nothing reaches another host."""
    for path in FILES.iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), path.name
        assert "@import" not in text and "import(" not in text and "eval(" not in text, path.name
    html = (FILES / "index.html").read_text(encoding="utf-8")
    assert re.search(r"<script[^>]*>\s*[^<\s]", html) is None  # no inline script
    assert "<style" not in html and " style=" not in html and not re.search(r"\son[a-z]+=", html)
    script = (FILES / "docs.js").read_text(encoding="utf-8")
    assert re.findall(r"\burl: ([^,]*)", script) == ['"/openapi.json"']  # the one document it reads
    assert "validatorUrl: null" in script  # no badge fetched from the validator's host


def statuses(http: TestClient, **headers) -> dict[str, int]:
    return {path: http.get(path, headers=headers).status_code for path in PUBLIC}


def test_without_keys_the_page_answers_only_this_machine_as_the_document_does(plain):
    assert set(statuses(plain).values()) == {200}
    assert set(statuses(plain, Host="localhost:8080").values()) == {200}
    refused = plain.get("/docs", headers={"Host": "rebound.example"})
    assert refused.status_code == 403 and refused.json()["type"] == "/problems/host-not-allowed"
    assert set(statuses(plain, Host="rebound.example").values()) == {403}


def test_with_keys_the_page_needs_no_key_and_keeps_the_allowed_hosts(tmp_path):
    keys = tmp_path / "keys"
    KeyRing.append(keys, "acme")
    settings = ServeSettings(keys=keys, allowed_hosts=("cleo.example.com",), watch_interval=0)
    with TestClient(create_app(settings), base_url="http://cleo.example.com") as http:
        ready(http)
        assert http.get("/v1/pack").status_code == 401  # the service wants keys...
        assert set(statuses(http).values()) == {200}  # ...the page and the document do not
        assert set(statuses(http, Host="elsewhere.example").values()) == {403}
    with TestClient(create_app(ServeSettings(keys=keys, watch_interval=0)), base_url="http://any.example") as http:
        ready(http)
        assert set(statuses(http).values()) == {200}  # with keys and no --allowed-hosts the Host is not checked
