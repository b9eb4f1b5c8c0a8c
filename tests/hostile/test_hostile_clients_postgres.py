"""Hostile clients of the PostgreSQL memory: tenants whose names collide, and NUL characters.

Item 2: a tenant named like the shortened schema of a longer name read and
deleted that tenant's memory. Schema names are now injective (a long name
gets a form no valid name can take), every schema records its tenant, a
schema recording another tenant (or none, where its name cannot say whose it
is) is refused, and ``cleo-rules memory tenants`` lists and resolves them.

Item 7: a NUL character (U+0000) lost a whole PostgreSQL ingest batch and
silently lost a turn's trace. It is now one line's error on both backends,
and traced text keeps U+FFFD in its place.

Each test uses a fresh database of the session's private server
(``fresh_db``), so the named pair can be used as it is, and the operator's
listing sees only the test's schemas.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from urllib.parse import quote as urlquote

import httpx
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules.cli import main
from cleo_rules.errors import IngestError, StoreError
from cleo_rules.retrieval.locate import open_memory
from cleo_rules.retrieval.pg_schema import quote, schema_name
from cleo_rules.retrieval.postgres import PgStore
from cleo_rules.serve.keys import KeyRing
from cleo_rules.trace import read_traces
from cleo_rules.turn import Recall

from helpers.embedders import ToyEmbedder
from helpers.service import Service

LONG = "acme-corporation-international-holdings-emea-division-0001xx"
CRAFTED = "acme-corporation-international-holdings-emea-_6765bc9c0902"
"""The named pair: ``CRAFTED`` is what the earlier code cut ``LONG``'s schema name to, and a valid name itself."""

SECRET = "The merger code word is FALCON and the closing date is the ninth"
NDJSON = {"Content-Type": "application/x-ndjson"}
_databases = iter(range(1, 1_000_000))


def test_the_pair_is_the_collision_the_issue_names():
    assert len(LONG) == 60 and len(CRAFTED) == 58
    assert CRAFTED == LONG[:45] + "_" + hashlib.sha256(LONG.encode()).hexdigest()[:12]


@pytest.fixture
def fresh_db(pg):
    """The URL of a new, empty database in the session's server (``?tenant=`` appended by the test)."""
    name = f"hostile_{os.getpid()}_{next(_databases)}"
    with pg.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = pg.base.replace("/postgres?", f"/{name}?", 1)
    assert base != pg.base
    yield base
    with pg.admin() as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def at(base: str, tenant: str) -> str:
    return f"{base}&tenant={tenant}"


def admin(base: str):
    return psycopg.connect(base, autocommit=True)


def open_store(base: str, tenant: str, **options) -> PgStore:
    return PgStore.open(at(base, tenant), ToyEmbedder(), **options)


def schemas(base: str) -> list[str]:
    with admin(base) as conn:
        return [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'cleo%' "
                                           "ORDER BY 1").fetchall()]


def owner_row(base: str, schema: str):
    with admin(base) as conn:
        row = conn.execute(f"SELECT value FROM {quote(schema)}.meta WHERE key = 'tenant'").fetchone()
    return row[0] if row else None


def cli(capsys, *argv) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return info.value.code or 0, out, err


# -- item 2: the named pair ------------------------------------------------------------------------


def test_item2_the_named_pair_never_read_or_delete_each_others_memory(fresh_db):
    with open_store(fresh_db, LONG) as owner:
        owner.add_document("merger", "Board minutes", "2024-03-01", SECRET)
    with open_store(fresh_db, CRAFTED) as other:
        assert other.stats()["documents"] == 0
        assert other.get(["merger#p0"]) == {}
        assert other.search("merger code word FALCON closing date", k=5).results == ()
        assert other.delete_document("merger") is False
        other.add_document("own", "Own note", "2024-03-02", "a note of the crafted tenant about FALCON")
    with open_store(fresh_db, LONG, read_only=True) as owner:
        assert [r.id for r in owner.search("merger code word FALCON", k=5).results] == ["merger"]
        assert owner.stats()["documents"] == 1 and owner.get(["own#p0"]) == {}
    assert schema_name(LONG) != schema_name(CRAFTED)
    assert schemas(fresh_db) == sorted([schema_name(LONG), schema_name(CRAFTED)])
    # each schema records the tenant that owns it
    assert owner_row(fresh_db, schema_name(LONG)) == LONG
    assert owner_row(fresh_db, schema_name(CRAFTED)) == CRAFTED


