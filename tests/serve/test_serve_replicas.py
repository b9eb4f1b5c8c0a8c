"""Two replicas of the service on one PostgreSQL and one pack directory, as the README's scaling section runs them.

Two ``cleo-rules serve`` processes on loopback, each stopped by its pid, share
a private database (in the session's ``pgserver``), a team pack copied into
the test's directory and one key file. What one replica writes, the other
reads; a pack edit on disk and a key removed from the file reach both through
their own watching; a broken pack is refused by both, each still serving the
last good one. The memory is per tenant, so each test works in tenants of its
own.
"""

from __future__ import annotations

import json
import os
import shutil
from functools import partial
from pathlib import Path

import httpx
import pytest

from cleo_rules.serve.keys import KeyRing

from helpers import MINI
from helpers.service import Service, metric, eventually as eventually_within

pytestmark = pytest.mark.model

JSON = {"Content-Type": "application/json"}
NDJSON = {"Content-Type": "application/x-ndjson"}
HISTORY = ["Which van insurer should we use?"]
NOD = "Perfect, that works."  # substantive in the mini pack; a nod once "perfect" joins its vocabulary
QUESTION = "What is the zebra hangar door code?"
DOCS = [
    {"type": "document", "id": "hangar", "title": "Hangar access", "date": "2024-05-01",
     "text": "The zebra hangar door code is QX4471; it changes every spring."},
    {"type": "document", "id": "rota", "title": "Rota", "date": "2024-05-02",
     "text": "The boiler service is booked for the first Monday of each month."},
]


def ndjson(docs) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in docs).encode()


def replace(path: Path, text: str) -> None:
    """Write ``path`` whole, as an editor saving by rename does: a watcher never reads half of it."""
    tmp = path.with_name(path.name + ".saving")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


eventually = partial(eventually_within, timeout=20.0)


class Replica:
    """One running service, seen through one key."""

    def __init__(self, svc: Service, key: str):
        self.svc = svc
        self.http = httpx.Client(base_url=svc.url, timeout=60, headers={"Authorization": f"Bearer {key}"})

    def turn(self, tenant: str, message: str, history=()):
        return self.http.post(f"/v1/tenants/{tenant}/turns", headers=JSON,
                              content=json.dumps({"message": message, "history": list(history), "k": 3}))

    def recalled(self, tenant: str, message: str = QUESTION) -> set[str]:
        r = self.turn(tenant, message)
        assert r.status_code == 200, r.text
        return {x["id"] for x in r.json()["results"]}

    def classify(self, message: str, history=HISTORY, key: str | None = None):
        headers = {**JSON, **({"Authorization": f"Bearer {key}"} if key is not None else {})}
        return self.http.post("/v1/classify", content=json.dumps({"message": message, "history": history}),
                              headers=headers)


@pytest.fixture(scope="module")
def replicas(pg, tmp_path_factory):
    """Two services on one database of their own, one pack directory and one key file; the keys by name."""
    name = f"replicas_{os.getpid()}"
    with pg.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg.base.replace("/postgres?", f"/{name}?", 1)
    root = tmp_path_factory.mktemp("replicas")
    pack = root / "pack"
    shutil.copytree(MINI, pack)
    keys = root / "keys.txt"
    tokens = {t: KeyRing.append(keys, t) for t in ("*", "acme,beta,gamma", "delta")}
    args = ("--memory", url, "--pack", pack, "--keys", keys, "--watch-interval", "0.1")
    services = [Service(*args, log_path=root / f"replica-{n}.log") for n in (1, 2)]  # both start at once
    try:
        for svc in services:
            svc.wait_ready(120)
        admin = [Replica(svc, tokens["*"]) for svc in services]
        yield {"url": url, "pack": pack, "keys": keys, "tokens": tokens, "services": services, "admin": admin,
               "users": [Replica(svc, tokens["acme,beta,gamma"]) for svc in services]}
        for replica in admin:
            replica.http.close()
    finally:
        for svc in services:
            svc.stop()
        with pg.admin() as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_the_replicas_are_two_processes_on_one_database(replicas):
    one, two = replicas["services"]
    assert one.pid != two.pid and one.port != two.port
    ready = [httpx.get(svc.url + "/readyz", headers={"Authorization": f"Bearer {replicas['tokens']['*']}"}).json()
             for svc in (one, two)]
    assert all(r["ready"] is True and r["memory"] is True and r["model"] == "warm" for r in ready), ready
    assert ready[0]["pack"]["path"] == ready[1]["pack"]["path"] == str(replicas["pack"])
    assert ready[0]["pack"]["hash"] == ready[1]["pack"]["hash"]


