"""What only the PostgreSQL backend has: tenants, migrations, the pool, a server that goes away, locations.

The contract both backends share is tested in test_memory_backends.py; these
tests use the session's private server (``pg``) and, for the restart, one
of their own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import psycopg
import pytest

from cleo_rules.cli import main
from cleo_rules.errors import StoreError
from cleo_rules.kinds import Source
from cleo_rules.retrieval import pg_schema
from cleo_rules.retrieval.pg_schema import (
    Migration, display_url, parse_location, quote, schema_name, search_sql,
)
from cleo_rules.retrieval.postgres import Database, PgStore

from helpers import ROOT as CHECKOUT
from helpers.embedders import ToyEmbedder
from helpers.postgres import PgServer

ROOT = str(CHECKOUT)  # the subprocesses' working directory and PYTHONPATH


def docs(prefix: str, n: int, text: str = "{p} job sheet {i}: replaced valve {i} on Larch Close") -> list[str]:
    return [json.dumps({"type": "document", "id": f"{prefix}-{i}", "title": f"{prefix} job {i}", "date": "2024-03-01",
                        "text": text.format(p=prefix, i=i)}) for i in range(n)]


def open_store(url, **options) -> PgStore:
    return PgStore.open(url, ToyEmbedder(), **options)


# -- locations ---------------------------------------------------------------------------------


def test_a_location_names_its_tenant_and_keeps_every_other_parameter():
    where = parse_location("postgresql://cleo:s3cret@db.internal:5433/mem?sslmode=require&tenant=acme")
    assert (where.tenant, where.schema) == ("acme", "cleo_acme")
    assert where.url == "postgresql://cleo:s3cret@db.internal:5433/mem?sslmode=require"
    assert str(where) == "postgresql://cleo:***@db.internal:5433/mem?sslmode=require (tenant acme)"
    assert parse_location(where.as_url()) == where
    assert parse_location("postgresql:///mem?host=/run/postgresql").tenant == "default"
    assert parse_location("postgresql:///mem?tenant=acme", tenant="beta").tenant == "beta"
    for bad in ("Acme", "-x", "a b", "x" * 64, "../etc", ""):
        with pytest.raises(ValueError, match="not a tenant name"):
            parse_location(f"postgresql:///mem?tenant={bad}")
    assert display_url("postgresql:///mem?password=hunter2&host=/tmp") == "postgresql:///mem?password=***&host=/tmp"


def test_every_tenant_name_makes_a_schema_name_postgres_accepts():
    assert schema_name("acme") == "cleo_acme"
    long_a, long_b = "a" * 62 + "1", "a" * 62 + "2"
    assert len(schema_name(long_a)) == 63 and schema_name(long_a) != schema_name(long_b)
    assert quote('we"ird') == '"we""ird"'


def test_a_search_is_one_statement_for_any_sources():
    for sources in ([pg_schema.Source.DOCUMENT], list(pg_schema.Source)):
        sql = search_sql(sources)
        assert sql.count("ORDER BY embedding <=> q.v LIMIT %(k)s") == len(sources)
        assert sql.count("JOIN {s}.") == len(sources)


# -- tenants -----------------------------------------------------------------------------------


@pytest.fixture
def app_role(pg):
    """A login role that owns nothing: the tenants' tables are the superuser's."""
    name = f"cleo_app_{os.getpid()}_{time.monotonic_ns() % 10**6}"
    with pg.admin() as conn:
        conn.execute(f'CREATE ROLE "{name}" LOGIN')
    yield name
    with pg.admin() as conn:
        conn.execute(f'DROP OWNED BY "{name}"')
        conn.execute(f'DROP ROLE "{name}"')


def grant(pg, role: str, tenant: str) -> None:
    s = quote(schema_name(tenant))
    with pg.admin() as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA {s} TO "{role}"')
        conn.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO "{role}"')
        conn.execute(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA {s} TO "{role}"')


def as_role(pg, role: str, tenant: str) -> str:
    return pg.url(tenant).replace("postgresql://postgres:@", f"postgresql://{role}:@", 1)


def test_a_query_for_one_tenant_never_returns_anothers_rows(pg, pg_tenant, app_role, monkeypatch):
    a, b = f"{pg_tenant}-a", f"{pg_tenant}-b"
    # the same ids in both tenants, with different words, built by the owner
    with open_store(pg.url(a)) as owner_a, open_store(pg.url(b)) as owner_b:
        owner_a.ingest_jsonl(docs("shared", 20, "alpha apple {i} orchard"))
        owner_b.ingest_jsonl(docs("shared", 2000, "alpha apple {i} orchard bravo"))
        owner_a.add_conversation("c1", "A's call", "2024-01-01", [{"role": "user", "text": "alpha apple orchard"}])
    grant(pg, app_role, a)
    grant(pg, app_role, b)
    seen: list[str] = []
    real = psycopg.Cursor.execute

    def spy(cur, query, *args, **kwargs):
        seen.append(str(query))
        return real(cur, query, *args, **kwargs)

    with open_store(as_role(pg, app_role, a)) as store:
        with psycopg.connect(as_role(pg, app_role, a).split("&tenant")[0]) as probe:
            assert probe.execute("SELECT current_user").fetchone()[0] == app_role
            owner = probe.execute("SELECT tableowner FROM pg_tables WHERE schemaname = %s LIMIT 1",
                                  [schema_name(a)]).fetchone()[0]
            assert owner != app_role
        monkeypatch.setattr(psycopg.Cursor, "execute", spy)
        response = store.search("alpha apple orchard", k=50)
        vectors = store.search_vectors(ToyEmbedder().encode(["alpha apple 3 orchard", "bravo"]), k=30)
        got = store.get([f"shared-{i}#p0" for i in range(2000)])
        pairs = list(store.traces.read())
        store.add_document("new", "A's note", "2024-05-05", "alpha apple note")
        stats = store.stats()
        monkeypatch.undo()
    texts = [r.text for r in response] + [r.text for v in vectors for r in v] + [i.text for i in got.values()]
    assert texts and not any("bravo" in t for t in texts)  # B's texts never come back
    assert len(got) == 20 and stats["documents"] == 21 and pairs == []
    assert len(response) == 21  # every piece of A's: 20 passages and 1 snippet
    # every statement the store sent names A's schema and no other
    named = {m for s in seen for m in re.findall(r'"(cleo_[^"]+)"', s)}
    assert named == {schema_name(a)}
    with open_store(as_role(pg, app_role, b), read_only=True) as other:
        assert len(other.search("alpha apple orchard", k=10)) == 10
        assert all("bravo" in r.text for r in other.search("alpha apple orchard", k=10))


def test_a_role_without_rights_on_a_tenant_cannot_read_it(pg, pg_tenant, app_role):
    a, b = f"{pg_tenant}-a", f"{pg_tenant}-b"
    for tenant in (a, b):
        with open_store(pg.url(tenant)) as s:
            s.ingest_jsonl(docs(tenant, 3))
    grant(pg, app_role, a)
    with open_store(as_role(pg, app_role, a), read_only=True) as ok:
        assert ok.stats()["documents"] == 3
    with pytest.raises(StoreError, match="permission denied") as info:
        open_store(as_role(pg, app_role, b), read_only=True).search("valve", k=3)
    assert info.value.code == "E300" and "grant this role" in str(info.value)


def test_a_tenant_holding_one_percent_of_all_rows_still_gets_k_results(pg, pg_tenant):
    """pgvector 0.6 has no iterative index scans: a filtered HNSW scan of a shared table comes back short.

    Each tenant here has its own tables and its own HNSW index, so a small
    tenant's search walks only its own graph.
    """
    small, big = f"{pg_tenant}-small", f"{pg_tenant}-big"
    rng = np.random.default_rng(5)
    with open_store(pg.url(big)) as s:
        s.ingest_jsonl(docs("big", 4950, "big sheet {i} valve pump flue radiator"), batch_size=500)
    with open_store(pg.url(small)) as s:
        s.ingest_jsonl(docs("small", 50, "small sheet {i} invoice quote"))
        with pg.admin() as conn:
            total = sum(conn.execute(f"SELECT count(*) FROM {quote(schema_name(t))}.passages").fetchone()[0]
                        for t in (small, big))
        assert total == 5000  # the small tenant is 1% of the rows
        vectors = rng.normal(size=(20, 64)).astype(np.float32)
        for response in s.search_vectors(vectors, k=10, floor=-1.0):  # random queries: keep negative scores too
            assert len(response) == 10 and all(r.id.startswith("small-") for r in response)
        for response in s.search_vectors(vectors, k=50, floor=-1.0):
            assert len(response) == 50
        stats = s.stats()
        assert stats["indexes"]["passages"]["m"] == 16 and stats["indexes"]["passages"]["bytes"] > 0


def indexes(pg, tenant: str) -> set[str]:
    with pg.admin() as conn:
        return {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname "
                                           "LIKE '%%_embedding'", [schema_name(tenant)])}


def plan(store: PgStore, vector) -> str:
    sql = store._sql("EXPLAIN " + search_sql([Source.DOCUMENT]))
    with store.database.connection() as conn:
        return "\n".join(r[0] for r in conn.execute(sql, {"vectors": [vector], "k": 5}).fetchall())


def test_a_bulk_ingest_indexes_once_at_the_end_and_a_lost_index_is_built_again(pg, pg_tenant):
    url = pg.url(pg_tenant)
    built: list[str] = []
    with open_store(url) as s:
        real = s._build_indexes
        s._build_indexes = lambda conn, tables: (built.extend(t.pieces for t in tables), real(conn, tables))[1]
        report = s.ingest_jsonl(docs("job", 300), batch_size=50)  # six batches into an empty tenant
        assert report.added == 300
        assert built == ["snippets", "passages"]  # once, after the last batch
        assert indexes(pg, pg_tenant) == {"snippets_embedding", "passages_embedding"}
        vector = s.embedder.encode(["job job sheet 7: replaced valve 7 on Larch Close"])[0]
        assert "passages_embedding" in plan(s, vector)
        # more items into a source that has pieces: its index grows with each insert, nothing is rebuilt
        built.clear()
        s.ingest_jsonl(docs("more", 40))
        assert built == ["snippets"]  # still no conversations: that index waits for its first snippets
    # an index lost, as an ingest killed before its end leaves it: searches read the whole table (exact)
    with pg.admin() as conn:
        conn.execute(f"DROP INDEX {quote(schema_name(pg_tenant))}.passages_embedding")
    with open_store(url, read_only=True) as s:
        assert indexes(pg, pg_tenant) == {"snippets_embedding"}  # a read-only store builds nothing
        assert "passages_embedding" not in plan(s, vector)
        assert s.search("job job sheet 7: replaced valve 7 on Larch Close", k=3).results[0].id == "job-7"
    with open_store(url) as s:  # the next store opened for writing builds it
        assert indexes(pg, pg_tenant) == {"snippets_embedding", "passages_embedding"}
        assert "passages_embedding" in plan(s, vector)


def test_the_first_single_add_indexes_at_once(pg, pg_tenant):
    with open_store(pg.url(pg_tenant)) as s:
        s.add_document("d1", "Price list", "2024-01-02", "Call-out fee 45 pounds.")
        assert indexes(pg, pg_tenant) == {"snippets_embedding", "passages_embedding"}


# -- migrations --------------------------------------------------------------------------------


def meta(pg, tenant: str) -> dict:
    with pg.admin() as conn:
        return dict(conn.execute(f"SELECT key, value FROM {quote(schema_name(tenant))}.meta").fetchall())


def set_meta(pg, tenant: str, key: str, value) -> None:
    with pg.admin() as conn:
        if value is None:
            conn.execute(f"DELETE FROM {quote(schema_name(tenant))}.meta WHERE key = %s", [key])
        else:
            conn.execute(f"UPDATE {quote(schema_name(tenant))}.meta SET value = %s WHERE key = %s", [value, key])


def test_a_new_store_is_at_the_latest_schema_version(pg, pg_tenant):
    assert pg_schema.latest() == pg_schema.SCHEMA_VERSION
    with open_store(pg.url(pg_tenant)) as s:
        assert s.schema_version == pg_schema.SCHEMA_VERSION
    m = meta(pg, pg_tenant)
    assert m["schema_version"] == str(pg_schema.SCHEMA_VERSION) and len(m["store_id"]) == 32


def test_an_older_schema_is_upgraded_when_opened_for_writing_and_refused_read_only(pg, pg_tenant, monkeypatch):
    with open_store(pg.url(pg_tenant)) as s:
        s.ingest_jsonl(docs("d", 5))
    now = pg_schema.latest()
    step = Migration(now + 1, "a column for each document's source system",
                     ("ALTER TABLE {s}.documents ADD COLUMN origin text",))
    monkeypatch.setattr(pg_schema, "MIGRATIONS", [*pg_schema.MIGRATIONS, step])
    with pytest.raises(StoreError, match=rf"has schema version {now}; this cleo-rules reads version {now + 1}; open it "
                                         r"once for writing to upgrade it"):
        open_store(pg.url(pg_tenant), read_only=True)
    assert meta(pg, pg_tenant)["schema_version"] == str(now)
    with open_store(pg.url(pg_tenant)) as s:
        assert s.schema_version == now + 1 and s.stats()["documents"] == 5
        assert s.search("replaced valve 3", k=1).results[0].id == "d-3"
    assert meta(pg, pg_tenant)["schema_version"] == str(now + 1)
    with pg.admin() as conn:
        columns = {r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_schema = %s AND table_name = 'documents'",
                                              [schema_name(pg_tenant)])}
    assert "origin" in columns
    with open_store(pg.url(pg_tenant), read_only=True) as s:  # now it reads
        assert s.stats()["schema_version"] == now + 1


def test_a_newer_or_damaged_schema_is_refused(pg, pg_tenant):
    with open_store(pg.url(pg_tenant)) as s:
        s.ingest_jsonl(docs("d", 2))
    set_meta(pg, pg_tenant, "schema_version", "99")
    for read_only in (False, True):
        with pytest.raises(StoreError, match="has schema version 99, written by a newer cleo-rules"):
            open_store(pg.url(pg_tenant), read_only=read_only)
    set_meta(pg, pg_tenant, "schema_version", "one")
    with pytest.raises(StoreError, match="is damaged: 'schema_version' is 'one'") as info:
        open_store(pg.url(pg_tenant))
    assert info.value.code == "E303"
    set_meta(pg, pg_tenant, "schema_version", None)
    with pytest.raises(StoreError, match="the row 'schema_version' is missing") as info:
        open_store(pg.url(pg_tenant))
    assert info.value.code == "E303"


def test_two_processes_creating_one_tenant_at_once_both_succeed(pg, pg_tenant):
    code = ("import sys; sys.path.insert(0, 'tests'); from helpers.embedders import ToyEmbedder; "
            "from cleo_rules.retrieval.postgres import PgStore; "
            "s = PgStore.open(sys.argv[1], ToyEmbedder()); s.add_document(sys.argv[2], 'T', '2024-01-01', 'x y'); "
            "s.close()")
    env = {**os.environ, "PYTHONPATH": ROOT}
    procs = [subprocess.Popen([sys.executable, "-c", code, pg.url(pg_tenant), f"d{i}"], cwd=ROOT, env=env,
                              stderr=subprocess.PIPE, text=True) for i in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    with open_store(pg.url(pg_tenant), create=False) as s:
        assert s.stats()["documents"] == 3


# -- the pool, and a server that goes away -----------------------------------------------------


def test_an_exhausted_pool_is_a_busy_error_within_the_timeout(pg, pg_tenant):
    with open_store(pg.url(pg_tenant), pool_size=1, timeout=1.0) as s:
        s.ingest_jsonl(docs("d", 3))
        held = s.database.pool.getconn()
        try:
            start = time.monotonic()
            with pytest.raises(StoreError, match=r"is busy: all 1 pooled connections stayed in use for 1 s") as info:
                s.search("valve", k=2)
            assert info.value.code == "E307" and time.monotonic() - start < 2.5
        finally:
            s.database.pool.putconn(held)
        assert len(s.search("valve", k=2)) == 2
        # many threads, one connection: they take turns, none fails
        errors: list[BaseException] = []

        def work():
            try:
                for _ in range(5):
                    s.search("valve", k=2)
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == []


@pytest.fixture
def own_server():
    import tempfile

    server = PgServer(tempfile.mkdtemp(prefix="cleo-restart-"))
    yield server
    try:
        server.start()
    except Exception:  # noqa: BLE001 - already running
        pass
    server.close()


def test_a_server_restart_mid_session_fails_fast_then_recovers_without_reopening(own_server):
    store = open_store(own_server.url("acme"), timeout=2.0)
    try:
        store.ingest_jsonl(docs("d", 10))
        assert len(store.search("valve", k=3)) == 3
        own_server.stop()
        for call in (lambda: store.search("valve", k=3), lambda: store.add_document("x", "T", "2024-01-01", "y"),
                     lambda: store.stats()):
            start = time.monotonic()
            with pytest.raises(StoreError) as info:
                call()
            assert time.monotonic() - start < 2.0 + 1.0, "a call while the server is down must fail within the timeout"
            assert info.value.code == "E306" and "cannot reach the database of memory store" in str(info.value)
        time.sleep(3)  # down for a while: the pool's attempts to reconnect give up, and start again on demand
        own_server.start()
        back = time.monotonic()
        while True:
            try:
                response = store.search("valve", k=3)
                break
            except StoreError:
                assert time.monotonic() - back < 10, "calls must succeed within 10 s of the server's return"
                time.sleep(0.2)
        assert len(response) == 3 and time.monotonic() - back < 10
        assert store.add_document("x", "T", "2024-01-01", "back again") == "added"
        assert store.stats()["documents"] == 11
    finally:
        store.close()


def test_an_unreachable_server_at_open_is_a_clear_error():
    start = time.monotonic()
    with pytest.raises(StoreError, match="cannot reach the database of memory store") as info:
        PgStore.open("postgresql://nobody@/nowhere?host=/nonexistent-socket-dir", timeout=2.0)
    assert info.value.code == "E306" and time.monotonic() - start < 5


def test_a_shared_database_serves_many_tenants_and_outlives_their_stores(pg, pg_tenant):
    database = Database(parse_location(pg.url()).url, pool_size=2)
    try:
        stores = [PgStore.open(pg.url(), ToyEmbedder(), tenant=f"{pg_tenant}-{i}", database=database)
                  for i in range(5)]
        for i, s in enumerate(stores):
            s.add_document(f"d{i}", "T", "2024-01-01", f"tenant {i} only")
        for i, s in enumerate(stores):
            assert [r.id for r in s.search("tenant only", k=5)] == [f"d{i}"]
            s.close()
        assert database.tenant_exists(schema_name(f"{pg_tenant}-3"))
        assert not database.tenant_exists(schema_name(f"{pg_tenant}-9"))
    finally:
        database.close()


# -- the command line and the extra ---------------------------------------------------------------


@pytest.fixture
def toy_cli(monkeypatch, capsys):
    from cleo_rules.retrieval import locate

    real = locate.open_memory

    def open_(location, embedder=None, **options):
        return real(location, ToyEmbedder(), **options)

    monkeypatch.setattr(locate, "open_memory", open_)

    def run(*argv):
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        out, err = capsys.readouterr()
        return info.value.code, out, err

    return run


def test_the_memory_commands_take_a_url(pg, pg_tenant, tmp_path, toy_cli):
    url = pg.url(pg_tenant)
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(docs("d", 4) + ["{broken"]) + "\n")
    code, out, err = toy_cli("memory", "stats", "--db", url)
    assert code == 2 and "no memory store in postgresql://postgres:***@" in err and f"(tenant {pg_tenant})" in err
    code, out, err = toy_cli("memory", "ingest", "--db", url, str(source))
    assert code == 0 and "4 added, 0 updated, 0 unchanged, 1 skipped (line 5)" in out and ":5:" in err
    code, out, err = toy_cli("memory", "search", "--db", url, "replaced valve 2 on Larch Close", "--k", "2")
    assert code == 0 and out.startswith(" 1. ") and "[d-2#p0]" in out
    code, out, err = toy_cli("memory", "stats", "--db", url)
    assert code == 0 and "documents:     4 (4 passages)" in out and "hnsw m=16 ef_construction=200" in out
    assert "***" in out and "s3cret" not in out
    code, out, _ = toy_cli("memory", "delete", "--db", url, "--document", "d-1")
    assert (code, out) == (0, "deleted 1 item\n")
    code, out, _ = toy_cli("turn", "--db", url, "What was replaced on job sheet 3 on Larch Close?")
    assert code == 0 and json.loads(out)["results"][0]["id"] == "d-3"
    code, out, err = toy_cli("relevance", "sample", "--db", url, "--n", "3")
    assert code == 0 and len(out.splitlines()) == 3 and "3 pairs sampled" in err
    code, _, err = toy_cli("memory", "stats", "--db", pg.url("Not-A-Tenant"))
    assert code == 2 and "is not a tenant name" in err
    # commands that do not embed never import torch, on this backend either
    for argv in (["memory", "stats", "--db", url], ["memory", "delete", "--db", url, "--document", "d-2"]):
        code = ("import sys\nfrom cleo_rules.cli import main\ntry:\n    main(%r)\nexcept SystemExit as e:\n"
                "    assert not e.code, e.code\n"
                "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'onnxruntime', 'tokenizers') "
                "if m in sys.modules))"
                % argv)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                                env={**os.environ, "PYTHONPATH": ROOT})
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[-1] == "[]", result.stdout


BLOCKED = """
import sys
for name in {modules!r}:
    sys.modules[name] = None  # as if the extra were not installed
