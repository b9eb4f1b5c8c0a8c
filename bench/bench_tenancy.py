"""Why one schema per tenant: a shared table's filtered HNSW scan comes back short for a small tenant.

The alternative to a schema per tenant is one table for every tenant, a
``tenant`` column (guarded by row-level security) and one HNSW index. This
builds that table in a private PostgreSQL (the ``pgserver`` package, its
pgvector) with 20,000 random 384-d vectors, 1% of them tenant ``small``'s,
and asks for ``small``'s 10 nearest neighbours of 50 random queries at
several ``hnsw.ef_search``. pgvector before 0.8 has no iterative index
scans: the index hands back ``ef_search`` candidates from every tenant, the
filter keeps ``small``'s, and the query gets what is left. PgStore gives
each tenant its own tables and index, so a search walks only the tenant's
own graph (tests/retrieval/test_postgres_store.py holds it to k results at 1%).

Usage: python bench/bench_tenancy.py [--rows 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20000)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is not set
        import pgserver
    import psycopg
    from pgvector.psycopg import register_vector

    server = pgserver.get_server(tempfile.mkdtemp(prefix="cleo-bench-tenancy-"), cleanup_mode="delete")
    rng = np.random.default_rng(7)
    n, dim = args.rows, 384
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tenants = np.where(np.arange(n) % 100 == 0, "small", "big")
    queries = rng.normal(size=(50, dim)).astype(np.float32)
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            conn.execute("CREATE TABLE shared (id int PRIMARY KEY, tenant text NOT NULL, embedding vector(384))")
            with conn.cursor() as cur, conn.transaction():
                cur.executemany("INSERT INTO shared VALUES (%s, %s, %s)",
                                [(i, str(tenants[i]), vectors[i]) for i in range(n)])
            conn.execute("SET maintenance_work_mem = '256MB'")
            conn.execute("CREATE INDEX shared_embedding ON shared USING hnsw (embedding vector_cosine_ops) "
                         "WITH (m = 16, ef_construction = 200)")
            conn.execute("ANALYZE shared")
            sql = "SELECT id FROM shared WHERE tenant = 'small' ORDER BY embedding <=> %s LIMIT 10"
            print()
            print(f"A shared table of {n:,} vectors, tenant 'small' holding {int((tenants == 'small').sum()):,} "
                  f"(1%); pgvector {version[0] if version else '?'}; k=10, 50 queries")
            print()
            print("  ef_search  results per query (mean / min / max)  index scan")
            print("  ---------  -------------------------------------  ----------")
            for ef in (40, 64, 200, 1000):
                conn.execute(f"SET hnsw.ef_search = {ef}")
                got = [len(conn.execute(sql, [q]).fetchall()) for q in queries]
                plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, [queries[0]]).fetchall())
                print(f"  {ef:>9}  {np.mean(got):>17.2f} / {min(got):>2} / {max(got):>2}{'':>13}  "
                      f"{'yes' if 'shared_embedding' in plan else 'no':>10}")
    finally:
        server.cleanup()
    print()
    print(f"total benchmark time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