def test_item2_the_long_name_gets_a_form_no_tenant_name_can_take():
    from cleo_rules.retrieval.pg_schema_names import MARK, TENANT_PATTERN, legacy_schema_name, tenant_of

    long_schema = schema_name(LONG)
    assert len(long_schema.encode()) <= 63 and MARK in long_schema and MARK not in TENANT_PATTERN.pattern
    assert long_schema.startswith("cleo_acme-corporation-international")  # an operator still reads whose it is
    assert schema_name(CRAFTED) == "cleo_" + CRAFTED == legacy_schema_name(LONG)
    assert tenant_of(long_schema) == LONG and tenant_of(schema_name(CRAFTED)) == CRAFTED
    for not_a_tenants in ("cleo_", "cleo_Acme", "public", "cleo_acme~", "cleo_acme~0", "cleo_acme~01", "cleo_~Z"):
        assert tenant_of(not_a_tenants) is None, not_a_tenants
    with pytest.raises(ValueError, match="not a tenant name"):
        schema_name("Acme")


_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_-"
_names = st.builds(lambda first, rest: first + rest, st.sampled_from(_NAME_CHARS[:36]),
                   st.text(_NAME_CHARS, max_size=62))
_long_names = st.builds(lambda first, rest: first + rest, st.sampled_from(_NAME_CHARS[:36]),
                        st.text(_NAME_CHARS, min_size=58, max_size=62))


def _crafted(long_name: str) -> str:
    """The valid short name the earlier code cut ``long_name``'s schema to (the attack's form)."""
    return long_name[:45] + "_" + hashlib.sha256(long_name.encode()).hexdigest()[:12]


@settings(max_examples=300, deadline=None)
@given(st.lists(_names | _long_names, min_size=1, max_size=12, unique=True), _long_names)
def test_item2_the_tenant_to_schema_mapping_is_injective(names, long_name):
    """Over generated names, long ones, and names crafted like the shortened form: no two share a schema."""
    from cleo_rules.retrieval.pg_schema_names import tenant_of
    from cleo_rules.retrieval.pg_owners import refusal

    crafted = _crafted(long_name)
    everyone = list(dict.fromkeys([*names, long_name, crafted]))
    made = [schema_name(n) for n in everyone]
    assert len(set(made)) == len(everyone)
    assert schema_name(long_name) != schema_name(crafted)
    for name, schema in zip(everyone, made):
        assert len(schema.encode()) <= 63 and schema.startswith("cleo_")
        assert tenant_of(schema) == name  # the schema gives its tenant back: injective by construction
        assert refusal("here", schema, name, name) is None  # a schema recording its own tenant opens
        other = next(n for n in everyone if n != name)  # the long name and its crafted one always differ
        assert refusal("here", schema, name, other) is not None
    # the crafted name's schema, made by the earlier code and recording nobody, opens for neither
    assert refusal("here", schema_name(crafted), crafted, None) is not None


# -- item 2: schemas made before owners were recorded ----------------------------------------------


def _forget_owner(base: str, schema: str) -> None:
    """Make ``schema`` look like one made by the earlier code: no owner recorded."""
    with admin(base) as conn:
        conn.execute(f"DELETE FROM {quote(schema)}.meta WHERE key = 'tenant'")


def test_item2_an_old_schema_whose_name_is_one_tenants_is_adopted(fresh_db):
    with open_store(fresh_db, "acme") as store:
        store.add_document("d1", "Note", "2024-01-01", "boiler service booked")
    _forget_owner(fresh_db, "cleo_acme")
    with open_store(fresh_db, "acme", read_only=True) as store:  # reads it, writes nothing
        assert store.stats()["documents"] == 1
    assert owner_row(fresh_db, "cleo_acme") is None
    with open_store(fresh_db, "acme", create=False) as store:  # the first open for writing records it
        assert store.stats()["documents"] == 1
    assert owner_row(fresh_db, "cleo_acme") == "acme"


def _old_code_store_of(base: str, long_name: str) -> str:
    """What the earlier code left for ``long_name``: its items in the cut schema, no owner recorded."""
    from cleo_rules.retrieval.pg_schema_names import legacy_schema_name, tenant_of

    old = legacy_schema_name(long_name)
    with open_store(base, tenant_of(old)) as store:  # the same schema the earlier code made for the long name
        store.add_document("merger", "Board minutes", "2024-03-01", SECRET)
    _forget_owner(base, old)
    return old