from cleo_rules.cli import main
main({argv!r})
"""


@pytest.mark.parametrize("argv", [
    ["memory", "stats", "--db", "postgresql://cleo@localhost/cleo"],
    ["turn", "--db", "postgresql://cleo@localhost/cleo", "Yes, the second one."],
    ["serve", "--memory", "postgresql://cleo@localhost/cleo"],
])
def test_a_url_without_the_postgres_extra(tmp_path, argv):
    code = BLOCKED.format(modules=["psycopg", "psycopg_pool", "pgvector"], argv=argv)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                            env={**os.environ, "PYTHONPATH": ROOT})
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("Error: the PostgreSQL memory store needs the [postgres] extra: "
                             "pip install 'cleo-rules[postgres]'\n")


def test_the_embedded_store_never_imports_psycopg(tmp_path):
    code = ("import sys; sys.path.insert(0, 'tests'); from helpers.embedders import ToyEmbedder; "
            "from cleo_rules.retrieval.locate import open_memory; from cleo_rules.turn import Recall; "
            f"s = open_memory({str(tmp_path / 'm')!r}, ToyEmbedder()); s.add_document('d', 'T', '2024-01-01', 'a b'); "
            "Recall(s).turn('What did the a b document say?'); s.close(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('psycopg', 'psycopg_pool', 'pgvector')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={**os.environ, "PYTHONPATH": ROOT, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_service_keeps_each_tenants_memory_in_its_own_schema(pg, pg_tenant, monkeypatch):
    """``serve --memory postgresql://...`` in process: ingest, turns, stats and deletes per tenant."""
    from starlette.testclient import TestClient

    import cleo_rules.retrieval.embed as embed
    from cleo_rules.serve import ServeSettings, create_app

    monkeypatch.setattr(embed, "Embedder", lambda model=None: ToyEmbedder())
    acme, beta = f"{pg_tenant}-acme", f"{pg_tenant}-beta"
    ndjson = {"Content-Type": "application/x-ndjson"}
    app = create_app(ServeSettings(memory=pg.url(), watch_interval=0))
    with TestClient(app, base_url="http://127.0.0.1") as client:  # a Host that names this machine
        deadline = time.monotonic() + 90
        while not app.state.service.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        r = client.get(f"/v1/tenants/{acme}/memory")
        assert r.status_code == 404, r.text  # only an ingest creates a store
        r = client.post(f"/v1/tenants/{acme}/memory", content="\n".join(docs("acme", 20)) + "\n", headers=ndjson)
        assert r.status_code == 200 and r.json()["added"] == 20, r.text
        r = client.post(f"/v1/tenants/{beta}/memory", headers=ndjson,
                        content="\n".join(docs("beta", 5, "{p} hangar door code {i} zebra")) + "\n")
        assert r.status_code == 200 and r.json()["added"] == 5, r.text
        turn = {"message": "What was the hangar door code for the zebra hangar?", "k": 5}
        for tenant, prefix in ((acme, "acme-"), (beta, "beta-")):
            r = client.post(f"/v1/tenants/{tenant}/turns", json=turn)
            assert r.status_code == 200, r.text
            found = [hit["id"] for hit in r.json()["results"]]
            assert found and all(i.startswith(prefix) for i in found), found
        stats = client.get(f"/v1/tenants/{beta}/memory").json()
        assert stats["backend"] == "postgres" and stats["schema"] == schema_name(beta) and stats["documents"] == 5
        assert "password" not in json.dumps(stats)
        assert client.delete(f"/v1/tenants/{beta}/memory/document/beta-0").status_code == 200
        r = client.post(f"/v1/tenants/{beta}/turns", json=turn)
        assert "beta-0" not in [hit["id"] for hit in r.json()["results"]]
    with pg.admin() as conn:
        assert conn.execute(f"SELECT count(*) FROM {quote(schema_name(beta))}.documents").fetchone()[0] == 4
        assert conn.execute(f"SELECT count(*) FROM {quote(schema_name(beta))}.traces").fetchone()[0] == 2  # its two turns