def test_a_document_ingested_through_one_replica_is_recalled_by_a_turn_on_the_other(replicas):
    one, two = replicas["users"]
    # before the ingest the tenant has no store on either: 404, and nothing is created by asking
    assert two.turn("acme", QUESTION).status_code == 404
    ingested = one.http.post("/v1/tenants/acme/memory", content=ndjson(DOCS), headers=NDJSON)
    assert ingested.status_code == 200 and ingested.json()["added"] == 2, ingested.text
    # the other replica finds the tenant it was told had no store, and recalls what was ingested
    assert "hangar" in two.recalled("acme")
    stats = two.http.get("/v1/tenants/acme/memory").json()
    assert stats["documents"] == 2
    # and the other way round, with both stores now open
    more = {"type": "document", "id": "ferry", "title": "Ferry", "date": "2024-06-01",
            "text": "The zebra hangar ferry leaves at dawn with the spare door code cards."}
    assert two.http.post("/v1/tenants/acme/memory", content=ndjson([more]), headers=NDJSON).json()["added"] == 1
    assert "ferry" in one.recalled("acme")
    assert one.http.get("/v1/tenants/acme/memory").json()["documents"] == 3


def test_a_delete_through_one_replica_is_gone_on_the_other(replicas):
    one, two = replicas["users"]
    assert one.http.post("/v1/tenants/beta/memory", content=ndjson(DOCS), headers=NDJSON).status_code == 200
    assert "hangar" in two.recalled("beta")  # the other replica's store is open, and it holds the document
    gone = one.http.delete("/v1/tenants/beta/memory/document/hangar")
    assert gone.status_code == 200 and gone.json()["deleted"] is True
    assert "hangar" not in two.recalled("beta")
    assert two.http.get("/v1/tenants/beta/memory").json()["documents"] == 1
    again = two.http.delete("/v1/tenants/beta/memory/document/hangar")  # already gone, whichever replica asks
    assert again.status_code == 404 and again.headers["content-type"] == "application/problem+json"


def test_a_pack_edit_is_served_by_both_and_a_broken_pack_is_refused_by_both(replicas):
    admin, pack = replicas["admin"], replicas["pack"]
    first = [r.http.get("/v1/pack").json() for r in admin]
    assert first[0]["hash"] == first[1]["hash"]
    for r in admin:
        assert r.classify(NOD).json()["kind"] == "substantive"

    vocabulary = pack / "vocabulary.yaml"
    good = vocabulary.read_text(encoding="utf-8")
    assert "fine, works]" in good
    replace(vocabulary, good.replace("fine, works]", "fine, works, perfect]", 1))
    served = [eventually(lambda r=r: (d := r.classify(NOD).json())["kind"] == "follow_up" and d) for r in admin]
    assert served[0]["rule"] == served[1]["rule"] == "vocab.nod"
    assert served[0]["pack_hash"] == served[1]["pack_hash"] != first[0]["hash"]
    edited = served[0]["pack_hash"]
    for r in admin:
        status = r.http.get("/v1/pack").json()
        assert status["hash"] == edited and status["reloads"] == first[0]["reloads"] + 1

    # a broken save: each replica refuses it on its own and keeps serving the edited pack
    rejections = [r.http.get("/v1/pack").json()["rejections"] for r in admin]
    replace(vocabulary, good.replace("words: [first, second,", "words: [first, second,]]", 1))
    for r, before in zip(admin, rejections):
        status = eventually(lambda r=r, before=before: (s := r.http.get("/v1/pack").json())["rejections"] > before
                            and s)
        assert status["hash"] == edited and "vocabulary.yaml" in status["last_error"]
        still = r.classify(NOD)
        assert still.status_code == 200 and (still.json()["kind"], still.json()["pack_hash"]) == ("follow_up", edited)
        refused = r.http.post("/v1/pack/reload")  # asked outright, the answer is the same
        assert refused.status_code == 422 and refused.json()["serving"]["hash"] == edited
        assert metric(r.http.get("/metrics").text, "cleo_pack_rejections_total") >= 2

    # mended: both serve the pack as first copied
    replace(vocabulary, good)
    for r in admin:
        eventually(lambda r=r: r.classify(NOD).json()["pack_hash"] == first[0]["hash"])
        assert r.http.get("/v1/pack").json()["last_error"] is None


def test_a_key_removed_from_the_key_file_is_refused_by_both(replicas):
    keys, tokens, services = replicas["keys"], replicas["tokens"], replicas["services"]
    gone, kept = tokens["delta"], tokens["acme,beta,gamma"]
    probes = [Replica(svc, kept) for svc in services]
    try:
        for r in probes:
            assert r.classify("Which boiler service plan did we choose?", key=gone).status_code == 200
        lines = keys.read_text(encoding="utf-8").splitlines(keepends=True)
        remaining = [line for line in lines if " delta" not in line]
        assert len(remaining) == len(lines) - 1
        replace(keys, "".join(remaining))
        for r in probes:
            refused = eventually(lambda r=r: (x := r.classify("Which boiler plan?", key=gone)).status_code == 401 and x)
            assert refused.headers["content-type"] == "application/problem+json"
            assert refused.json()["type"] == "/problems/unauthorized"
            # the keys still in the file still work, on both
            assert r.classify("Which boiler service plan did we choose?").status_code == 200
            assert r.http.post("/v1/tenants/delta/turns", headers=JSON,
                               content=json.dumps({"message": QUESTION})).status_code == 403
    finally:
        for r in probes:
            r.http.close()
