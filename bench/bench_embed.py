"""The embedding backends side by side: speed alone and beside other work, load, memory, agreement, recall.

Measured in one run, interleaved, for

* ``torch (N threads)``  the reference backend with torch's default thread count (the
                         project's behaviour before the thread setting),
* ``torch (1 thread)``   the reference backend at one thread,
* ``onnx int8``          the default backend (the shipped model, one thread),
* ``onnx fp32``          with ``--fp32``: a float32 export of the same model (exported
                         here with scripts/export_onnx.py), to show what the int8
                         quantisation trades.

**Speed.** Each backend runs in a worker process of its own (torch's thread count
belongs to the process); the driver asks the workers in turn, one at a time and in a
rotating order, to encode one short query, and each worker times its own encode. The
median and 95th percentile per backend, and each ratio to torch at one thread, are
printed for two phases: **idle**, then **busy**: beside a second process embedding in
a loop (the default backend at one thread: another cleo-rules process ingesting) plus
one pure-Python busy loop, on this machine's cores. Then each backend's busy median
over its idle median. Targets: onnx int8 at least 3x faster than torch at one thread
(idle), and its busy median at most 2.5x its idle one.

**Load and memory.** Each worker reports the seconds its model took to load (imports
included) and its resident memory after the first encode.

**Agreement and recall.** In this process: the cosine of the ONNX vectors to the torch
ones over every text of the recall sets; answer-recall@5 with fixed queries (the raw
message and the human rewrite) on the all-turn filter of the two dialogue sets
(``../shared/eval/dialogue``; the pool and the filter of ``eval_dialogue.py
--all-turns``), queries encoded one at a time, each backend's queries ranked in its own
pool; and the project's evaluation set (``cleo_rules/data/eval``, ``eval_retrieval.py``'s
replay): a store built with each backend, every turn searched raw, with the pack's query
and with its hand-written one, the irrelevant share of the top 3 (eval_retrieval.py's
figure) and of the top 5, and the share of each turn's relevant items found there. Target:
the dialogue recalls and the evaluation set's top-3 figures within 0.01 of the torch
reference.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_embed.py [--rounds 200] [--fp32] [--no-recall] [--no-speed]

Needs the [reference] extra (torch, sentence-transformers), as the development
environment has.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

QUERIES = [
    "Which van insurer did we choose last year?", "And what about the second one?",
    "How much did the boiler service cost in March?", "Is the kiln booked for Saturday?",
    "who else was on that album", "What did the plumber say about the valve?",
    "Can you compare the two quotes again?", "Did Jake's college start on Wednesday?",
    "what is the excess on the policy", "Remind me what we agreed with the landlord.",
    "Which glaze did we use for the mugs?", "When is the next invoice due?",
]


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# -- the worker process ------------------------------------------------------------------------

def make_embedder(spec: str):
    """``torch-default``, ``torch-1``, ``onnx`` or ``onnx:PATH`` (a directory with an ONNX export)."""
    from cleo_rules.retrieval.embed import Embedder

    if spec == "torch-default":
        import torch

        return Embedder(backend="torch", threads=torch.get_num_threads())
    if spec == "torch-1":
        return Embedder(backend="torch", threads=1)
    if spec.startswith("onnx:"):
        return Embedder(spec[5:], threads=1)
    return Embedder(threads=1)


def worker(spec: str) -> None:
    """Load the model, then answer ``N`` (encode query N, print the seconds) until stdin closes."""
    start = time.perf_counter()
    embedder = make_embedder(spec)
    embedder.encode([QUERIES[0]])
    load = time.perf_counter() - start
    threads = embedder.describe()["threads"]
    print(f"ready {load:.3f} {rss_mb():.0f} {threads}", flush=True)
    for line in sys.stdin:
        text = QUERIES[int(line) % len(QUERIES)]
        t0 = time.perf_counter()
        embedder.encode([text])
        print(f"{time.perf_counter() - t0:.6f}", flush=True)


def loop(spec: str) -> None:
    """Embed queries forever (the second process of the busy phase)."""
    embedder = make_embedder(spec)
    n = 0
    while True:
        embedder.encode([QUERIES[n % len(QUERIES)]])
        n += 1


# -- speed ---------------------------------------------------------------------------------------

class Worker:
    def __init__(self, name: str, spec: str):
        self.name = name
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", spec], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline().split()
        if not ready or ready[0] != "ready":
            raise SystemExit(f"worker {name} did not start")
        self.load_s, self.rss_mb, self.threads = float(ready[1]), float(ready[2]), int(ready[3])

    def encode(self, n: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)


def percentile(values, q):
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def phase(workers: list[Worker], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {w.name: [] for w in workers}
    for r in range(rounds):
        order = workers[r % len(workers):] + workers[: r % len(workers)]
        for w in order:
            times[w.name].append(w.encode(r))
    return times


def speed(specs: list[tuple[str, str]], rounds: int) -> dict:
    workers = [Worker(name, spec) for name, spec in specs]
    background: list[subprocess.Popen] = []
    try:
        phase(workers, 10)  # warm-up, discarded
        idle = phase(workers, rounds)
        background.append(subprocess.Popen([sys.executable, __file__, "--loop", "onnx"]))
        background.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        time.sleep(3.0)  # the loop's model loaded and running
        phase(workers, 5)
        busy = phase(workers, rounds)
    finally:
        for proc in background:
            proc.kill()
            proc.wait(30)
        for w in workers:
            w.close()
    return {"workers": workers, "idle": idle, "busy": busy}


def print_speed(result: dict, rounds: int) -> None:
    workers, idle, busy = result["workers"], result["idle"], result["busy"]
    ref = "torch (1 thread)"
    print(f"\nSingle-query encode, one at a time, {rounds} rounds per phase, workers interleaved "
          f"(ms; ratio = torch at one thread / this)")
    print(f"  {'backend':<22}{'threads':>8}{'load s':>8}{'RSS MB':>8}{'idle p50':>10}{'p95':>8}{'x torch1':>10}"
          f"{'busy p50':>10}{'p95':>8}{'x torch1':>10}{'busy/idle':>11}")
    for w in workers:
        i50, i95 = 1000 * statistics.median(idle[w.name]), 1000 * percentile(idle[w.name], 0.95)
        b50, b95 = 1000 * statistics.median(busy[w.name]), 1000 * percentile(busy[w.name], 0.95)
        ri = statistics.median(idle[ref]) / statistics.median(idle[w.name])
        rb = statistics.median(busy[ref]) / statistics.median(busy[w.name])
        print(f"  {w.name:<22}{w.threads:>8}{w.load_s:>8.2f}{w.rss_mb:>8.0f}{i50:>10.2f}{i95:>8.2f}{ri:>9.2f}x"
              f"{b50:>10.2f}{b95:>8.2f}{rb:>9.2f}x{b50 / i50:>10.2f}x")
    print("  busy: beside a second process embedding in a loop (onnx int8, one thread) and one busy loop")
    onnx = "onnx int8"
    ratio = statistics.median(idle[ref]) / statistics.median(idle[onnx])
    stall = statistics.median(busy[onnx]) / statistics.median(idle[onnx])
    print(f"  onnx int8 vs torch at one thread, idle: {ratio:.2f}x faster (target >= 3x: "
          f"{'met' if ratio >= 3 else 'NOT met'}); busy / idle {stall:.2f}x (target <= 2.5x: "
          f"{'met' if stall <= 2.5 else 'NOT met'})")


# -- agreement and recall ------------------------------------------------------------------------

def dialogue_recall(embedders: dict) -> dict:
    import numpy as np

    import eval_dialogue as ed

    out: dict = {}
    texts_seen: dict[str, list[str]] = {}
    for name in ed.DATASETS:
        rows = ed.load(name)
        picked = [r for r in rows if ed.all_turn(r)]
        pool = ed.answer_pool(rows)
        index = {t: i for i, t in enumerate(pool)}
        targets = np.array([index[r["answer"]] for r in picked])
        texts_seen[name] = pool
        for backend, embedder in embedders.items():
            pool_v = embedder.encode(pool)
            for mode in ("raw", "rewrite"):
                queries = [r["message"] if mode == "raw" else r["rewrite"] for r in picked]
                query_v = np.concatenate([embedder.encode([q]) for q in queries])  # one at a time, as a search
                sims = query_v @ pool_v.T
                own = sims[np.arange(len(picked)), targets]
                hits = (sims > own[:, None]).sum(axis=1) < ed.K
                out[(name, mode, backend)] = float(hits.mean())
            out[(name, "n", backend)] = len(picked)
            out[(name, "pool", backend)] = pool_v
    return out


EVAL_MODES = ("raw", "roles", "oracle")


def eval_set_recall(embedders: dict) -> dict:
    """eval_retrieval.py's replay with each backend's own store: per mode and k (3, its default, and 5), the
    irrelevant share of the top k (its figure) and the share of each turn's relevant items found in it."""
    from cleo_rules import load_pack

    import eval_retrieval as er

    pack, dialogues, memory = load_pack(), er.load_dialogues(), er.load_memory()
    out: dict = {}
    for backend, embedder in embedders.items():
        with tempfile.TemporaryDirectory(prefix="cleo-bench-embed-") as tmp:
            store = er.build_store(tmp, embedder, memory)
            records = er.replay(pack, store, dialogues, 5)
            store.close()
        for mode in EVAL_MODES:
            for k in (3, 5):
                recall, returned, irrelevant = [], 0, 0
                for r in records:
                    if r["expected"] == "skip" or r["queries"][mode] is None:
                        continue
                    results = r["results"][mode][:k]
                    returned += len(results)
                    irrelevant += sum(1 for x in results if not x["relevant"])
                    if r["relevant"]:
                        recall.append(len({x["id"] for x in results if x["relevant"]}) / len(set(r["relevant"])))
                out[(mode, k, "recall", backend)] = statistics.fmean(recall)
                out[(mode, k, "irrelevant", backend)] = irrelevant / returned if returned else float("nan")
                out[(mode, k, "n", backend)] = len(recall)
    return out