def test_the_service_answers_503_while_its_database_is_down_and_health_meanwhile(own_server, monkeypatch):
    """The server stops: a known tenant's request and an unknown tenant's lookup are 503 problems with
    Retry-After and E306 (never where the database is), /healthz answers while they wait, and the
    service serves again once the server is back."""
    from starlette.testclient import TestClient

    import cleo_rules.retrieval.embed as embed
    from cleo_rules.serve import ServeSettings, create_app

    monkeypatch.setattr(embed, "Embedder", lambda model=None: ToyEmbedder())
    app = create_app(ServeSettings(memory=own_server.url(), watch_interval=0, request_timeout=60))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        deadline = time.monotonic() + 90
        while not app.state.service.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        r = client.post("/v1/tenants/acme/memory", content="\n".join(docs("acme", 5)) + "\n",
                        headers={"Content-Type": "application/x-ndjson"})
        assert r.status_code == 200 and r.json()["added"] == 5, r.text
        own_server.stop()
        answers = {}

        def ask(name):
            answers[name] = client.get(f"/v1/tenants/{name}/memory")

        asks = [threading.Thread(target=ask, args=(name,)) for name in ("acme", "beta")]  # beta is looked up
        for t in asks:
            t.start()
        time.sleep(1)
        start = time.monotonic()
        health = client.get("/healthz")
        waited = time.monotonic() - start
        for t in asks:
            t.join(60)
        assert health.status_code == 200 and waited < 5, waited  # the lookup does not hold the event loop
        for name in ("acme", "beta"):
            r = answers[name]
            assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
            body = r.json()
            assert body["type"] == "/problems/not-ready" and body["code"] == "E306", body
            assert "cleo-restart-" not in r.text and "postgresql" not in r.text  # where the database is
        own_server.start()
        deadline = time.monotonic() + 30
        while client.get("/v1/tenants/acme/memory").status_code != 200:
            assert time.monotonic() < deadline, "the service must serve again once the server is back"
            time.sleep(0.5)
        assert client.get("/v1/tenants/acme/memory").json()["documents"] == 5


