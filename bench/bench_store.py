"""Memory store cost, both backends side by side: ingest throughput, search latency, recall, SQL per search.

For each store size (10k and 100k vectors by default) this builds, through
``ingest_jsonl``, a real :class:`~cleo_rules.retrieval.MemoryStore` on disk
(SQLite rows, embedding BLOBs, hnswlib index, atomic saves) and a real
:class:`~cleo_rules.retrieval.postgres.PgStore` in a private PostgreSQL
with pgvector (the ``pgserver`` package, started here in a temporary
directory and stopped at the end), then measures for each:

* ingest throughput of the store itself (items/s, embedding excluded), with
  the embedding time per item shown beside it and the end-to-end rate that
  the two give together;
* opening the store again, and the bytes its vector index and tables take;
* per-query latency (median and p99) of ``store.search_vectors`` (nearest
  neighbours, and title, date and text), and of exact numpy search over the
  same vectors; for the embedded store, hnswlib alone too;
* recall@10 of ``store.search_vectors`` against that exact search, at the
  stores' ``ef_search`` (64) and, with the latency it costs, at other values;
* SQL statements per search, for k = 1, 10 and 100;
* the ratio PostgreSQL / embedded of each.

Embedding 100k texts with the real model would take far too long on CPU, so
the stored vectors are synthetic: unit vectors drawn around a few hundred
random centres (clustered, like sentence embeddings), 384-d, handed to the
store by a stand-in embedder. The real model's cost is measured separately,
on the bundled sample memory's snippets and passages and on short sentences.

Usage: python bench/bench_store.py [--sizes 10000,100000] [--queries 200] [--backends embedded,postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from cleo_rules.resources import data_dir  # noqa: E402
from cleo_rules.retrieval import MemoryStore  # noqa: E402

DIM = 384


class SyntheticEmbedder:
    """Hands the store precomputed vectors: the text ``"item <n>"`` maps to row ``n``."""

    model_name = "synthetic-clustered-384"
    loaded = True

    def __init__(self, vectors: np.ndarray):
        self.vectors = vectors
        self.dim = vectors.shape[1]
        self.seconds = 0.0

    def encode(self, texts):
        start = time.perf_counter()
        rows = [int(t.rsplit(" ", 1)[1]) for t in texts]
        out = self.vectors[rows]
        self.seconds += time.perf_counter() - start
        return out


def clustered(n: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    """``n`` unit vectors scattered around random centres."""
    picks = rng.integers(0, len(centres), n)
    v = centres[picks] + rng.normal(scale=0.06, size=(n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32)


def real_embedding_cost() -> dict:
    """Seconds per item for the real model on sample-memory pieces and short sentences."""
    from cleo_rules.retrieval.embed import Embedder

    embedder = Embedder()
    t0 = time.perf_counter()
    embedder.dim
    load = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(Path(tmp) / "s", embedder=embedder) as store:
            report = store.ingest_jsonl(data_dir() / "sample_memory.jsonl")
            pieces = [r[0] for r in store.db.execute("SELECT text FROM snippets UNION ALL SELECT text FROM passages")]
            statements = count_statements(store, lambda: store.search("which van insurance did we pick?", k=10))
    short = [f"Can you check invoice number {i} for the boiler job?" for i in range(256)]
    embedder.encode(short[:8])
    t0 = time.perf_counter()
    embedder.encode(short)
    short_s = (time.perf_counter() - t0) / len(short)
    t0 = time.perf_counter()
    for s in short[:32]:
        embedder.encode([s])
    single_s = (time.perf_counter() - t0) / 32
    return {
        "load": load,
        "pieces": len(pieces),
        "items": report.items,
        "piece_s": report.timings["embed"] / len(pieces),
        "item_s": report.timings["embed"] / report.items,
        "sample_store_s": report.seconds - report.timings["embed"] - report.timings.get("model_load", 0.0),
        "short_s": short_s,
        "single_s": single_s,
        "statements": statements,
    }


def count_statements(store, fn) -> int:
    seen = []
    store.db.conn.set_trace_callback(seen.append)
    try:
        fn()
    finally:
        store.db.conn.set_trace_callback(None)
    return len(seen)


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q))


def ms(times) -> tuple[float, float]:
    """Median and p99 of ``times`` (seconds), in milliseconds."""
    return statistics.median(times) * 1e3, percentile(times, 99) * 1e3


EFS = (16, 32, 64, 128, 256)


def make_data(n: int, n_queries: int, rng: np.random.Generator) -> dict:
    """The vectors, the JSON lines that store them, the queries and their exact top 10 (with its cost)."""
    centres = rng.normal(size=(max(50, n // 200), DIM)).astype(np.float32)
    vectors = clustered(n, rng, centres)
    queries = clustered(n_queries, rng, centres)
    lines = [
        json.dumps({"type": "document", "id": f"doc-{i}", "title": f"Synthetic document {i}",
                    "date": "2024-01-01", "text": f"item {i}"})
        for i in range(n)
    ]
    exact_times, exact_top = [], []
    for q in queries:
        t = time.perf_counter()
        scores = vectors @ q
        top = np.argpartition(-scores, 10)[:10]
        top = top[np.argsort(-scores[top])]
        exact_times.append(time.perf_counter() - t)
        exact_top.append({f"doc-{i}" for i in top})
    return {"n": n, "vectors": vectors, "queries": queries, "lines": lines, "exact_top": exact_top,
            "exact_ms": ms(exact_times)}


def ingest(open_store, data: dict) -> tuple[dict, object]:
    """Ingest ``data`` into a new store; the figures and the embedder (which hands out the data's vectors)."""
    embedder = SyntheticEmbedder(data["vectors"])
    t0 = time.perf_counter()
    with open_store(embedder) as store:
        report = store.ingest_jsonl(data["lines"], batch_size=128)
    total = time.perf_counter() - t0
    assert report.added == data["n"], report.summary()
    return {"ingest_s": total, "ingest_store_s": total - embedder.seconds, "ingest_timings": report.timings}, embedder


def search_figures(store, data: dict, count) -> dict:
    """Latency and recall of ``store.search_vectors`` at k=10, and statements per search for k = 1, 10, 100."""
    queries, exact_top = data["queries"], data["exact_top"]
    for q in queries:  # warm up: every query once, so the index's pages are in memory (PostgreSQL's cache too)
        store.search_vectors(q, k=10)
    times, hits = [], 0
    for q, want in zip(queries, exact_top):
        t = time.perf_counter()
        response = store.search_vectors(q, k=10)
        times.append(time.perf_counter() - t)
        hits += len({r.id for r in response.results} & want)
    sql = {k: count(store, lambda k=k: store.search_vectors(queries[0], k=k)) for k in (1, 10, 100)}
    return {"store_ms": ms(times), "recall": hits / (10 * len(queries)), "sql": sql}


def bench_embedded(data: dict, workdir: Path) -> dict:
    path = workdir / f"store-{data['n']}"
    out, embedder = ingest(lambda e: MemoryStore.open(path, embedder=e), data)
    t0 = time.perf_counter()
    store = MemoryStore.open(path, embedder=embedder)
    out["open_s"] = time.perf_counter() - t0
    out["index_mb"] = (path / "passages.hnsw").stat().st_size / 1e6
    out["db_mb"] = sum(f.stat().st_size for f in path.glob("memory.db*")) / 1e6
    try:
        queries, exact_top = data["queries"], data["exact_top"]
        index = store.indexes["document"]
        labels = dict(store.db.execute("SELECT label, item FROM passages").fetchall())
        for q in queries[:20]:  # warm up
            index.query(q, 10)
        hnsw_times = []
        for q in queries:
            t = time.perf_counter()
            index.query(q, 10)
            hnsw_times.append(time.perf_counter() - t)
        out["hnsw_ms"] = ms(hnsw_times)
        out.update(search_figures(store, data, count_statements))
        by_ef = {}
        for ef in EFS:
            index.ef_search = ef
            found, times = 0, []
            for q, want in zip(queries, exact_top):
                t = time.perf_counter()
                got, _ = index.query(q, 10)
                times.append(time.perf_counter() - t)
                found += len({labels[int(x)].split("#")[0] for x in got[0]} & want)
            by_ef[ef] = (found / (10 * len(queries)), statistics.median(times) * 1e3)
        index.ef_search = store.ef_search
        out["recall_by_ef"] = by_ef
    finally:
        store.close()
        shutil.rmtree(path, ignore_errors=True)
    return out


class PrivatePostgres:
    """A PostgreSQL server with pgvector in a temporary directory (the ``pgserver`` package)."""

    def __init__(self, root: Path):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is not set
            import pgserver

            self.server = pgserver.get_server(root, cleanup_mode="delete")
        self.url = self.server.get_uri()
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            row = conn.execute("SELECT current_setting('server_version'), extversion FROM pg_extension "
                               "WHERE extname = 'vector'").fetchone()
        self.version = f"PostgreSQL {row[0]} with pgvector {row[1]}" if row else "PostgreSQL"

    def close(self) -> None:
        self.server.cleanup()


def pg_statements(store, fn) -> int:
    import psycopg

    seen = []
    real_execute, real_many = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def execute(cur, query, *args, **kwargs):
        if query:  # the pool's liveness check at checkout is an empty query, no statement
            seen.append(query)
        return real_execute(cur, query, *args, **kwargs)

    def executemany(cur, query, *args, **kwargs):
        seen.append(query)
        return real_many(cur, query, *args, **kwargs)

    psycopg.Cursor.execute, psycopg.Cursor.executemany = execute, executemany  # type: ignore[method-assign]
    try:
        fn()
    finally:
        psycopg.Cursor.execute, psycopg.Cursor.executemany = real_execute, real_many  # type: ignore[method-assign]
    return len(seen)


def bench_postgres(data: dict, server: PrivatePostgres) -> dict:
    from cleo_rules.retrieval.postgres import PgStore

    url = f"{server.url}&tenant=bench-{data['n']}"
    out, embedder = ingest(lambda e: PgStore.open(url, embedder=e), data)
    t0 = time.perf_counter()
    store = PgStore.open(url, embedder=embedder)
    out["open_s"] = time.perf_counter() - t0
    try:
        stats = store.stats()
        out["index_mb"] = stats["indexes"]["passages"]["bytes"] / 1e6
        out["db_mb"] = stats["db_bytes"] / 1e6
        out.update(search_figures(store, data, pg_statements))
        by_ef = {}
        for ef in EFS:
            store.ef_search = ef
            found, times = 0, []
            for q, want in zip(data["queries"], data["exact_top"]):
                t = time.perf_counter()
                response = store.search_vectors(q, k=10)
                times.append(time.perf_counter() - t)
                found += len({r.id for r in response.results} & want)
            by_ef[ef] = (found / (10 * len(data["queries"])), statistics.median(times) * 1e3)
        store.ef_search = 64
        out["recall_by_ef"] = by_ef
        with store.database.connection() as conn:
            conn.execute(f"DROP SCHEMA {store.q} CASCADE")  # type: ignore[arg-type]
    finally:
        store.close()
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    parser.add_argument("--queries", type=int, default=200, help="queries per size")
    parser.add_argument("--backends", default="embedded,postgres", help="comma-separated: embedded, postgres")
    parser.add_argument("--workdir", type=Path, default=None, help="where to build the stores (default: a temp dir)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - {"embedded", "postgres"}
    if unknown or not backends:
        parser.error(f"--backends takes embedded and/or postgres, not {args.backends!r}")
    started = time.perf_counter()
    rng = np.random.default_rng(2024)

    real = real_embedding_cost()
    results: dict[str, list[dict]] = {b: [] for b in backends}
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        server = PrivatePostgres(Path(tempfile.mkdtemp(prefix="cleo-bench-pg-"))) if "postgres" in backends else None
        try:
            for n in sizes:
                data = make_data(n, args.queries, rng)
                for b in backends:
                    figures = bench_embedded(data, Path(tmp)) if b == "embedded" else bench_postgres(data, server)
                    results[b].append({"n": n, "exact_ms": data["exact_ms"], **figures})
        finally:
            if server is not None:
                server.close()

    print()
    print(f"Memory store benchmark  ({os.cpu_count()} CPUs; both backends cosine HNSW, M=16, ef_construction=200, "
          "ef_search=64)")
    print("  embedded: SQLite + hnswlib 0.8.0, one directory")
    if server is not None:
        print(f"  postgres: PgStore over a local Unix socket, {server.version} (pgserver), one schema per tenant")
    print()
    print("Real model, all-MiniLM-L6-v2 on CPU (load {:.1f} s):".format(real["load"]))
    print(f"  sample memory, {real['items']} items -> {real['pieces']} snippets/passages: "
          f"{real['piece_s'] * 1e3:.1f} ms per piece, {real['item_s'] * 1e3:.1f} ms per item "
          f"({1 / real['item_s']:.1f} items/s); store work besides embedding {real['sample_store_s']:.2f} s")
    print(f"  short sentences: {real['short_s'] * 1e3:.1f} ms each batched (64), "
          f"{real['single_s'] * 1e3:.1f} ms one at a time; SQL statements per search on the sample: {real['statements']}")
    print()
    print("Ingest (documents of one passage each, batches of 128; embedding by a stand-in that returns stored vectors):")
    header = ("backend", "vectors", "store items/s", "sql s", "index s", "embed s/item*", "items/s incl. embed*", "open s",
              "index MB", "tables MB")
    rows = []
    for b in backends:
        for r in results[b]:
            per_item = r["ingest_store_s"] / r["n"]
            rows.append((b, f"{r['n']:,}", f"{1 / per_item:,.0f}", f"{r['ingest_timings']['sql']:.1f}",
                         f"{r['ingest_timings'].get('index', 0.0):.1f}",
                         f"{real['short_s'] * 1e3:.1f} ms", f"{1 / (per_item + real['short_s']):,.0f}",
                         f"{r['open_s']:.2f}", f"{r['index_mb']:.0f}", f"{r['db_mb']:.0f}"))
    table(header, rows)
    print("  * real model on short sentences (one passage per item), measured above, not run on these items")
    print("  postgres: 'index MB' is the HNSW index of the passages; 'tables MB' the tenant's tables with their "
          "TOAST, without indexes")
    print()
    print(f"Search ({args.queries} queries, k=10, one query at a time; median / p99 milliseconds):")
    header = ("backend", "vectors", "store.search_vectors ms", "hnswlib alone ms", "exact numpy ms", "recall@10",
              "SQL per search k=1/10/100")
    rows = []
    for b in backends:
        for r in results[b]:
            rows.append((b, f"{r['n']:,}", "{:.3f} / {:.3f}".format(*r["store_ms"]),
                         "{:.3f} / {:.3f}".format(*r["hnsw_ms"]) if "hnsw_ms" in r else "-",
                         "{:.2f} / {:.2f}".format(*r["exact_ms"]), f"{r['recall']:.3f}",
                         "/".join(str(r["sql"][k]) for k in (1, 10, 100))))
    table(header, rows)
    if len(backends) == 2:
        print()
        print("PostgreSQL / embedded:")
        header = ("vectors", "store items/s", "search median", "search p99", "recall@10", "index bytes")
        rows = []
        for e, p in zip(results["embedded"], results["postgres"]):
            rows.append((f"{e['n']:,}",
                         f"{(e['ingest_store_s'] / p['ingest_store_s']):.2f}x",
                         f"{p['store_ms'][0] / e['store_ms'][0]:.1f}x", f"{p['store_ms'][1] / e['store_ms'][1]:.1f}x",
                         f"{p['recall'] - e['recall']:+.3f}", f"{p['index_mb'] / e['index_mb']:.2f}x"))
        table(header, rows)
        print("  (items/s and bytes as a ratio; recall as a difference)")
    print()
    print("Recall@10 by ef_search, with the median milliseconds a query costs (the stores use 64; embedded: hnswlib "
          "alone, postgres: the whole search):")
    header = ("backend", "vectors") + tuple(f"ef={e}" for e in EFS)
    rows = [(b, f"{r['n']:,}") + tuple("{:.3f} {:.2f}ms".format(*r["recall_by_ef"][e]) for e in EFS)
            for b in backends for r in results[b]]
    table(header, rows)
    for r in results.get("postgres", []):
        print(f"  postgres index at {r['n']:,}: {r['index_mb'] * 1e6 / r['n']:,.0f} bytes per vector "
              f"-> {r['index_mb'] * 1e6 / r['n'] * 1e6 / 2**30:.2f} GiB per million (extrapolated)")
    for r in results.get("embedded", []):
        print(f"  hnswlib index at {r['n']:,}: {r['index_mb'] * 1e6 / r['n']:,.0f} bytes per vector "
              f"-> {r['index_mb'] * 1e6 / r['n'] * 1e6 / 2**30:.2f} GiB per million (extrapolated)")
    print()
    print(f"total benchmark time {time.perf_counter() - started:.0f} s")


def table(header, rows) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print("  " + "  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    print("  " + "  ".join("-" * w for w in widths))
    for row in rows:
        print("  " + "  ".join(str(c).rjust(w) for c, w in zip(row, widths)))


if __name__ == "__main__":
    main()