def test_item2_an_ambiguous_old_schema_is_refused_until_an_operator_says_whose(fresh_db, capsys):
    old = _old_code_store_of(fresh_db, LONG)
    assert old == schema_name(CRAFTED)
    for tenant in (CRAFTED, LONG):  # neither may read it, nor (the long one) make an empty schema beside it
        for options in ({}, {"read_only": True}, {"create": False}):
            with pytest.raises(StoreError) as info:
                open_store(fresh_db, tenant, **options)
            message = str(info.value)
            assert info.value.code == "E308", message
            assert f"schema {old} records no tenant" in message and "nothing was read or written" in message
            assert "cleo-rules memory tenants --db URL" in message and f"--adopt {old} --tenant" in message
    assert schemas(fresh_db) == [old]
    # the operator's view: one schema, ambiguous; exit 1
    code, out, err = cli(capsys, "memory", "tenants", "--db", fresh_db)
    assert code == 1, err
    assert out.splitlines()[1].split()[:5] == [old, "ambiguous", "-", "1", "0"]
    assert "1 schema in postgresql://" in out and ": 1 ambiguous" in out
    assert f"{old}: ambiguous: records no tenant" in err and "--adopt SCHEMA --tenant NAME" in err
    code, out, _ = cli(capsys, "memory", "tenants", "--db", fresh_db, "--json")
    assert code == 1
    (entry,) = json.loads(out)["schemas"]
    assert (entry["schema"], entry["owner"], entry["status"], entry["documents"]) == (old, None, "ambiguous", 1)
    # it was the long name's: adopting moves it to that tenant's schema and records the owner
    code, out, err = cli(capsys, "memory", "tenants", "--db", fresh_db, "--adopt", old, "--tenant", LONG)
    assert (code, out) == (0, f"schema {old} is tenant {LONG}'s, moved to {schema_name(LONG)}\n"), err
    assert owner_row(fresh_db, schema_name(LONG)) == LONG
    with open_store(fresh_db, LONG, read_only=True) as owner:
        assert [r.id for r in owner.search("merger code word FALCON", k=3).results] == ["merger"]
    with pytest.raises(StoreError) as info:
        open_store(fresh_db, CRAFTED, create=False)
    assert info.value.code == "E301"  # the crafted name has no store now: only an ingest makes one
    with open_store(fresh_db, CRAFTED) as other:
        assert other.stats()["documents"] == 0
    code, out, _ = cli(capsys, "memory", "tenants", "--db", fresh_db)
    assert code == 0 and ": 2 ok" in out


def test_item2_an_ambiguous_old_schema_can_be_given_to_the_short_name_it_spells(fresh_db, capsys):
    old = _old_code_store_of(fresh_db, LONG)
    code, out, _ = cli(capsys, "memory", "tenants", "--db", fresh_db, "--adopt", old, "--tenant", CRAFTED)
    assert (code, out) == (0, f"schema {old} is tenant {CRAFTED}'s\n")
    with open_store(fresh_db, CRAFTED, read_only=True) as store:
        assert store.stats()["documents"] == 1
    with open_store(fresh_db, LONG) as owner:  # the long name gets a schema of its own, empty
        assert owner.stats()["documents"] == 0 and owner.schema == schema_name(LONG)


def test_item2_a_schema_recording_another_tenant_is_refused(fresh_db, capsys):
    with open_store(fresh_db, "beta") as store:
        store.add_document("d1", "Note", "2024-01-01", "beta's own note")
    with admin(fresh_db) as conn:  # what a restore into the wrong schema, or a hand-made rename, leaves
        conn.execute("UPDATE cleo_beta.meta SET value = 'gamma' WHERE key = 'tenant'")
    for options in ({}, {"read_only": True}):
        with pytest.raises(StoreError) as info:
            open_store(fresh_db, "beta", **options)
        assert info.value.code == "E308"
        assert "schema cleo_beta records tenant gamma, whose schema is cleo_gamma" in str(info.value)
    code, out, err = cli(capsys, "memory", "tenants", "--db", fresh_db)
    assert code == 1 and out.splitlines()[1].split()[:3] == ["cleo_beta", "conflict", "gamma"]
    # it was gamma's after all: adopting moves it to gamma's schema
    code, out, _ = cli(capsys, "memory", "tenants", "--db", fresh_db, "--adopt", "cleo_beta", "--tenant", "gamma")
    assert (code, out) == (0, "schema cleo_beta is tenant gamma's, moved to cleo_gamma\n")
    with open_store(fresh_db, "gamma", create=False) as store:
        assert store.stats()["documents"] == 1


