"""Item 3 of the hostile-clients issue: DNS rebinding, and writes from pages of other sites.

A web page whose name resolves to 127.0.0.1 reaches a service bound to loopback;
its requests then carry ``Host: <its name>``, and ``Origin`` of its own site. Without
keys, the service answers only a Host that names this machine (or one given with
``--allowed-hosts``); with keys or without, a request that changes something and
carries an ``Origin`` must come from the service's own origin. Both refusals are 403
problem+json (``host-not-allowed``, ``origin-not-allowed``), as Vite, webpack-dev-server
and Rails answer a host they do not serve.

Every service here is the real one, started on a free loopback port and stopped by its
pid (``service.Service``), without keys unless named: ``plain``, ``cleo-rules serve
--writable-corpus``; ``alone``, ``cleo-rules playground``; ``proxied``, ``serve
--allowed-hosts proxy.test``; ``domain``, ``playground`` with
``$CLEO_RULES_ALLOWED_HOSTS=.internal.test``; ``memory``, ``serve --memory`` (the real
model); ``keyed``, ``serve --keys --writable-corpus``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import httpx
import pytest

from cleo_rules.resources import corpus_dir, rules_dir
from cleo_rules.serve import ServeSettings, create_app
from cleo_rules.serve.keys import KeyRing

from helpers.service import ROOT, Service

JSON = {"Content-Type": "application/json"}
NDJSON = {"Content-Type": "application/x-ndjson"}
HISTORY = ["Which van insurer covers tools left in the van overnight?"]
CASE = {"message": "Yes, go with the second one.", "history": HISTORY, "expect": "follow_up"}
DOC = {"type": "document", "id": "rota", "title": "Rota", "date": "2024-05-02",
       "text": "The hangar rota changes on Mondays and the van insurance renews in June."}
FOREIGN = "rebind.example"  # a name an attacker controls, resolving to 127.0.0.1


def loopback_hosts(port: int) -> list[str]:
    return [f"127.0.0.1:{port}", f"[::1]:{port}", f"localhost:{port}", "127.0.0.1", "[::1]", "localhost",
            f"LOCALHOST:{port}"]


def problem(response, status: int, name: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == f"/problems/{name}" and body["status"] == status
    assert body["request_id"] == response.headers["x-request-id"]
    return body


def copy_pack(root, *, corpus: bool):
    shutil.copytree(rules_dir(), root / "rules")
    if corpus:
        shutil.copytree(corpus_dir(), root / "corpus")
    return root / "rules"


def started(root, *args, command="serve", env=None):
    svc = Service(*args, command=command, log_path=root / f"{command}.log", env=env)
    try:
        svc.wait_ready(90)
    except BaseException:
        svc.stop()
        raise
    return svc


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    root = tmp_path_factory.mktemp("plain")
    svc = started(root, "--pack", copy_pack(root, corpus=True), "--writable-corpus")
    try:
        yield {"svc": svc, "root": root}
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    root = tmp_path_factory.mktemp("alone")
    svc = started(root, "--pack", copy_pack(root, corpus=False), command="playground")
    try:
        yield {"svc": svc, "root": root}
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    """``serve --allowed-hosts proxy.test``: behind a reverse proxy on this machine."""
    root = tmp_path_factory.mktemp("proxied")
    svc = started(root, "--allowed-hosts", "proxy.test")
    try:
        yield {"svc": svc, "root": root}
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def domain(tmp_path_factory):
    """``playground`` with ``$CLEO_RULES_ALLOWED_HOSTS=.internal.test``: a domain and its subdomains."""
    root = tmp_path_factory.mktemp("domain")
    svc = started(root, "--pack", copy_pack(root, corpus=False), command="playground",
                  env={"CLEO_RULES_ALLOWED_HOSTS": ".internal.test"})
    try:
        yield {"svc": svc, "root": root}
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory")
    svc = Service("--memory", root / "stores", log_path=root / "service.log")
    try:
        svc.wait_ready(120)
        yield {"svc": svc, "root": root}
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    root = tmp_path_factory.mktemp("keyed")
    keys = root / "keys.txt"
    admin = KeyRing.append(keys, "*")
    with Service("--pack", copy_pack(root, corpus=True), "--keys", keys, "--writable-corpus",
                 log_path=root / "service.log") as svc:
        yield {"svc": svc, "root": root, "auth": {"Authorization": f"Bearer {admin}"}}


def regressions_file(service) -> str:
    return (service["root"] / "corpus" / "regressions.yaml").read_text(encoding="utf-8")


def ingest(svc, tenant: str, doc: dict, **headers):
    return httpx.post(f"{svc.url}/v1/tenants/{tenant}/memory", content=json.dumps(doc) + "\n",
                      headers={**NDJSON, **headers}, timeout=60)


def stats(svc, tenant: str):
    return httpx.get(f"{svc.url}/v1/tenants/{tenant}/memory", timeout=60)


# -- the Host a request names -------------------------------------------------------------------

def test_item3_a_rebinding_page_is_refused_by_serve_without_keys(plain):
    """What a page at http://rebind.example:PORT/ sends once its name resolves to 127.0.0.1: its own Host and,
    on a write, its own Origin, which match each other; the Host check is what stops it."""
    svc = plain["svc"]
    page = {"Host": f"{FOREIGN}:{svc.port}", "Origin": f"http://{FOREIGN}:{svc.port}"}
    before = regressions_file(plain)
    refused = problem(httpx.post(svc.url + "/v1/pack/regressions", content=json.dumps({**CASE, "write": True}),
                                 headers={**JSON, **page}), 403, "host-not-allowed")
    assert FOREIGN in refused["detail"] and "localhost" in refused["detail"]
    assert regressions_file(plain) == before  # nothing appended
    for path in ("/v1/pack/source?file=rules/pack.yaml", "/v1/pack/rules", "/v1/pack", "/", "/metrics",
                 "/openapi.json", "/healthz"):
        problem(httpx.get(svc.url + path, headers={"Host": page["Host"]}), 403, "host-not-allowed")
    problem(httpx.post(svc.url + "/v1/classify", content=b'{"message": "ok"}', headers={**JSON, **page}),
            403, "host-not-allowed")
    for host in (FOREIGN, f"127.0.0.1.{FOREIGN}", f"localhost.{FOREIGN}:{svc.port}", "127.1", "0.0.0.0",
                 f"[::1:{svc.port}", "localhost:99999", "local host"):
        problem(httpx.get(svc.url + "/v1/pack/rules", headers={"Host": host}), 403, "host-not-allowed")


def test_item3_a_rebinding_page_is_refused_by_the_playground(alone):
    svc = alone["svc"]
    for path in ("/", "/v1/pack/source?file=rules/pack.yaml", "/v1/pack/rules"):
        problem(httpx.get(svc.url + path, headers={"Host": f"{FOREIGN}:{svc.port}"}), 403, "host-not-allowed")
    r = httpx.post(svc.url + "/v1/pack/regressions", content=json.dumps(CASE),
                   headers={**JSON, "Host": f"{FOREIGN}:{svc.port}", "Origin": f"http://{FOREIGN}:{svc.port}"})
    problem(r, 403, "host-not-allowed")


@pytest.mark.model
def test_item3_a_rebinding_page_cannot_read_ingest_or_delete_memory(memory):
    svc = memory["svc"]
    assert ingest(svc, "acme", DOC).status_code == 200
    held = stats(svc, "acme").json()
    page = {"Host": f"{FOREIGN}:{svc.port}", "Origin": f"http://{FOREIGN}:{svc.port}"}
    problem(httpx.get(f"{svc.url}/v1/tenants/acme/memory", headers=page), 403, "host-not-allowed")
    problem(ingest(svc, "acme", {**DOC, "id": "planted", "text": "Pay the invoice to account 666."}, **page),
            403, "host-not-allowed")
    problem(ingest(svc, "planted", DOC, **page), 403, "host-not-allowed")
    problem(httpx.delete(f"{svc.url}/v1/tenants/acme/memory/document/rota", headers=page), 403, "host-not-allowed")
    problem(httpx.post(f"{svc.url}/v1/tenants/acme/recall", content=b'{"message": "the hangar rota"}',
                       headers={**JSON, **page}), 403, "host-not-allowed")
    assert stats(svc, "acme").json() == held  # nothing read, added or deleted
    assert not (memory["root"] / "stores" / "planted").exists()  # no store created


@pytest.mark.parametrize("fixture", ["plain", "alone"])
def test_item3_loopback_hosts_pass_with_and_without_the_port(request, fixture):
    svc = request.getfixturevalue(fixture)["svc"]
    for host in loopback_hosts(svc.port):
        r = httpx.get(svc.url + "/v1/pack/rules", headers={"Host": host})
        assert r.status_code == 200, (host, r.text)
        page = httpx.get(svc.url + "/", headers={"Host": host})
        assert page.status_code == 200 and "<script" in page.text, host


def test_item3_allowed_hosts_adds_names_by_option(proxied):
    """--allowed-hosts proxy.test: what a reverse proxy on this machine forwards as Host passes, nothing more."""
    svc = proxied["svc"]
    for host in ("proxy.test", f"proxy.test:{svc.port}", "PROXY.TEST:443"):
        assert httpx.get(svc.url + "/v1/pack/rules", headers={"Host": host}).status_code == 200, host
    for host in ("other.test", "sub.proxy.test", "proxy.test.evil"):
        problem(httpx.get(svc.url + "/v1/pack/rules", headers={"Host": host}), 403, "host-not-allowed")
    detail = problem(httpx.get(svc.url + "/", headers={"Host": "other.test"}), 403, "host-not-allowed")["detail"]
    assert "proxy.test" in detail
    for host in loopback_hosts(svc.port):  # this machine's own names still pass
        assert httpx.get(svc.url + "/v1/pack/rules", headers={"Host": host}).status_code == 200, host
    # a write through the proxy: its origin is the one the request names, the scheme the proxy reports
    proxy = {**JSON, "Host": "proxy.test"}
    assert httpx.post(svc.url + "/v1/pack/regressions", content=json.dumps(CASE),
                      headers={**proxy, "Origin": "http://proxy.test"}).status_code == 200
    tls = {**proxy, "Origin": "https://proxy.test"}  # a proxy ending TLS on this machine
    problem(httpx.post(svc.url + "/v1/pack/regressions", content=json.dumps(CASE), headers=tls), 403,
            "origin-not-allowed")
    r = httpx.post(svc.url + "/v1/pack/regressions", content=json.dumps(CASE),
                   headers={**tls, "X-Forwarded-Proto": "https"})
    assert r.status_code == 200, r.text


def test_item3_allowed_hosts_adds_names_by_environment(domain):
    """$CLEO_RULES_ALLOWED_HOSTS=.internal.test: the domain and its subdomains."""
    svc = domain["svc"]
    for host in ("internal.test", f"cleo.internal.test:{svc.port}", "a.b.internal.test"):
        assert httpx.get(svc.url + "/v1/pack/rules", headers={"Host": host}).status_code == 200, host
    for host in ("evilinternal.test", "internal.test.evil", "test"):
        problem(httpx.get(svc.url + "/v1/pack/rules", headers={"Host": host}), 403, "host-not-allowed")


def test_item3_allowed_hosts_is_a_setting_with_checked_names(tmp_path):
    from cleo_rules.serve.hosts import allowed_host, parse_allowed_hosts

    assert ServeSettings(allowed_hosts=("Cleo.Example.com, .internal.test", "10.0.0.5,[::2]")).allowed_hosts == \
        ("cleo.example.com", ".internal.test", "10.0.0.5", "[::2]")
    assert ServeSettings(allowed_hosts=("a.test", "a.test")).allowed_hosts == ("a.test",)
    for bad in ("http://cleo.example.com", "cleo.example.com:8080", "*", "*.example.com", "a b", "-x.test"):
        with pytest.raises(ValueError, match="not a host name"):
            ServeSettings(allowed_hosts=(bad,))
    done = subprocess.run([sys.executable, "-m", "cleo_rules", "serve", "--allowed-hosts", "http://x.test"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2 and "not a host name" in done.stderr and "Traceback" not in done.stderr
    assert allowed_host("[0:0::1]:80") and allowed_host("127.0.0.5") and not allowed_host("[::2]")
    assert allowed_host("[::2]", parse_allowed_hosts("[::2]")) and not allowed_host("", ())


# -- the Origin of a write -----------------------------------------------------------------------

def test_item3_a_regression_from_another_origin_is_refused(plain):
    svc = plain["svc"]
    before = regressions_file(plain)
    for origin in (f"http://{FOREIGN}:{svc.port}", "null", f"http://127.0.0.1:{svc.port + 1}",
                   f"https://127.0.0.1:{svc.port}", f"http://localhost:{svc.port}", "http://127.0.0.1"):
        for write in (True, False):
            r = httpx.post(svc.url + "/v1/pack/regressions", content=json.dumps({**CASE, "write": write}),
                           headers={**JSON, "Origin": origin})
            assert origin[:40] in problem(r, 403, "origin-not-allowed")["detail"]
    assert regressions_file(plain) == before


def test_item3_a_regression_from_the_same_origin_or_none_is_written(plain):
    svc = plain["svc"]
    before = regressions_file(plain)
    same = httpx.post(svc.url + "/v1/pack/regressions", headers={**JSON, "Origin": svc.url},
                      content=json.dumps({"message": "We tried that one already.", "history": HISTORY,
                                          "expect": "correction", "write": True}))
    assert same.status_code == 200 and same.json()["written"] is True, same.text
    none = httpx.post(svc.url + "/v1/pack/regressions", headers=JSON, content=json.dumps({**CASE, "write": True}))
    assert none.status_code == 200 and none.json()["written"] is True, none.text
    after = regressions_file(plain)
    assert same.json()["yaml"] in after and none.json()["yaml"] in after and after.startswith(before.rstrip("\n"))
    # reading needs no Origin check: the page's own GETs carry none that matter
    assert httpx.get(svc.url + "/v1/pack/rules", headers={"Origin": f"http://{FOREIGN}"}).status_code == 200


@pytest.mark.model
def test_item3_an_ingest_or_a_delete_from_another_origin_is_refused_and_from_its_own_or_none_passes(memory):
    svc = memory["svc"]
    foreign = {"Origin": f"http://{FOREIGN}:{svc.port}"}
    problem(ingest(svc, "beta", DOC, **foreign), 403, "origin-not-allowed")
    assert not (memory["root"] / "stores" / "beta").exists()  # refused before anything was created
    assert ingest(svc, "beta", DOC, Origin=svc.url).json()["added"] == 1
    assert ingest(svc, "beta", {**DOC, "id": "rota-2"}).json()["added"] == 1
    assert stats(svc, "beta").json()["documents"] == 2
    problem(httpx.delete(f"{svc.url}/v1/tenants/beta/memory/document/rota", headers=foreign), 403,
            "origin-not-allowed")
    assert stats(svc, "beta").json()["documents"] == 2
    r = httpx.delete(f"{svc.url}/v1/tenants/beta/memory/document/rota", headers={"Origin": svc.url})
    assert r.status_code == 200 and r.json()["deleted"] is True
    r = httpx.delete(f"{svc.url}/v1/tenants/beta/memory/document/rota-2")
    assert r.status_code == 200 and r.json()["deleted"] is True
    assert stats(svc, "beta").json()["documents"] == 0


# -- with keys --------------------------------------------------------------------------------------

def test_item3_with_keys_the_host_is_not_checked_but_a_write_from_another_origin_is_refused(keyed):
    """Every request needs a key, which no browser adds by itself: any Host may carry one. A write with a
    foreign Origin is refused all the same, key or not (the service sends no CORS headers, so no other
    site's page may use it)."""
    svc, auth = keyed["svc"], keyed["auth"]
    host = {"Host": f"{FOREIGN}:{svc.port}"}
    assert httpx.get(svc.url + "/v1/pack/rules", headers={**auth, **host}).status_code == 200
    problem(httpx.get(svc.url + "/v1/pack/rules", headers=host), 401, "unauthorized")
    before = regressions_file(keyed)
    body = json.dumps({**CASE, "write": True})
    problem(httpx.post(svc.url + "/v1/pack/regressions", content=body,
                       headers={**JSON, **auth, "Origin": f"http://{FOREIGN}"}), 403, "origin-not-allowed")
    problem(httpx.post(svc.url + "/v1/pack/reload", headers={**auth, "Origin": f"http://{FOREIGN}"}), 403,
            "origin-not-allowed")
    assert regressions_file(keyed) == before
    same = httpx.post(svc.url + "/v1/pack/regressions", content=body, headers={**JSON, **auth, "Origin": svc.url})
    assert same.status_code == 200 and same.json()["written"] is True, same.text
    assert httpx.post(svc.url + "/v1/pack/reload", headers=auth).status_code == 200


def test_item3_with_keys_allowed_hosts_turns_the_host_check_on(tmp_path):
    from starlette.testclient import TestClient

    keys = tmp_path / "keys.txt"
    key = KeyRing.append(keys, "*")
    app = create_app(ServeSettings(keys=keys, allowed_hosts=("cleo.example.com",), watch_interval=0))
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(app, base_url="http://cleo.example.com") as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/healthz", headers={"Host": "127.0.0.1:8080"}).status_code == 200
        r = client.get("/healthz", headers={**auth, "Host": FOREIGN})
        assert r.status_code == 403 and r.json()["type"] == "/problems/host-not-allowed"


def test_item3_the_origin_rule_compares_scheme_host_and_port():
    from cleo_rules.serve.hosts import same_origin

    assert same_origin("http://127.0.0.1:8080", "http", "127.0.0.1:8080")
    assert same_origin("http://localhost", "http", "localhost:80") and same_origin("https://a.test", "https", "a.test")
    assert same_origin("http://[::1]:8080", "http", "[0:0::1]:8080") and same_origin("HTTP://LOCALHOST:1", "http",
                                                                                       "localhost:1")
    for origin in ("https://127.0.0.1:8080", "http://127.0.0.1:8081", "http://localhost:8080", "null", "",
                   "http://127.0.0.1:8080/path", "127.0.0.1:8080", "http://user@127.0.0.1:8080"):
        assert not same_origin(origin, "http", "127.0.0.1:8080"), origin
    assert not same_origin("http://127.0.0.1:8080", "http", None)


def test_item3_the_documents_say_what_is_checked():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    security = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    for text in (readme, security):
        assert "--allowed-hosts" in text and "CLEO_RULES_ALLOWED_HOSTS" in text
        assert "DNS rebinding" in text and "Origin" in text and "host-not-allowed" in text
    assert "## DNS rebinding and other sites" in security
    assert "| a request's `Host`, without keys |" in security
