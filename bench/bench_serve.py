"""The service under load: ``/v1/classify`` and ``/v1/tenants/{t}/turns`` over loopback.

Starts ``cleo-rules serve --memory`` in its own process on a free loopback
port, ingests the sample memory into one tenant through the service, and
drives it with a bounded async client (httpx, one connection per concurrent
request) at concurrency 1, 16 and 64. For each endpoint and level it prints
requests/s, p50/p95/p99 latency, errors, and requests shed (503 with
``Retry-After`` because the tenant's queue was full), beside the time of the
same call made in process (``Pack.classify``, ``Recall.turn``). Then a soak
at concurrency 16 (classify and turns, three to one) reports the service's
RSS at its start and end. Every target of the service is checked and
printed with PASS or FAIL:

* zero errors on ``/v1/classify`` at every level;
* on ``/turns``, no 5xx other than requests shed under overload;
* at concurrency 1, the classify round trip's median at most 3 ms, and the
  time inside the service (``Server-Timing: app``) at most 0.5 ms over the
  in-process call;
* RSS grows under 10% during the soak.

The messages are the evaluation dialogues' user turns (``cleo_rules/data/eval``),
each with the user turns before it as history. The client runs in this
process and shares the machine's cores with the service: at high
concurrency its own cost is part of what is measured. The load average is
printed at the start and the end; rerun when the machine is quiet if the
figures look off.

Usage::

    .venv/bin/python bench/bench_serve.py [--classify-requests 3000] [--turn-requests 300] [--soak 60]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import httpx  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TENANT = "bench"
LEVELS = (1, 16, 64)
JSON = {"Content-Type": "application/json"}


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def workload() -> list[tuple[str, list[str]]]:
    """Every user turn of the evaluation dialogues, with the user turns before it as history."""
    data = yaml.safe_load((ROOT / "cleo_rules" / "data" / "eval" / "dialogues.yaml").read_text(encoding="utf-8"))
    pairs = []
    for dialogue in data["dialogues"]:
        messages = [t["message"] for t in dialogue["turns"]]
        pairs.extend((m, messages[:i]) for i, m in enumerate(messages))
    return pairs


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


# -- in process ---------------------------------------------------------------------------------

def in_process_classify(pack, pairs, repeat: int = 20) -> list[float]:
    """Seconds per ``pack.classify`` call, each timed alone, over the workload ``repeat`` times."""
    times = []
    for _ in range(repeat):
        for message, history in pairs:
            start = time.perf_counter()
            pack.classify(message, history)
            times.append(time.perf_counter() - start)
    return times


def in_process_turns(store_dir: Path, pack, pairs, n: int) -> list[float]:
    from cleo_rules.retrieval import MemoryStore
    from cleo_rules.turn import Recall

    with MemoryStore.open(store_dir) as store:
        recall = Recall(store, pack)
        for message, history in pairs[:10]:  # warm-up: the model's first calls
            recall.turn(message, history)
        times = []
        for i in range(n):
            message, history = pairs[i % len(pairs)]
            start = time.perf_counter()
            recall.turn(message, history)
            times.append(time.perf_counter() - start)
    return times


# -- over HTTP -----------------------------------------------------------------------------------

class Outcome:
    __slots__ = ("latency", "status", "app_ms", "shed", "error")

    def __init__(self, latency, status, app_ms=None, shed=False, error=None):
        self.latency, self.status, self.app_ms, self.shed, self.error = latency, status, app_ms, shed, error


_APP = re.compile(r"\bapp;dur=([\d.]+)")


async def drive(url: str, requests: list[tuple[str, bytes]], concurrency: int, *, seconds: float | None = None,
                sample=None) -> tuple[list[Outcome], float]:
    """Send ``requests`` ((path, body) pairs) with at most ``concurrency`` in flight; outcomes and seconds.

    With ``seconds``, the requests are sent over and over until that much time has passed, and
    ``sample()`` (if given) is called every 5 seconds meanwhile.
    """
    outcomes: list[Outcome] = []
    queue = iter(requests) if seconds is None else itertools.cycle(requests)
    deadline = None if seconds is None else time.perf_counter() + seconds
    # one client and one keep-alive connection per worker: httpx's shared pool costs the client more CPU per
    # request the more connections it holds, which on two cores would be measured as the service's latency
    clients = [httpx.AsyncClient(base_url=url, timeout=60.0, limits=httpx.Limits(max_connections=1))
               for _ in range(concurrency)]
    try:
        async def sampler():
            while time.perf_counter() < deadline:
                await asyncio.sleep(min(5.0, max(0.0, deadline - time.perf_counter())))
                sample()

        async def worker(client):
            for path, body in queue:
                if deadline is not None and time.perf_counter() >= deadline:
                    break
                start = time.perf_counter()
                try:
                    r = await client.post(path, content=body, headers=JSON)
                except httpx.HTTPError as exc:
                    outcomes.append(Outcome(time.perf_counter() - start, None, error=type(exc).__name__))
                    continue
                latency = time.perf_counter() - start
                m = _APP.search(r.headers.get("server-timing", ""))
                shed = (r.status_code == 503 and "retry-after" in r.headers
                        and r.headers.get("content-type") == "application/problem+json"
                        and r.json().get("type") == "/problems/overloaded")
                outcomes.append(Outcome(latency, r.status_code, float(m.group(1)) if m else None, shed))

        started = time.perf_counter()
        tasks = [worker(client) for client in clients]
        if sample is not None and deadline is not None:
            tasks.append(sampler())
        await asyncio.gather(*tasks)
        return outcomes, time.perf_counter() - started
    finally:
        for client in clients:
            await client.aclose()


def summarise(outcomes: list[Outcome], seconds: float) -> dict:
    ok = [o for o in outcomes if o.status is not None and 200 <= o.status < 300]
    shed = [o for o in outcomes if o.shed]
    errors = [o for o in outcomes if o not in ok and not o.shed]
    lat = [o.latency * 1000 for o in ok]
    return {
        "n": len(outcomes), "ok": len(ok), "shed": len(shed), "errors": len(errors),
        "error_kinds": sorted({str(o.status or o.error) for o in errors}),
        "five_xx_other": sum(1 for o in errors if o.status is not None and o.status >= 500),
        "rps": len(ok) / seconds if seconds else 0.0,
        "p50": percentile(lat, 0.5), "p95": percentile(lat, 0.95), "p99": percentile(lat, 0.99),
        "app_p50": percentile([o.app_ms for o in ok if o.app_ms is not None], 0.5),
    }


def bodies_classify(pairs, n):
    return [("/v1/classify", json.dumps({"message": m, "history": h}).encode()) for m, h in
            (pairs[i % len(pairs)] for i in range(n))]


def bodies_turns(pairs, n):
    return [(f"/v1/tenants/{TENANT}/turns", json.dumps({"message": m, "history": h}).encode()) for m, h in
            (pairs[i % len(pairs)] for i in range(n))]


def row(label: str, s: dict) -> str:
    return (f"{label:<28} {s['rps']:>9.1f} {s['p50']:>8.2f} {s['p95']:>8.2f} {s['p99']:>8.2f} "
            f"{s['ok']:>6} {s['shed']:>6} {s['errors']:>6}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classify-requests", type=int, default=3000, help="requests per level (default 3000)")
    parser.add_argument("--turn-requests", type=int, default=300, help="requests per level (default 300)")
    parser.add_argument("--soak", type=float, default=60.0, help="soak seconds at concurrency 16 (default 60)")
    parser.add_argument("--queue", type=int, default=16, help="the service's --queue (default: its default, 16)")
    args = parser.parse_args(argv)

    from cleo_rules import load_pack

    pack = load_pack()
    pairs = workload()
    print(f"bench_serve: {len(pairs)} distinct (message, history) pairs from the evaluation dialogues; "
          f"load average at start {load()} on {os.cpu_count()} cores")

    local_classify = in_process_classify(pack, pairs)
    tmp = Path(tempfile.mkdtemp(prefix="cleo-bench-serve-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp / "service.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "serve", "--memory", str(tmp / "memory"),
                             "--port", str(port), "--queue", str(args.queue)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    results: dict = {}
    try:
        started = time.perf_counter()
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the service exited: {(tmp / 'service.log').read_text()}")
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        print(f"service pid {proc.pid} ready in {time.perf_counter() - started:.1f} s (pack loaded, model warm)")
        sample = (ROOT / "cleo_rules" / "data" / "sample_memory.jsonl").read_bytes()
        r = httpx.post(f"{url}/v1/tenants/{TENANT}/memory", content=sample,
                       headers={"Content-Type": "application/x-ndjson"}, timeout=600)
        r.raise_for_status()
        print(f"ingested the sample memory into tenant {TENANT!r}: {r.json()['added']} items "
              f"in {r.json()['seconds']:.1f} s")

        # warm-up, not counted
        asyncio.run(drive(url, bodies_classify(pairs, 300), 4))
        asyncio.run(drive(url, bodies_turns(pairs, 40), 2))

        for level in LEVELS:
            outcomes, seconds = asyncio.run(drive(url, bodies_classify(pairs, args.classify_requests), level))
            results[("classify", level)] = summarise(outcomes, seconds)
        for level in LEVELS:
            outcomes, seconds = asyncio.run(drive(url, bodies_turns(pairs, args.turn_requests), level))
            results[("turns", level)] = summarise(outcomes, seconds)

        # soak: classify and turns, three to one, at concurrency 16 for --soak seconds
        rss_start = rss_kib(proc.pid)
        mixed = [b for i in range(200) for b in (bodies_turns(pairs[i % len(pairs):], 1) if i % 4 == 3
                                                  else bodies_classify(pairs[i % len(pairs):], 1))]
        rss_samples = [rss_start]
        soak_outcomes, soak_seconds = asyncio.run(drive(url, mixed, 16, seconds=args.soak,
                                                        sample=lambda: rss_samples.append(rss_kib(proc.pid))))
        rss_end = rss_kib(proc.pid)
        soak = summarise(soak_outcomes, soak_seconds)
        metrics = httpx.get(url + "/metrics").text
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(60)
        log.close()

    local_turns = in_process_turns(tmp / "memory" / TENANT, pack, pairs, min(args.turn_requests, 300))
    shutil.rmtree(tmp, ignore_errors=True)

    # -- report ------------------------------------------------------------------------------------
    lc50 = statistics.median(local_classify) * 1000
    lt50 = statistics.median(local_turns) * 1000
    print()
    print(f"{'endpoint, concurrency':<28} {'req/s':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
          f"{'ok':>6} {'shed':>6} {'errors':>6}")
    for level in LEVELS:
        print(row(f"/v1/classify       c={level}", results[("classify", level)]))
    print(row("in process Pack.classify", {"rps": 1000 / lc50, "p50": lc50, "p95": percentile(local_classify, .95) * 1000,
                                           "p99": percentile(local_classify, .99) * 1000, "ok": len(local_classify),
                                           "shed": 0, "errors": 0}))
    for level in LEVELS:
        print(row(f"/v1/tenants/t/turns c={level}", results[("turns", level)]))
    print(row("in process Recall.turn", {"rps": 1000 / lt50, "p50": lt50, "p95": percentile(local_turns, .95) * 1000,
                                         "p99": percentile(local_turns, .99) * 1000, "ok": len(local_turns),
                                         "shed": 0, "errors": 0}))
    c1 = results[("classify", 1)]
    t1 = results[("turns", 1)]
    print()
    print(f"Server-Timing app, median, c=1: classify {c1['app_p50']:.3f} ms (in process {lc50:.3f} ms, "
          f"{c1['app_p50'] - lc50:+.3f} ms); turns {t1['app_p50']:.2f} ms (in process {lt50:.2f} ms, "
          f"{t1['app_p50'] - lt50:+.2f} ms)")
    print(f"round trip over loopback, median, c=1: classify {c1['p50']:.2f} ms "
          f"({c1['p50'] - c1['app_p50']:.2f} ms outside the service: client, HTTP, loopback)")
    growth = (rss_end - rss_start) / rss_start
    print(f"soak {soak_seconds:.0f} s at c=16 (classify:turns 3:1): {soak['ok']} ok ({soak['rps']:.0f} req/s), "
          f"{soak['shed']} shed, {soak['errors']} errors; p50 {soak['p50']:.2f} ms, p99 {soak['p99']:.2f} ms")
    print(f"RSS of the service: {rss_start / 1024:.1f} MiB at the start of the soak, {rss_end / 1024:.1f} MiB at "
          f"the end ({growth * 100:+.1f}%; lowest {min(rss_samples) / 1024:.1f}, highest "
          f"{max(rss_samples) / 1024:.1f} MiB)")
    shed_total = sum(float(line.split()[-1]) for line in metrics.splitlines()
                     if line.startswith("cleo_requests_shed_total"))
    print(f"cleo_requests_shed_total at the end: {shed_total:.0f}")
    for kind in ("classify", "turns"):
        for level in LEVELS:
            kinds = results[(kind, level)]["error_kinds"]
            if kinds:
                print(f"  {kind} c={level} errors: {', '.join(kinds)}")

    checks = [
        ("zero errors on /v1/classify at every level",
         all(results[("classify", c)]["errors"] == 0 for c in LEVELS),
         ", ".join(f"c={c}: {results[('classify', c)]['errors']}" for c in LEVELS)),
        ("/turns: no 5xx but requests shed (503 + Retry-After)",
         all(results[("turns", c)]["five_xx_other"] == 0 and results[("turns", c)]["errors"] == 0 for c in LEVELS),
         ", ".join(f"c={c}: {results[('turns', c)]['shed']} shed, {results[('turns', c)]['errors']} errors"
                   for c in LEVELS)),
        ("c=1 classify round trip p50 <= 3 ms", c1["p50"] <= 3.0, f"{c1['p50']:.2f} ms"),
        ("c=1 Server-Timing <= in-process + 0.5 ms", c1["app_p50"] - lc50 <= 0.5,
         f"{c1['app_p50']:.3f} - {lc50:.3f} = {c1['app_p50'] - lc50:.3f} ms"),
        ("RSS grows < 10% in the soak", growth < 0.10, f"{growth * 100:+.1f}%"),
        ("soak: no errors", soak["errors"] == 0, f"{soak['errors']} errors, {soak['shed']} shed"),
    ]
    print()
    for name, ok, detail in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name:<46} {detail}")
    print(f"\nload average at end {load()}")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
