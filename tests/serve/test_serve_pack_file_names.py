"""Paths to operators only, file names too (issue 30, item 3): a key for some tenants learns no server path.

The loader names a pack's files relative to the working directory when they
lie inside it, else by their whole path (a pack installed with pip: through
``site-packages``). To a key that does not cover every tenant, every file the
service names is named from the pack it belongs to instead
(``<pack team>/corrections.yaml``, ``<base pack mini>/follow_ups.yaml``), and
``GET /v1/pack/source`` takes exactly those names; an operator (no keys, or a
key for every tenant) keeps the real paths. One function decides it:
:meth:`cleo_rules.serve.service.Service.shows_paths`.

Each service here runs from a working directory of its own, so the team pack,
its base in a ``site-packages`` directory and the bundled ``cleo-en`` all lie
outside it and any path of theirs would be named whole.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from cleo_rules.resources import rules_dir
from cleo_rules.serve import ServeSettings, create_app
from cleo_rules.serve.keys import KeyRing
from helpers import MINI
from helpers.compose import OUT_OF_STOCK, write_team

BROKEN = "\nthis: [not yaml\n"


def _bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def _on_installed_base(root: Path) -> Path:
    """A team pack (one correction of its own) built on ``mini`` installed in a ``site-packages`` directory."""
    from cleo_rules.corpus import build_corpus
    from cleo_rules.pack.compile import compile_pack

    base = root / "lib" / "python3.11" / "site-packages" / "shared_pack" / "rules"
    shutil.copytree(MINI, base)
    team = root / "team"
    (team / "rules").mkdir(parents=True)
    (team / "corpus").mkdir()
    (team / "rules" / "pack.yaml").write_text(f"pack: team\nversion: 0.1.0\nlocale: en\nextends: "
                                              f"[{json.dumps(str(base))}]\nfiles: [corrections.yaml]\n",
                                              encoding="utf-8")
    (team / "rules" / "corrections.yaml").write_text(OUT_OF_STOCK, encoding="utf-8")
    (team / "corpus" / "regressions.yaml").write_text("kind: corpus\ncases: []\n", encoding="utf-8")
    build_corpus(compile_pack(team / "rules"), team / "corpus")
    return team / "rules"


LAYOUTS = {"installed-base": (_on_installed_base, "mini"),
           "bundled-base": (lambda root: write_team(root / "team"), "cleo-en")}


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def served(request, tmp_path_factory):
    """A keyed service, run from a working directory of its own, serving a team pack built on a base: one key for
    tenant acme, one for every tenant."""
    make, base_name = LAYOUTS[request.param]
    root = tmp_path_factory.mktemp("names")
    elsewhere = tmp_path_factory.mktemp("cwd")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(elsewhere)
        rules = make(root)
        keys = root / "keys"
        tokens = {"acme": KeyRing.append(keys, "acme"), "*": KeyRing.append(keys, "*")}
        settings = ServeSettings(pack=str(rules), keys=keys, watch_interval=0, writable_pack=True,
                                 writable_corpus=True)
        app = create_app(settings)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            deadline = time.monotonic() + 120
            while client.get("/readyz").status_code != 200:  # the pack is judged first
                assert time.monotonic() < deadline, "not ready in 120 s"
                time.sleep(0.05)
            base_dir = app.state.service.packs.pack.composition.bases[0].path
            yield {"client": client, "app": app, "root": root, "rules": rules, "tokens": tokens,
                   "base": base_name, "base_dir": Path(base_dir)}


def _secrets(served) -> list[str]:
    """What no answer to a tenant's key may hold: the directories of the packs (as given and resolved), any
    site-packages, the bundled pack's directory."""
    dirs = (served["root"], served["rules"], served["base_dir"], rules_dir())
    return sorted({str(d) for d in dirs} | {str(Path(d).resolve()) for d in dirs} | {"site-packages"})


