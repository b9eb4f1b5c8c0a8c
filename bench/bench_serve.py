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

**Fair turns** (``--part fair``, or after the load with ``--part all``): one
tenant's turns while another tenant ingests a large file (``--ingest-mb``,
1.5 MB of the sample memory under new ids). This checkout and another one
(``--baseline DIR``: the code before the embedding scheduler) each run as
their own service in the same run; each takes its turn, rounds alternating
which goes first. A turn is sent every ``--pace`` seconds, one at a time:
first with nothing else running (idle), then while the other tenant's ingest
runs, until it ends. For each checkout it prints the turns' p50/p95/max idle
and during the ingest, the embed stage of those turns (``Server-Timing``),
and the ingest's own time, with the target checked on this checkout:

* during another tenant's ingest, a turn's p95 at most 3x its idle p95.

Usage::

    .venv/bin/python bench/bench_serve.py [--classify-requests 3000] [--turn-requests 300] [--soak 60]
    .venv/bin/python bench/bench_serve.py --part fair --baseline ../main-before [--ingest-mb 1.5] [--rounds 2]
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

import threading  # noqa: E402

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
    parser.add_argument("--part", choices=("all", "load", "fair"), default="all",
                        help="the load levels and soak, the fair turns during another tenant's ingest, or both")
    parser.add_argument("--classify-requests", type=int, default=3000, help="requests per level (default 3000)")
    parser.add_argument("--turn-requests", type=int, default=300, help="requests per level (default 300)")
    parser.add_argument("--soak", type=float, default=60.0, help="soak seconds at concurrency 16 (default 60)")
    parser.add_argument("--queue", type=int, default=16, help="the service's --queue (default: its default, 16)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="fair turns: another checkout to run beside this one (the code before the change)")
    parser.add_argument("--ingest-mb", type=float, default=1.5, help="fair turns: the other tenant's ingest (MB)")
    parser.add_argument("--idle-turns", type=int, default=150, help="fair turns: turns with nothing else running")
    parser.add_argument("--pace", type=float, default=0.05, help="fair turns: seconds between one turn and the next")
    parser.add_argument("--rounds", type=int, default=1, help="fair turns: rounds, alternating which checkout "
                                                              "goes first (default 1)")
    args = parser.parse_args(argv)

    pairs = workload()
    print(f"bench_serve: {len(pairs)} distinct (message, history) pairs from the evaluation dialogues; "
          f"load average at start {load()} on {os.cpu_count()} cores")
    ok = True
    if args.part in ("all", "load"):
        ok = load_part(args, pairs) and ok
    if args.part in ("all", "fair"):
        ok = fair_part(args, pairs) and ok
    print(f"\nload average at end {load()}")
    return 0 if ok else 1


def load_part(args, pairs) -> bool:
    """The service at concurrency 1, 16 and 64, and the soak; True when every target is met."""
    from cleo_rules import load_pack

    pack = load_pack()

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
    return all(ok for _, ok, _ in checks)


# -- fair turns: one tenant's turns during another tenant's ingest ------------------------------------------------

CHAT, BULK = "chat", "bulk"
_EMBED = re.compile(r"\bembed;dur=([\d.]+)")


class ServeProcess:
    """``cleo-rules serve`` started with ``args`` on a free loopback port, its output in ``<tmp>/<name>.log``, ready
    when ``/readyz`` answers 200, stopped by its pid."""

    def __init__(self, name: str, args: list[str], tmp: Path, cwd: Path, env: dict):
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / f"{name.replace(' ', '-')}.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "serve", *args, "--port", str(self.port)],
                                     stdout=self._log, stderr=subprocess.STDOUT, cwd=cwd, env=env)

    def wait_ready(self, timeout: float = 300.0) -> None:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the {self.name} service exited: {self.log_path.read_text()}")
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"the {self.name} service was not ready in {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)  # by its pid
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()


class Served(ServeProcess):
    """``cleo-rules serve --memory`` of one checkout (its own code: run from its directory), on a free port."""

    def __init__(self, name: str, code: Path, tmp: Path):
        self.code = code
        env = {**os.environ, "PYTHONPATH": str(code)}
        self.imports = subprocess.run([sys.executable, "-c", "import cleo_rules; print(cleo_rules.__file__)"],
                                      cwd=code, env=env, capture_output=True, text=True, check=True).stdout.strip()
        memory = tmp / f"memory-{name.replace(' ', '-')}"
        super().__init__(name, ["--memory", str(memory)], tmp, code, env)


def big_ingest(mb: float) -> tuple[bytes, int]:
    """The sample memory over and over, each copy's items under new ids, until the body holds ``mb`` MB."""
    lines = (ROOT / "cleo_rules" / "data" / "sample_memory.jsonl").read_text(encoding="utf-8").splitlines()
    out, size, copy = [], 0, 0
    while size < mb * 1_000_000:
        for line in lines:
            record = json.loads(line)
            record["id"] = f"{record['id']}-copy{copy}"
            text = json.dumps(record)
            out.append(text)
            size += len(text.encode("utf-8")) + 1
        copy += 1
    return ("\n".join(out) + "\n").encode("utf-8"), len(out)