def test_a_store_from_before_the_traces_kept_the_bases_reads_read_only_and_is_upgraded_for_writing(pg, pg_tenant):
    """Schema version 1 had no traces.pack_bases: a read-only open reads it as it is (the step that adds the
    column is readable_before), a writable one adds the column, and a turn then records its pack's bases."""
    from pathlib import Path

    from cleo_rules.decision import Decision
    from cleo_rules.pack.model import Base
    from cleo_rules.trace import Tracer

    with open_store(pg.url(pg_tenant)) as s:
        s.ingest_jsonl(docs("d", 2))
        Tracer(s).record(time="2024-05-01T00:00:00+00:00", decision=Decision(
            kind="skip", rule=None, span=None, matched=None, query=None, anchor=None, message="Thanks!", pack="p",
            pack_version="1.0.0", pack_hash="h"), results=(), timings={}, k=3)
    with pg.admin() as conn:  # as version 1 left it
        conn.execute(f"ALTER TABLE {quote(schema_name(pg_tenant))}.traces DROP COLUMN pack_bases")
    set_meta(pg, pg_tenant, "schema_version", "1")
    with open_store(pg.url(pg_tenant), read_only=True) as s:
        assert s.schema_version == 1 and [r["pack_bases"] for r in s.traces.read()] == [[]]
    assert meta(pg, pg_tenant)["schema_version"] == "1"  # read-only: nothing changed
    base = Base("cleo-en", "1.0.0", "1be75dbe3f860a2e", Path("rules"), "cleo-en", "bundled")
    with open_store(pg.url(pg_tenant)) as s:
        assert s.schema_version == pg_schema.latest() == 2
        Tracer(s).record(time="2024-06-01T00:00:00+00:00", decision=Decision(
            kind="skip", rule=None, span=None, matched=None, query=None, anchor=None, message="Cheers!", pack="team",
            pack_version="0.1.0", pack_hash="t"), results=(), timings={}, k=3, bases=(base,))
        rows = list(s.traces.read())
    assert [r["pack_bases"] for r in rows] == [[], [{"name": "cleo-en", "version": "1.0.0", "hash": "1be75dbe3f860a2e"}]]