def test_issue30_item3_paths_to_operators_only_rules_and_source(served):
    client, tokens, base = served["client"], served["tokens"], served["base"]
    rules = client.get("/v1/pack/rules", headers=_bearer(tokens["acme"]))
    assert rules.status_code == 200, rules.text
    for secret in _secrets(served):
        assert secret not in rules.text
    by_id = {r["id"]: r for r in rules.json()["rules"]}
    assert by_id["correction.out-of-stock"]["file"] == "<pack team>/corrections.yaml"
    assert {r["file"].split("/")[0] for r in by_id.values() if r["pack"] == base} == {f"<base pack {base}>"}
    real = {r.file: r for r in (*served["app"].state.service.packs.pack.rules,)}
    for rule in by_id.values():  # every name is served by the source endpoint, as the file it names
        source = client.get("/v1/pack/source", params={"file": rule["file"]}, headers=_bearer(tokens["acme"]))
        assert source.status_code == 200 and source.json()["file"] == rule["file"], source.text
        lines = source.json()["lines"]
        assert lines[rule["line"] - 1].strip() == f"- id: {rule['id']}"
        for secret in _secrets(served):
            assert secret not in source.text
    manifest = client.get("/v1/pack/source", params={"file": f"<base pack {base}>/pack.yaml"},
                          headers=_bearer(tokens["acme"]))
    assert manifest.status_code == 200 and f"pack: {base}" in manifest.json()["lines"]

    # an operator sees the real paths, and the source endpoint takes those from it
    whole = client.get("/v1/pack/rules", headers=_bearer(tokens["*"])).json()["rules"]
    own = next(r for r in whole if r["id"] == "correction.out-of-stock")
    assert own["file"] == str(served["rules"] / "corrections.yaml") and own["file"] in real
    assert client.get("/v1/pack/source", params={"file": own["file"]},
                      headers=_bearer(tokens["*"])).status_code == 200
    # ... and each key only the names it was given
    for name, key in ((own["file"], "acme"), ("<pack team>/corrections.yaml", "*")):
        refused = client.get("/v1/pack/source", params={"file": name}, headers=_bearer(tokens[key]))
        assert refused.status_code == 404 and refused.json()["type"].endswith("/not-found")
        if key == "acme":  # the name asked for is quoted back; nothing else of the server's
            for secret in _secrets(served):
                assert secret not in refused.text.replace(json.dumps(name)[1:-1], "")


HOSTILE_NAMES = ["<pack team>/../corpus/regressions.yaml", "<pack team>/../../keys", "<pack team>/../../../etc/passwd",
                 "<base pack {base}>/../../../../../../etc/passwd", "<pack team>/lexicon.yaml", "<pack team>",
                 "<pack team>/", "/etc/passwd", "corrections.yaml", "<pack team>/corrections.yaml\x00",
                 "<pack team>//corrections.yaml", "<pack team>/./corrections.yaml", "<base pack team>/corrections.yaml",
                 "<pack team>/" + "a/" * 2500]


def test_issue30_item3_paths_to_operators_only_the_source_refuses_every_other_name(served):
    client, tokens = served["client"], served["tokens"]
    for name in HOSTILE_NAMES:
        name = name.format(base=served["base"])
        r = client.get("/v1/pack/source", params={"file": name}, headers=_bearer(tokens["acme"]))
        assert r.status_code == 404 and r.json()["type"].endswith("/not-found"), (name[:80], r.text[:300])
        for secret in _secrets(served):
            assert secret not in r.text


