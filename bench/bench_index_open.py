"""Read-only open of an embedded store whose index pair agrees, beside one whose pair disagrees.

Builds one store of ``--n`` synthetic 384-d vectors (100k by default, through
``ingest_jsonl``, as bench/bench_store.py does) in two steps, keeping the
sidecar of the first save. A copy of the store then gets that older sidecar
beside the newer index file: the pair disagrees (the state a save of the old
layout left when killed between its two renames). Both are opened read-only
(``MemoryStore.open(..., read_only=True)`` then ``close``), interleaved, for
``--rounds`` rounds; the disagreeing store is checked in full, loaded and
reconciled with SQLite rather than rebuilt, and says so in one warning.

Usage: python bench/bench_index_open.py [--n 100000] [--rounds 7] [--keep DIR]

``--keep DIR`` keeps the built store in ``DIR`` and reuses it on the next run
with the same ``--n`` (building takes minutes; opening, seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import DIM, ROOT, SyntheticEmbedder, clustered  # noqa: E402

sys.path.insert(0, str(ROOT))

from cleo_rules.retrieval import MemoryStore  # noqa: E402
from cleo_rules.retrieval.hnsw_file import sidecar_path  # noqa: E402

LATER = 100  # documents written by the second save


class Embedder(SyntheticEmbedder):
    """bench_store's stand-in, which also embeds texts that are not ``"item <n>"`` (the store's probe)."""

    def encode(self, texts):
        if all(t.startswith("item ") for t in texts):
            return super().encode(texts)
        return np.stack([self.vectors[hash(t) % len(self.vectors)] for t in texts])


def make_embedder(n: int) -> Embedder:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(max(50, n // 200), DIM)).astype(np.float32)
    return Embedder(clustered(n, rng, centres))


def build(path: Path, n: int) -> tuple[SyntheticEmbedder, bytes]:
    """The store at ``path`` with ``n`` documents; its embedder, and the passage sidecar of the save before the last."""
    embedder = make_embedder(n)
    lines = [json.dumps({"type": "document", "id": f"doc-{i}", "title": f"Synthetic document {i}",
                         "date": "2024-01-01", "text": f"item {i}"}) for i in range(n)]
    with MemoryStore.open(path, embedder=embedder) as store:
        store.ingest_jsonl(lines[: n - LATER], batch_size=128)
    earlier = sidecar_path(path / "passages.hnsw").read_bytes()
    with MemoryStore.open(path, embedder=embedder) as store:
        store.ingest_jsonl(lines[n - LATER :], batch_size=128)
    return embedder, earlier


def disagree(path: Path, earlier: bytes) -> None:
    """Put the earlier sidecar beside the current index file (named by it, so only its bytes disagree)."""
    current = json.loads(sidecar_path(path / "passages.hnsw").read_text())
    old = json.loads(earlier)
    old["file"] = current["file"]
    sidecar_path(path / "passages.hnsw").write_text(json.dumps(old))


def open_once(path: Path, embedder) -> tuple[float, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        store = MemoryStore.open(path, embedder=embedder, read_only=True)
        seconds = time.perf_counter() - start
        store.search_vectors(embedder.vectors[:1], k=5)
        store.close()
    return seconds, [str(w.message) for w in caught]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="keep the built store in DIR/<n> and reuse it on later runs")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.keep is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-index-open-")))
        else:
            work = args.keep / str(args.n)
            work.mkdir(parents=True, exist_ok=True)
        sound, disagreeing, earlier_file = work / "sound", work / "disagreeing", work / "earlier-sidecar.json"
        if earlier_file.exists():
            embedder, earlier = make_embedder(args.n), earlier_file.read_bytes()
            print(f"reusing the store of {args.n} vectors in {work}")
        else:
            shutil.rmtree(sound, ignore_errors=True)
            t = time.perf_counter()
            embedder, earlier = build(sound, args.n)
            print(f"built a store of {args.n} vectors in {time.perf_counter() - t:.1f} s")
            if args.keep is not None:
                earlier_file.write_bytes(earlier)
        shutil.rmtree(disagreeing, ignore_errors=True)
        shutil.copytree(sound, disagreeing)
        disagree(disagreeing, earlier)
        times: dict[str, list[float]] = {"sound": [], "disagreeing": []}
        said: dict[str, list[str]] = {}
        for _ in range(args.rounds):  # interleaved
            for name, path in (("sound", sound), ("disagreeing", disagreeing)):
                seconds, messages = open_once(path, embedder)
                times[name].append(seconds)
                said[name] = messages
        sound_s, bad_s = statistics.median(times["sound"]), statistics.median(times["disagreeing"])
        print(f"\nread-only open, {args.n} vectors, median of {args.rounds} interleaved rounds")
        print(f"{'store':<14}{'median s':>10}{'min s':>10}{'max s':>10}{'warnings':>10}")
        for name in times:
            print(f"{name:<14}{statistics.median(times[name]):>10.3f}{min(times[name]):>10.3f}"
                  f"{max(times[name]):>10.3f}{len(said[name]):>10}")
        print(f"ratio disagreeing / sound: {bad_s / sound_s:.2f} (target at most 2.00)")
        for message in said["disagreeing"]:
            print(f"  warning: {message}")


if __name__ == "__main__":
    main()
