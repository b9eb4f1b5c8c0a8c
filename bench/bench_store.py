"""Memory store cost: ingest throughput, search latency, recall and SQL per search.

For each store size (10k and 100k vectors by default) this builds a real
:class:`~cleo_rules.retrieval.MemoryStore` on disk through ``ingest_jsonl``
(SQLite rows, embedding BLOBs, hnswlib index, atomic saves), then measures:

* ingest throughput of the store itself (items/s, embedding excluded), with
  the embedding time per item shown beside it and the end-to-end rate that
  the two give together;
* opening the store again: sidecar check, SHA-256 of the index file, load,
  and the label check against SQLite;
* per-query latency of hnswlib alone, of ``store.search_vectors`` (hnswlib +
  one SQL statement for title, date and text) and of exact numpy search over
  the same vectors;
* recall@10 of ``store.search_vectors`` against that exact search, at the
  store's ``ef_search`` and at a few other values;
* SQL statements per search (sqlite3 trace callback), for k = 1, 10 and 100.

Embedding 100k texts with the real model would take far too long on CPU, so
the stored vectors are synthetic: unit vectors drawn around a few hundred
random centres (clustered, like sentence embeddings), 384-d, handed to the
store by a stand-in embedder. The real model's cost is measured separately,
on the bundled sample memory's snippets and passages and on short sentences.

Usage: python bench/bench_store.py [--sizes 10000,100000] [--queries 200]
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


def bench_size(n: int, n_queries: int, rng: np.random.Generator, workdir: Path) -> dict:
    centres = rng.normal(size=(max(50, n // 200), DIM)).astype(np.float32)
    vectors = clustered(n, rng, centres)
    queries = clustered(n_queries, rng, centres)
    lines = [
        json.dumps({"type": "document", "id": f"doc-{i}", "title": f"Synthetic document {i}",
                    "date": "2024-01-01", "text": f"item {i}"})
        for i in range(n)
    ]
    path = workdir / f"store-{n}"
    embedder = SyntheticEmbedder(vectors)
    out = {"n": n}

    t0 = time.perf_counter()
    with MemoryStore.open(path, embedder=embedder) as store:
        report = store.ingest_jsonl(lines, batch_size=128)
    total = time.perf_counter() - t0
    out["ingest_s"] = total
    out["ingest_store_s"] = total - embedder.seconds
    out["ingest_timings"] = report.timings
    assert report.added == n, report.summary()

    t0 = time.perf_counter()
    store = MemoryStore.open(path, embedder=embedder)
    out["open_s"] = time.perf_counter() - t0
    out["index_mb"] = (path / "passages.hnsw").stat().st_size / 1e6
    out["db_mb"] = sum(f.stat().st_size for f in path.glob("memory.db*")) / 1e6
    try:
        # the exact answer, over the vectors as stored in SQLite
        rows = store.db.execute("SELECT label, embedding FROM passages ORDER BY label").fetchall()
        labels = np.array([r[0] for r in rows])
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), DIM)
        item_of = {int(label): f"doc-{i}" for i, label in enumerate(labels)}  # ingested in order

        exact_times, exact_top = [], []
        for q in queries:
            t = time.perf_counter()
            scores = matrix @ q
            top = np.argpartition(-scores, 10)[:10]
            top = top[np.argsort(-scores[top])]
            exact_times.append(time.perf_counter() - t)
            exact_top.append({item_of[int(labels[i])] for i in top})

        index = store.indexes["document"]
        for q in queries[:20]:  # warm up
            index.query(q, 10)
        hnsw_times = []
        for q in queries:
            t = time.perf_counter()
            index.query(q, 10)
            hnsw_times.append(time.perf_counter() - t)

        store_times, hits = [], 0
        for q, want in zip(queries, exact_top):
            t = time.perf_counter()
            response = store.search_vectors(q, k=10)
            store_times.append(time.perf_counter() - t)
            hits += len({r.id for r in response.results} & want)
        out["recall"] = hits / (10 * len(queries))

        recall_by_ef = {}
        for ef in (16, 32, 64, 128, 256):
            index.ef_search = ef
            found = 0
            for q, want in zip(queries, exact_top):
                got, _ = index.query(q, 10)
                found += len({item_of[int(x)] for x in got[0]} & want)
            recall_by_ef[ef] = found / (10 * len(queries))
        index.ef_search = store.ef_search
        out["recall_by_ef"] = recall_by_ef

        out["sql"] = {k: count_statements(store, lambda k=k: store.search_vectors(queries[0], k=k)) for k in (1, 10, 100)}
        out["exact_ms"] = (statistics.median(exact_times) * 1e3, percentile(exact_times, 95) * 1e3)
        out["hnsw_ms"] = (statistics.median(hnsw_times) * 1e3, percentile(hnsw_times, 95) * 1e3)
        out["store_ms"] = (statistics.median(store_times) * 1e3, percentile(store_times, 95) * 1e3)
    finally:
        store.close()
        shutil.rmtree(path, ignore_errors=True)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    parser.add_argument("--queries", type=int, default=200, help="queries per size")
    parser.add_argument("--workdir", type=Path, default=None, help="where to build the stores (default: a temp dir)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    started = time.perf_counter()
    rng = np.random.default_rng(2024)

    real = real_embedding_cost()
    results = []
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for n in sizes:
            results.append(bench_size(n, args.queries, rng, Path(tmp)))

    print()
    print("Memory store benchmark  (hnswlib 0.8.0 cosine, M=16, ef_construction=200, ef_search=64; "
          f"{os.cpu_count()} CPUs)")
    print()
    print("Real model, all-MiniLM-L6-v2 on CPU (load {:.1f} s):".format(real["load"]))
    print(f"  sample memory, {real['items']} items -> {real['pieces']} snippets/passages: "
          f"{real['piece_s'] * 1e3:.1f} ms per piece, {real['item_s'] * 1e3:.1f} ms per item "
          f"({1 / real['item_s']:.1f} items/s); store work besides embedding {real['sample_store_s']:.2f} s")
    print(f"  short sentences: {real['short_s'] * 1e3:.1f} ms each batched (64), "
          f"{real['single_s'] * 1e3:.1f} ms one at a time; SQL statements per search on the sample: {real['statements']}")
    print()
    print("Ingest (documents of one passage each, batches of 128; embedding by a stand-in that returns stored vectors):")
    header = ("vectors", "store items/s", "sql s", "index s", "save s", "embed s/item*", "items/s incl. embed*",
              "open s", "index MB", "db MB")
    rows = []
    for r in results:
        t = r["ingest_timings"]
        per_item_store = r["ingest_store_s"] / r["n"]
        rows.append((
            f"{r['n']:,}", f"{1 / per_item_store:,.0f}", f"{t['sql']:.1f}", f"{t['index']:.1f}", f"{t['save']:.1f}",
            f"{real['short_s'] * 1e3:.1f} ms", f"{1 / (per_item_store + real['short_s']):,.0f}",
            f"{r['open_s']:.2f}", f"{r['index_mb']:.0f}", f"{r['db_mb']:.0f}",
        ))
    table(header, rows)
    print("  * real model on short sentences (one passage per item), measured above, not run on these items")
    print()
    print(f"Search ({args.queries} queries, k=10, single query at a time; median / p95 milliseconds):")
    header = ("vectors", "hnswlib ms", "store.search_vectors ms", "exact numpy ms", "recall@10", "SQL per search k=1/10/100")
    rows = [(
        f"{r['n']:,}",
        "{:.3f} / {:.3f}".format(*r["hnsw_ms"]),
        "{:.3f} / {:.3f}".format(*r["store_ms"]),
        "{:.2f} / {:.2f}".format(*r["exact_ms"]),
        f"{r['recall']:.3f}",
        "/".join(str(r["sql"][k]) for k in (1, 10, 100)),
    ) for r in results]
    table(header, rows)
    print()
    print("Recall@10 of hnswlib by ef_search (the store uses 64):")
    efs = sorted(results[0]["recall_by_ef"]) if results else []
    table(("vectors",) + tuple(f"ef={e}" for e in efs),
          [(f"{r['n']:,}",) + tuple(f"{r['recall_by_ef'][e]:.3f}" for e in efs) for r in results])
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