def test_item2_the_operator_command_refuses_what_it_cannot_do(fresh_db, capsys, tmp_path):
    with open_store(fresh_db, "acme"):
        pass
    with open_store(fresh_db, "beta"):
        pass
    code, out, err = cli(capsys, "memory", "tenants", "--db", fresh_db)
    assert code == 0 and "2 schemas in" in out and ": 2 ok" in out and err == ""
    cases = [
        (["--adopt", "cleo_acme"], "--adopt SCHEMA and --tenant NAME go together"),
        (["--adopt", "cleo_acme", "--tenant", "beta"], "schema cleo_acme cannot be tenant beta's"),
        (["--adopt", "cleo_nothing", "--tenant", "nothing"], "schema 'cleo_nothing' holds no memory store"),
        (["--adopt", "cleo_acme", "--tenant", "Not-A-Tenant"], "is not a tenant name"),
    ]
    for extra, expected in cases:
        code, out, err = cli(capsys, "memory", "tenants", "--db", fresh_db, *extra)
        assert code == 2 and expected in err and out == "", (extra, err)
    with admin(fresh_db) as conn:  # beta's schema records acme: acme may take it, but has a schema already
        conn.execute("UPDATE cleo_beta.meta SET value = 'acme' WHERE key = 'tenant'")
    code, _, err = cli(capsys, "memory", "tenants", "--db", fresh_db, "--adopt", "cleo_beta", "--tenant", "acme")
    assert code == 2 and "tenant acme has a schema already, cleo_acme" in err
    code, _, err = cli(capsys, "memory", "tenants", "--db", str(tmp_path))
    assert code == 2 and "lists the tenants of a PostgreSQL database" in err
    assert schemas(fresh_db) == ["cleo_acme", "cleo_beta"]  # nothing moved


def test_item2_the_operator_sees_every_status_and_a_role_that_may_not_read_a_schema(fresh_db, capsys):
    for tenant in ("acme", "beta", "delta", "omega"):
        with open_store(fresh_db, tenant):
            pass
    old = _old_code_store_of(fresh_db, LONG)
    _forget_owner(fresh_db, "cleo_beta")
    _forget_owner(fresh_db, "cleo_omega")
    with admin(fresh_db) as conn:
        conn.execute("UPDATE cleo_delta.meta SET value = 'Not A Tenant' WHERE key = 'tenant'")
        conn.execute('ALTER SCHEMA cleo_omega RENAME TO "cleo_Omega"')  # a name no tenant's schema has
    code, out, err = cli(capsys, "memory", "tenants", "--db", fresh_db, "--json")
    assert code == 1, err
    seen = {e["schema"]: (e["status"], e["owner"]) for e in json.loads(out)["schemas"]}
    assert seen == {"cleo_acme": ("ok", "acme"), "cleo_beta": ("unrecorded", None), old: ("ambiguous", None),
                    "cleo_delta": ("conflict", "Not A Tenant"), "cleo_Omega": ("orphan", None)}
    code, _, err = cli(capsys, "memory", "tenants", "--db", fresh_db)
    assert code == 1 and "cleo_delta: conflict: records 'Not A Tenant' as its tenant, which is no tenant name" in err
    assert "cleo_beta" not in err  # unrecorded is fine: beta's store records it when next opened for writing
    role = f"lister_{os.getpid()}_{time.monotonic_ns() % 10**6}"
    with admin(fresh_db) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA cleo_acme TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA cleo_acme TO "{role}"')
    try:
        as_role = fresh_db.replace("postgresql://postgres:@", f"postgresql://{role}:@", 1)
        assert as_role != fresh_db
        code, out, err = cli(capsys, "memory", "tenants", "--db", as_role, "--json")
        assert code == 1, err
        seen = {e["schema"]: e["status"] for e in json.loads(out)["schemas"]}
        assert seen == {"cleo_acme": "ok", "cleo_beta": "unreadable", old: "unreadable", "cleo_delta": "unreadable",
                        "cleo_Omega": "unreadable"}
        code, _, err = cli(capsys, "memory", "tenants", "--db", as_role)
        assert "cleo_beta: unreadable: permission denied for schema cleo_beta\n" in err
        assert "a role that may read every tenant's schema" in err and "--adopt" not in err
    finally:
        with admin(fresh_db) as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