def paced_turns(client: httpx.Client, pairs, pace: float, *, count: int | None = None, until=None) -> list[tuple]:
    """Turns on tenant ``chat``, one at a time, one every ``pace`` s: ``count`` of them, or until ``until()`` is
    true; each as (round trip ms, embed stage ms, status)."""
    out, i = [], 0
    while (count is None or i < count) and (until is None or not until()):
        message, history = pairs[i % len(pairs)]
        start = time.perf_counter()
        r = client.post(f"/v1/tenants/{CHAT}/turns", content=json.dumps({"message": message, "history": history}),
                        headers=JSON)
        ms = (time.perf_counter() - start) * 1000
        m = _EMBED.search(r.headers.get("server-timing", ""))
        out.append((ms, float(m.group(1)) if m else float("nan"), r.status_code))
        i += 1
        time.sleep(pace)
    return out


def fair_round(service: Served, pairs, body: bytes, args, tenant: str) -> dict:
    """Idle turns, then turns during an ingest into ``tenant``, on one service."""
    with httpx.Client(base_url=service.url, timeout=120) as client:
        idle = paced_turns(client, pairs, args.pace, count=args.idle_turns)
        outcome: dict = {}

        def ingest():
            start = time.perf_counter()
            r = httpx.post(f"{service.url}/v1/tenants/{tenant}/memory", content=body,
                           headers={"Content-Type": "application/x-ndjson"}, timeout=1800)
            outcome["seconds"] = time.perf_counter() - start
            outcome["status"] = r.status_code
            outcome["added"] = r.json().get("added") if r.status_code == 200 else None

        thread = threading.Thread(target=ingest)
        thread.start()
        time.sleep(0.5)  # the ingest's body is sent and its first batch under way
        busy = paced_turns(client, pairs, args.pace, until=lambda: not thread.is_alive())
        thread.join()
    return {"idle": idle, "busy": busy, **outcome}


def fair_part(args, pairs) -> bool:
    """Turns of one tenant idle and during another tenant's ingest, on this checkout and ``--baseline``."""
    body, items = big_ingest(args.ingest_mb)
    tmp = Path(tempfile.mkdtemp(prefix="cleo-bench-fair-"))
    codes = [("this checkout", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    services = [Served(name, code, tmp) for name, code in codes]
    results: dict[str, list[dict]] = {s.name: [] for s in services}
    print(f"\nfair turns: turns of tenant {CHAT!r} every {args.pace:g} s, {args.idle_turns} idle, then during an "
          f"ingest of {len(body) / 1e6:.2f} MB ({items} items) into another tenant; load average {load()}")
    for s in services:
        print(f"  {s.name}: imports {s.imports}")
    try:
        sample = (ROOT / "cleo_rules" / "data" / "sample_memory.jsonl").read_bytes()
        for s in services:
            s.wait_ready()
            httpx.post(f"{s.url}/v1/tenants/{CHAT}/memory", content=sample,
                       headers={"Content-Type": "application/x-ndjson"}, timeout=600).raise_for_status()
            with httpx.Client(base_url=s.url, timeout=120) as client:
                paced_turns(client, pairs, 0.0, count=40)  # warm-up, not counted
        for n in range(args.rounds):
            order = services if n % 2 == 0 else services[::-1]
            for s in order:
                result = fair_round(s, pairs, body, args, f"{BULK}-{n}")
                results[s.name].append(result)
                print(f"  round {n + 1}, {s.name}: ingest {result['seconds']:.1f} s (HTTP {result['status']}), "
                      f"{len(result['busy'])} turns during it; load average {load()}")
    finally:
        for s in services:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print(f"{'checkout':<16} {'phase':<14} {'turns':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'embed p95':>10} "
          f"{'not 200':>8}")
    summary = {}
    for name, rounds in results.items():
        for phase in ("idle", "busy"):
            rows = [t for r in rounds for t in r[phase]]
            ok = [ms for ms, _, status in rows if status == 200]
            embed = [e for _, e, status in rows if status == 200 and e == e]
            summary[(name, phase)] = (percentile(ok, 0.5), percentile(ok, 0.95), max(ok, default=float("nan")))
            label = "idle" if phase == "idle" else "during ingest"
            print(f"{name:<16} {label:<14} {len(rows):>6} {summary[(name, phase)][0]:>8.1f} "
                  f"{summary[(name, phase)][1]:>8.1f} {summary[(name, phase)][2]:>8.1f} "
                  f"{percentile(embed, 0.95):>10.2f} {len(rows) - len(ok):>8}")
    print()
    for name, rounds in results.items():
        ratio = summary[(name, "busy")][1] / summary[(name, "idle")][1]
        seconds = ", ".join(f"{r['seconds']:.1f}" for r in rounds)
        print(f"{name:<16} turn p95 during the ingest / idle p95: {ratio:6.2f}x; ingest {seconds} s")
    mine = results["this checkout"]
    ratio = summary[("this checkout", "busy")][1] / summary[("this checkout", "idle")][1]
    errors = sum(1 for r in mine for phase in ("idle", "busy") for _, _, status in r[phase] if status != 200)
    checks = [
        ("turn p95 during another tenant's ingest <= 3x idle", ratio <= 3.0, f"{ratio:.2f}x"),
        ("fair turns: every turn and ingest answered 200", errors == 0 and all(r["status"] == 200 for r in mine),
         f"{errors} turns not 200, ingests {[r['status'] for r in mine]}"),
    ]
    if "baseline" in results:
        base = summary[("baseline", "busy")][1]
        print(f"turn p95 during the ingest: this checkout {summary[('this checkout', 'busy')][1]:.1f} ms, "
              f"baseline {base:.1f} ms ({base / summary[('this checkout', 'busy')][1]:.0f}x)")
    print()
    for name, ok, detail in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name:<52} {detail}")
    return all(ok for _, ok, _ in checks)


if __name__ == "__main__":
    raise SystemExit(main())