def print_recall(embedders: dict) -> None:
    import numpy as np

    names = list(embedders)
    started = time.perf_counter()
    dialogue = dialogue_recall(embedders)
    evalset = eval_set_recall(embedders)
    import eval_dialogue as ed

    print(f"\nAgreement with the torch reference (cosine of each answer-pool text's vector to torch's)")
    for backend in names[1:]:
        cos = np.concatenate([np.sum(dialogue[(d, "pool", backend)] * dialogue[(d, "pool", "torch")], axis=1)
                              for d in ed.DATASETS])
        print(f"  {backend:<12} {len(cos)} texts: min {cos.min():.4f}, 1st percentile {np.percentile(cos, 1):.4f}, "
              f"median {np.median(cos):.4f}, mean {cos.mean():.4f}")
    print(f"\nAnswer-recall@{ed.K}, all-turn filter (follow_up + substantive, with an answer, message >= "
          f"{ed.MIN_MESSAGE} chars), fixed queries encoded one at a time; difference to torch in brackets")
    print(f"  {'set':<16}{'query':<9}{'turns':>6}" + "".join(f"{n:>20}" for n in names))
    worst = 0.0
    for d in ed.DATASETS:
        for mode in ("raw", "rewrite"):
            ref = dialogue[(d, mode, "torch")]
            cells = []
            for n in names:
                value = dialogue[(d, mode, n)]
                worst = max(worst, abs(value - ref)) if n != "torch" and n.startswith("onnx int8") else worst
                cells.append(f"{value:.4f}" + (f" ({value - ref:+.4f})" if n != "torch" else ""))
            print(f"  {d:<16}{mode:<9}{dialogue[(d, 'n', 'torch')]:>6}" + "".join(f"{c:>20}" for c in cells))
    print("\nThe project's evaluation set (cleo_rules/data/eval, eval_retrieval.py's replay): a store built with each "
          "backend; top 3 is eval_retrieval.py's own figure, top 5 shown too")
    print(f"  {'query':<8}{'figure':<28}{'turns':>6}" + "".join(f"{n:>20}" for n in names))
    for k in (3, 5):
        for mode in EVAL_MODES:
            for figure, label in (("irrelevant", f"irrelevant share of top {k}"), ("recall", f"relevant-recall@{k}")):
                ref = evalset[(mode, k, figure, "torch")]
                cells = []
                for n in names:
                    value = evalset[(mode, k, figure, n)]
                    if k == 3 and n.startswith("onnx int8"):
                        worst = max(worst, abs(value - ref))
                    cells.append(f"{value:.4f}" + (f" ({value - ref:+.4f})" if n != "torch" else ""))
                print(f"  {mode:<8}{label:<28}{evalset[(mode, k, 'n', 'torch')]:>6}" + "".join(f"{c:>20}" for c in cells))
    print("  (raw: the message as typed; roles: the pack's query with the assistant's replies; oracle: the "
          "hand-written query)")
    print(f"  onnx int8: largest difference to torch, dialogue recall@5 and the evaluation set's top-3 figures: "
          f"{worst:.4f} (target <= 0.01: {'met' if worst <= 0.01 else 'NOT met'})"
          f"  ({time.perf_counter() - started:.0f} s)")