# -- item 7: NUL characters ------------------------------------------------------------------------


@pytest.fixture(params=["embedded", "postgres"])
def location(request, tmp_path):
    if request.param == "embedded":
        return str(tmp_path / "store")
    pg = request.getfixturevalue("pg")
    return pg.url(request.getfixturevalue("pg_tenant"))


def _doc(i: int, **fields) -> dict:
    return {"type": "document", "id": f"d{i}", "title": f"Job {i}", "date": "2024-03-01",
            "text": f"Job sheet {i}: replaced valve {i} on Larch Close", **fields}


_NUL_LINES = {
    "id": (_doc(1, id="d\x001"), "/id"),
    "title": (_doc(1, title="Job\x00 1"), "/title"),
    "date": (_doc(1, date="2024-03-01T10:00\x00"), "/date"),  # fromisoformat takes this trailing NUL
    "text": (_doc(1, text="replaced\x00 valve"), "/text"),
    "role": ({"type": "conversation", "id": "c1", "title": "Call", "date": "2024-03-01",
              "messages": [{"role": "user\x00", "text": "boiler leaking"}]}, "/messages/0/role"),
    "message": ({"type": "conversation", "id": "c1", "title": "Call", "date": "2024-03-01",
                 "messages": [{"role": "user", "text": "ok"}, {"role": "user", "text": "boiler\x00 leak"}]},
                "/messages/1/text"),
}


@pytest.mark.parametrize("field", sorted(_NUL_LINES))
def test_item7_a_nul_in_any_text_field_is_that_lines_error_and_the_rest_is_stored(location, field):
    bad, pointer = _NUL_LINES[field]
    lines = "\n".join(json.dumps(r) for r in (_doc(0), bad, _doc(2))) + "\n"
    with open_memory(location, ToyEmbedder()) as store:
        report = store.ingest_jsonl(lines.encode(), batch_size=32)  # one batch: the good lines share it
        assert (report.added, report.skipped) == (2, 1), report.summary()
        (problem,) = report.problems
        assert (problem.code, problem.line, problem.pointer) == ("E322", 2, pointer)
        assert "holds a NUL character (U+0000 at character" in problem.message
        assert {r.id for r in store.search("replaced valve Larch Close", k=10).results} == {"d0", "d2"}
        assert store.stats()["documents"] == 2 and store.stats()["conversations"] == 0


def test_item7_strict_ingest_and_the_api_refuse_a_nul_alike(location):
    lines = "\n".join(json.dumps(r) for r in (_doc(0), _doc(1, text="a\x00b"))) + "\n"
    with open_memory(location, ToyEmbedder()) as store:
        with pytest.raises(IngestError) as info:
            store.ingest_jsonl(lines.encode(), strict=True)
        assert [p.code for p in info.value.problems] == ["E322"] and "nothing was ingested" in str(info.value)
        with pytest.raises(IngestError, match="NUL character") as info:
            store.add_document("d9", "T", "2024-01-01", "text with \x00 inside")
        assert info.value.problems[0].code == "E322"
        with pytest.raises(IngestError, match="NUL character"):
            store.add_conversation("c9", "T", "2024-01-01", [{"role": "user", "text": "\x00"}])
        assert store.stats()["documents"] == 0
        assert store.delete_document("d\x009") is False and store.get(["d\x009#p0"]) == {}


def test_item7_a_turn_whose_message_holds_a_nul_gets_its_trace(location):
    with open_memory(location, ToyEmbedder()) as store:
        store.add_document("d1", "Valve job", "2024-03-01", "replaced the valve on Larch Close")
        turn = Recall(store).turn("What did we replace on Larch Close\x00 last March?")
        assert turn.trace_id is not None
        (row,) = read_traces(store)
        assert row["message"] == "What did we replace on Larch Close\ufffd last March?"
        assert row["query"] is not None and "\x00" not in row["query"] and "\ufffd" in row["query"]
        assert "\x00" not in row["parts"]


# -- both items through the real service on loopback -------------------------------------------------


