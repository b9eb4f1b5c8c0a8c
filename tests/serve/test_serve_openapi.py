"""The OpenAPI document is the one recorded in ``tests/data/serve-openapi.json``, path by path.

The record was taken before the endpoints moved into modules, so moving
code cannot change the API unnoticed. A change that is meant rewrites it:
``PYTHONPATH=tests .venv/bin/python tests/serve/test_serve_openapi.py --write``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from cleo_rules.serve import ServeSettings, create_app, openapi

from helpers import DATA

RECORD = DATA / "serve-openapi.json"
SMALL: dict[str, Any] = {"max_message_chars": 200, "max_history": 4, "max_batch": 5, "max_k": 20, "default_k": 3}
#: name -> (settings, whether the service has keys)
VARIANTS = {
    "default": (ServeSettings(), False),
    "keys": (ServeSettings(), True),
    "keys_hosts_limits": (ServeSettings(allowed_hosts=("cleo.example.com",), **SMALL), True),
}


def built(name: str) -> dict:
    settings, keys = VARIANTS[name]
    document = openapi.document(settings, keys=keys)
    document["info"].pop("version")  # the package's version, not the API
    return document


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads(RECORD.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_path_is_as_recorded(record, name):
    document, recorded = built(name), record[name]
    assert sorted(document["paths"]) == sorted(recorded["paths"]) and len(recorded["paths"]) == 23
    for path, operations in recorded["paths"].items():
        assert document["paths"][path] == operations, path
    assert document == recorded  # components, security schemes and the description too


def test_the_service_serves_the_recorded_document(record, tmp_path):
    from starlette.testclient import TestClient

    from cleo_rules.serve.keys import KeyRing

    keys = tmp_path / "keys"
    KeyRing.append(keys, "*")
    settings = ServeSettings(keys=keys, allowed_hosts=("cleo.example.com",), watch_interval=0, **SMALL)
    with TestClient(create_app(settings), base_url="http://cleo.example.com") as client:
        served = client.get("/openapi.json").json()  # public: no key needed
    served["info"].pop("version")
    assert served == record["keys_hosts_limits"]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.write_text(json.dumps({name: built(name) for name in VARIANTS}, indent=1, sort_keys=True,
                                 ensure_ascii=False), encoding="utf-8")
    print(f"wrote {RECORD}")