# -- main ------------------------------------------------------------------------------------------

def export_fp32(directory: Path) -> Path:
    """A float32 export of the reference model beside the shipped tokenizer (scripts/export_onnx.py --fp32)."""
    subprocess.run([sys.executable, str(ROOT / "scripts" / "export_onnx.py"), "--fp32", "--out", str(directory)],
                   check=True, capture_output=True, text=True)
    return directory


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=200, help="queries per backend and phase (default 200)")
    ap.add_argument("--fp32", action="store_true", help="also a float32 ONNX export, exported here")
    ap.add_argument("--no-recall", action="store_true", help="speed only")
    ap.add_argument("--no-speed", action="store_true", help="agreement and recall only")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--loop", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    if args.loop:
        loop(args.loop)
        return 0
    import onnxruntime
    import torch

    from cleo_rules.retrieval.onnx_backend import MODEL_SHA256, bundled_model_dir

    model = bundled_model_dir() / "model.onnx"
    print(f"bench_embed: {os.cpu_count()} CPUs; torch {torch.__version__} (default {torch.get_num_threads()} "
          f"threads), onnxruntime {onnxruntime.__version__}; shipped model {model.stat().st_size / 1e6:.1f} MB "
          f"(sha256 {MODEL_SHA256[:12]})")
    with tempfile.TemporaryDirectory(prefix="cleo-fp32-") as tmp:
        fp32 = export_fp32(Path(tmp)) if args.fp32 else None
        if fp32 is not None:
            print(f"float32 export for comparison: {(fp32 / 'model.onnx').stat().st_size / 1e6:.1f} MB")
        if not args.no_speed:
            specs = [(f"torch ({torch.get_num_threads()} threads)", "torch-default"), ("torch (1 thread)", "torch-1"),
                     ("onnx int8", "onnx")]
            if fp32 is not None:
                specs.append(("onnx fp32", f"onnx:{fp32}"))
            print_speed(speed(specs, args.rounds), args.rounds)
        if not args.no_recall:
            from cleo_rules.retrieval.embed import Embedder

            embedders = {"torch": Embedder(backend="torch", threads=1), "onnx int8": Embedder(threads=1)}
            if fp32 is not None:
                embedders["onnx fp32"] = Embedder(fp32, threads=1)
            print_recall(embedders)
    return 0


if __name__ == "__main__":
    sys.exit(main())