def _requests(base: str) -> list[tuple[str, str, dict]]:
    """A request to every endpoint: ``(method, path, keyword arguments)``."""
    turn = {"message": "Tell me more.", "history": ["What is a van?"]}
    return [
        ("GET", "/healthz", {}), ("GET", "/readyz", {}), ("GET", "/metrics", {}), ("GET", "/openapi.json", {}),
        ("GET", "/docs", {}), ("GET", "/docs/api.js", {}), ("GET", "/problems/not-found", {}),
        ("GET", "/problems/nothing", {}), ("GET", "/", {}), ("GET", "/playground/playground.js", {}),
        ("GET", "/playground/nothing.js", {}),
        ("POST", "/v1/classify", {"json": turn}), ("POST", "/v1/classify", {"json": {"message": 5}}),
        ("POST", "/v1/classify/batch", {"json": {"items": [turn, {"message": None}]}}),
        ("POST", "/v1/explain", {"json": {"message": "That one is out of stock.", "history": ["Which van?"]}}),
        ("POST", "/v1/explain", {"json": turn}),
        ("GET", "/v1/pack", {}), ("POST", "/v1/pack/reload", {}), ("GET", "/v1/pack/rules", {}),
        ("GET", "/v1/pack/source", {"params": {"file": "<pack team>/corrections.yaml"}}),
        ("GET", "/v1/pack/source", {"params": {"file": f"<base pack {base}>/pack.yaml"}}),
        ("GET", "/v1/pack/source", {"params": {"file": "nothing.yaml"}}), ("GET", "/v1/pack/source", {}),
        ("POST", "/v1/pack/regressions", {"json": {**turn, "expect": "follow_up"}}),
        ("POST", "/v1/pack/regressions", {"json": {**turn, "expect": "follow_up", "write": True}}),
        ("GET", "/v1/pack/files", {}), ("GET", "/v1/pack/file", {"params": {"file": "corrections.yaml"}}),
        ("PUT", "/v1/pack/file", {"params": {"file": "corrections.yaml"}, "content": b"kind: corrections\n",
                                  "headers": {"Content-Type": "text/plain"}}),
        ("POST", "/v1/tenants/acme/turns", {"json": turn}), ("POST", "/v1/tenants/acme/recall", {"json": turn}),
        ("POST", "/v1/tenants/acme/memory", {"content": b"{}\n", "headers": {"Content-Type": "application/jsonl"}}),
        ("GET", "/v1/tenants/acme/memory", {}), ("DELETE", "/v1/tenants/acme/memory/documents/x", {}),
    ]


def _not_called(app, requests) -> list[str]:
    """The app's endpoints that none of ``requests`` reaches."""
    return [f"{method} {route.path}" for route in app.routes if isinstance(route, Route)
            for method in sorted(route.methods or ()) if method != "HEAD"
            and not any(m == method and route.path_regex.match(p.split("?")[0]) for m, p, _ in requests)]


def _sweep(served) -> int:
    """Every endpoint, called with the tenant's key: the number of answers; none names where the packs lie."""
    client, tokens = served["client"], served["tokens"]
    called = 0
    for method, path, kwargs in _requests(served["base"]):
        headers = {**kwargs.pop("headers", {}), **_bearer(tokens["acme"])} if "headers" in kwargs else \
            _bearer(tokens["acme"])
        r = client.request(method, path, headers=headers, **kwargs)
        assert r.status_code < 500 or r.status_code == 503, (method, path, r.status_code, r.text[:300])
        for secret in _secrets(served):
            assert secret not in r.text, (method, path, secret, r.text[:300])
        called += 1
    return called


def test_issue30_item3_paths_to_operators_only_no_endpoint_names_them_to_a_tenant_key(served):
    app = served["app"]
    assert _not_called(app, _requests(served["base"])) == []
    assert _sweep(served) == len(_requests(served["base"]))
    # and so while a refused edit on disk is what the pack's status reports
    corrections = served["rules"] / "corrections.yaml"
    good = corrections.read_text(encoding="utf-8")
    try:
        corrections.write_text(good + BROKEN, encoding="utf-8")
        reload = served["client"].post("/v1/pack/reload", headers=_bearer(served["tokens"]["*"]))
        assert reload.status_code == 422, reload.text
        assert _sweep(served) == len(_requests(served["base"]))
    finally:
        corrections.write_text(good, encoding="utf-8")
        assert served["client"].post("/v1/pack/reload", headers=_bearer(served["tokens"]["*"])).status_code == 200