@pytest.fixture(scope="module")
def served(pg, tmp_path_factory):
    """``cleo-rules serve --memory postgresql://...`` with a key per tenant, in its own database."""
    name = f"hostile_svc_{os.getpid()}"
    with pg.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = pg.base.replace("/postgres?", f"/{name}?", 1)
    root = tmp_path_factory.mktemp("hostile-pg-service")
    keys = root / "keys.txt"
    tokens = {t: KeyRing.append(keys, t) for t in (LONG, CRAFTED, "nul")}
    svc = Service("--memory", base, "--keys", keys, log_path=root / "service.log")
    try:
        svc.wait_ready(120)
        yield svc, base, tokens
    finally:
        svc.stop()
        with pg.admin() as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _as(svc, token):
    return httpx.Client(base_url=svc.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


@pytest.mark.model
def test_item2_through_the_service_the_crafted_tenant_sees_and_deletes_nothing(served):
    svc, base, tokens = served
    line = json.dumps({"type": "document", "id": "merger", "title": "Board minutes", "date": "2024-03-01",
                       "text": SECRET}) + "\n"
    with _as(svc, tokens[LONG]) as owner, _as(svc, tokens[CRAFTED]) as other:
        r = owner.post(f"/v1/tenants/{LONG}/memory", content=line, headers=NDJSON)
        assert r.status_code == 200 and r.json()["added"] == 1, r.text
        assert other.get(f"/v1/tenants/{LONG}/memory").status_code == 403  # its key names its own tenant only
        r = other.get(f"/v1/tenants/{CRAFTED}/memory")
        assert r.status_code == 404 and r.json()["type"] == "/problems/unknown-tenant", r.text
        turn = {"message": "What is the merger code word and the closing date?"}
        assert other.post(f"/v1/tenants/{CRAFTED}/turns", json=turn).status_code == 404
        r = other.post(f"/v1/tenants/{CRAFTED}/memory", headers=NDJSON, content=json.dumps(
            {"type": "document", "id": "own", "title": "Own", "date": "2024-03-02", "text": "a note"}) + "\n")
        assert r.status_code == 200 and r.json()["added"] == 1, r.text
        r = other.post(f"/v1/tenants/{CRAFTED}/turns", json=turn)
        assert r.status_code == 200 and [hit["id"] for hit in r.json()["results"]] in ([], ["own"]), r.text
        assert other.delete(f"/v1/tenants/{CRAFTED}/memory/document/merger").status_code == 404
        assert other.get(f"/v1/tenants/{CRAFTED}/memory").json()["documents"] == 1
        stats = owner.get(f"/v1/tenants/{LONG}/memory").json()
        assert stats["documents"] == 1 and stats["schema"] == schema_name(LONG)
        r = owner.post(f"/v1/tenants/{LONG}/turns", json=turn)
        assert r.status_code == 200 and r.json()["results"][0]["id"] == "merger", r.text
    assert owner_row(base, schema_name(LONG)) == LONG and owner_row(base, schema_name(CRAFTED)) == CRAFTED


@pytest.mark.model
def test_item7_through_the_service_a_nul_line_is_reported_and_the_rest_stored(served):
    svc, base, tokens = served
    body = "".join(json.dumps(r) + "\n" for r in (_doc(0), _doc(1, text="replaced\x00 valve"), _doc(2)))
    with _as(svc, tokens["nul"]) as client:
        r = client.post("/v1/tenants/nul/memory", content=body, headers=NDJSON)
        assert r.status_code == 200, r.text
        report = r.json()
        assert (report["added"], report["skipped"]) == (2, 1)
        (problem,) = report["problems"]
        assert (problem["code"], problem["line"], problem["pointer"]) == ("E322", 2, "/text")
        r = client.post("/v1/tenants/nul/memory?strict=1", content=body, headers=NDJSON)
        assert r.status_code == 400 and r.json()["problems"][0]["code"] == "E322", r.text
        r = client.post("/v1/tenants/nul/turns", json={"message": "What valve was replaced on Larch Close\x00?"})
        assert r.status_code == 200 and r.json()["trace_id"] is not None, r.text
        r = client.delete("/v1/tenants/nul/memory/document/" + urlquote("d0\x00"))
        assert r.status_code == 404 and r.json()["type"] == "/problems/not-found", r.text
    with admin(base) as conn:
        (message,) = conn.execute("SELECT message FROM cleo_nul.traces").fetchone()
    assert message == "What valve was replaced on Larch Close\ufffd?"
    assert "Traceback" not in svc.log
