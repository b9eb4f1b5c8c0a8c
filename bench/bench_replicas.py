"""Turns against one replica of the service and against two behind a round-robin, on one PostgreSQL, in one run.

Starts a private PostgreSQL (the ``pgserver`` package, in a temporary
directory; or ``--pg URL``, a database this script may create a database in)
and two ``cleo-rules serve --memory postgresql://...`` processes on free
loopback ports, on the same database and the same pack (the bundled cleo-en).
The sample memory is ingested into ``--tenants`` tenants, through the two
replicas in turn. Then, in each round, ``/v1/tenants/{t}/turns`` is driven at
concurrency ``--concurrency`` (16) for ``--seconds`` seconds in each of two
configurations, their order alternating from round to round:

* **one replica**: every request to the first service (the second one idles);
* **two replicas**: requests alternate between the two services, a simple
  round-robin in the client (each request goes to the next base URL in turn).

The turns are the evaluation dialogues' user turns, each with the user turns
before it as history, spread over the tenants in turn. For each
configuration it prints requests per second, p50 and p95 latency, requests
answered, shed (503 ``overloaded``) and failed, and the CPU seconds each
service process used per second of the run (1.0 is one core busy), then the
ratios of two replicas to one, per round and over all rounds.

**Read the ratios for what they are.** This machine may have few cores (the
script prints how many): two replicas on two cores share them, and so do
PostgreSQL and this client, which is part of what is measured at
concurrency 16. The figure says how much one process leaves on the table on
this host (its Python threads share one interpreter lock; two processes do
not), not how a fleet of machines scales, where each replica has cores of its
own and the database is what they share.

Usage::

    .venv/bin/python bench/bench_replicas.py [--seconds 15] [--rounds 2] [--concurrency 16] [--tenants 4]
    .venv/bin/python bench/bench_replicas.py --pg postgresql://user@host/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import httpx  # noqa: E402

from bench_serve import ServeProcess, free_port, load, percentile, workload  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "cleo_rules" / "data" / "sample_memory.jsonl"
JSON = {"Content-Type": "application/json"}
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system time of a process so far (``/proc/PID/stat``); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a PostgreSQL server's backends)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


class Replica(ServeProcess):
    """``cleo-rules serve --memory URL`` on a free loopback port, stopped by its pid."""

    def __init__(self, name: str, memory: str, tmp: Path, queue: int):
        # the ingest that fills the tenants is set-up, not what is measured: at the default bulk priority
        # (nice 19) it waits for the cores as long as anything else on the machine wants them
        env = {**os.environ, "CLEO_EMBED_BULK_NICE": "0"}
        super().__init__(name, ["--memory", memory, "--queue", str(queue)], tmp, ROOT, env)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.proc.pid)


class Database:
    """A database of its own for the run: in a private ``pgserver``, or in the server ``--pg`` names."""

    def __init__(self, given: str | None):
        import psycopg
        from psycopg import sql

        self.server = None
        url = given
        if url is None:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is not set
                import pgserver

                self.server = pgserver.get_server(  # pyright: ignore[reportPrivateImportUsage]
                    tempfile.mkdtemp(prefix="cleo-bench-pg-"), cleanup_mode="delete")
            url = self.server.get_uri()
        self.admin_url = url
        self.name = f"cleo_bench_replicas_{os.getpid()}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
            row = conn.execute("SELECT current_setting('server_version')").fetchone()
        self.version = f"PostgreSQL {row[0] if row else '?'}" + (" (pgserver)" if self.server else "")
        self.url = _with_database(url, self.name)
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def cpu_seconds(self) -> float | None:
        """CPU seconds of the private server's processes alive now (None for a server given with ``--pg``)."""
        if self.server is None:
            return None
        info = self.server.get_postmaster_info()
        return sum(cpu_seconds(p) for p in [info.pid, *children(info.pid)])

    def close(self) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name)))
        if self.server is not None:
            self.server.cleanup()


def _with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead of its own (the query string kept)."""
    head, sep, query = url.partition("?")
    scheme, _, rest = head.partition("://")
    authority = rest.split("/", 1)[0]
    return f"{scheme}://{authority}/{name}{sep}{query}"


async def drive(urls: list[str], bodies: list[tuple[str, bytes]], concurrency: int, seconds: float) -> dict:
    """Turns for ``seconds`` at ``concurrency``, each request to the next of ``urls`` in turn; the outcomes."""
    turn = itertools.cycle(urls)
    queue = itertools.cycle(bodies)
    latencies: list[float] = []
    counts = {"ok": 0, "shed": 0, "errors": 0}
    # one keep-alive connection per worker and base URL (as bench_serve.py: a shared pool costs the client more)
    clients = [{u: httpx.AsyncClient(base_url=u, timeout=60.0, limits=httpx.Limits(max_connections=1)) for u in urls}
               for _ in range(concurrency)]
    deadline = time.perf_counter() + seconds

    async def worker(own):
        for path, body in queue:
            if time.perf_counter() >= deadline:
                return
            start = time.perf_counter()
            try:
                r = await own[next(turn)].post(path, content=body, headers=JSON)
            except httpx.HTTPError:
                counts["errors"] += 1
                continue
            if r.status_code == 200:
                latencies.append((time.perf_counter() - start) * 1000)
                counts["ok"] += 1
            elif r.status_code == 503 and r.headers.get("content-type") == "application/problem+json" \
                    and r.json().get("type") == "/problems/overloaded":
                counts["shed"] += 1
            else:
                counts["errors"] += 1

    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker(own) for own in clients))
    finally:
        for own in clients:
            for client in own.values():
                await client.aclose()
    elapsed = time.perf_counter() - started
    return {**counts, "seconds": elapsed, "latencies": latencies}


def measure(label: str, replicas: list[Replica], serving: list[Replica], database: Database, bodies,
            args) -> dict:
    """One configuration: a short warm-up, then the timed run with the CPU each process used.

    ``cpu``: each replica's CPU seconds per second of the run, then this client's, then PostgreSQL's
    (its processes alive at both ends; 0 with ``--pg``).
    """
    asyncio.run(drive([r.url for r in serving], bodies, args.concurrency, min(3.0, args.seconds / 5)))
    before = [r.cpu_seconds() for r in replicas] + [time.process_time(), database.cpu_seconds() or 0.0]
    out = asyncio.run(drive([r.url for r in serving], bodies, args.concurrency, args.seconds))
    after = [r.cpu_seconds() for r in replicas] + [time.process_time(), database.cpu_seconds() or 0.0]
    out["cpu"] = [max(0.0, b - a) / out["seconds"] for a, b in zip(before, after)]
    out["label"] = label
    return out


def figures(runs: list[dict]) -> dict:
    latencies = [x for r in runs for x in r["latencies"]]
    seconds = sum(r["seconds"] for r in runs)
    return {"rps": sum(r["ok"] for r in runs) / seconds if seconds else 0.0,
            "p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95),
            "ok": sum(r["ok"] for r in runs), "shed": sum(r["shed"] for r in runs),
            "errors": sum(r["errors"] for r in runs),
            "cpu": [sum(r["cpu"][i] * r["seconds"] for r in runs) / seconds for i in range(len(runs[0]["cpu"]))]}


def line(label: str, f: dict) -> str:
    cpu = "".join(f"{c:>7.2f}" for c in f["cpu"])
    return (f"  {label:<14} {f['rps']:>8.1f} {f['p50']:>8.1f} {f['p95']:>8.1f} {f['ok']:>7} {f['shed']:>6} "
            f"{f['errors']:>6}  {cpu}")


def ratios(one: dict, two: dict) -> str:
    return (f"  {'two / one':<14} {two['rps'] / one['rps']:>7.2f}x {two['p50'] / one['p50']:>7.2f}x "
            f"{two['p95'] / one['p95']:>7.2f}x")


def report(rounds: list[dict[str, dict]]) -> None:
    head = f"  {'':<14} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'ok':>7} {'shed':>6} {'errors':>6}  " + "".join(
        f"{h:>7}" for h in ("cpu r1", "r2", "client", "pg"))
    for n, results in enumerate(rounds, 1):
        print(f"\nround {n} ({' then '.join(results)}):\n{head}")
        one, two = figures([results["one replica"]]), figures([results["two replicas"]])
        print(line("one replica", one))
        print(line("two replicas", two))
        print(ratios(one, two))
    one = figures([r["one replica"] for r in rounds])
    two = figures([r["two replicas"] for r in rounds])
    print(f"\nall {len(rounds)} rounds:\n{head}")
    print(line("one replica", one))
    print(line("two replicas", two))
    print(ratios(one, two))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="timed seconds per configuration and round "
                                                                    "(default 15; each also has a short warm-up)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, alternating which configuration goes first "
                                                              "(default 2)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight (default 16)")
    parser.add_argument("--tenants", type=int, default=4, help="tenants the turns are spread over (default 4)")
    parser.add_argument("--pg", default=None, metavar="URL",
                        help="a PostgreSQL server to create the run's database in (default: a private pgserver)")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1 or args.concurrency < 1 or args.tenants < 1:
        parser.error("--seconds, --rounds, --concurrency and --tenants must be positive")

    pairs = workload()
    tenants = [f"bench{i}" for i in range(args.tenants)]
    bodies = [(f"/v1/tenants/{tenants[i % len(tenants)]}/turns",
               json.dumps({"message": m, "history": h}).encode()) for i, (m, h) in enumerate(pairs)]
    print(f"bench_replicas: {len(pairs)} turns from the evaluation dialogues over {len(tenants)} tenants, "
          f"concurrency {args.concurrency}, {args.seconds:g} s per configuration, {args.rounds} rounds; "
          f"{os.cpu_count()} cores, load average at start {load()}")
    print(f"  the two replicas, PostgreSQL and this client share the machine's {os.cpu_count()} cores")
    tmp = Path(tempfile.mkdtemp(prefix="cleo-bench-replicas-"))
    database = Database(args.pg)
    # every request of a tenant may wait in its queue: at most `concurrency` of them at once, so nothing is shed
    queue = args.concurrency + 1
    replicas = [Replica(f"replica-{n}", database.url, tmp, queue) for n in (1, 2)]
    try:
        started = time.perf_counter()
        for replica in replicas:
            replica.wait_ready()
        print(f"  {database.version}; replicas pid {replicas[0].proc.pid} and {replicas[1].proc.pid} ready in "
              f"{time.perf_counter() - started:.1f} s")
        sample = SAMPLE.read_bytes()
        items = sum(1 for row in sample.splitlines() if row.strip())
        started = time.perf_counter()

        def ingest(n: int) -> None:  # tenant n through replica n mod 2: both write the one database
            r = httpx.post(f"{replicas[n % 2].url}/v1/tenants/{tenants[n]}/memory", content=sample,
                           headers={"Content-Type": "application/x-ndjson"}, timeout=600)
            r.raise_for_status()

        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(ingest, range(len(tenants))))
        print(f"  ingested the sample memory ({items} items) into each tenant, through the two "
              f"replicas in turn, in {time.perf_counter() - started:.1f} s")
        configurations = {"one replica": replicas[:1], "two replicas": replicas}
        rounds = []
        for n in range(args.rounds):
            order = list(configurations) if n % 2 == 0 else list(reversed(configurations))
            rounds.append({label: measure(label, replicas, configurations[label], database, bodies, args)
                           for label in order})
        report(rounds)
    finally:
        for replica in replicas:
            replica.stop()
        database.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("\ncpu: CPU seconds per second of the timed run (1.00 is one core busy) of replica-1, replica-2, this "
          "client and PostgreSQL" + (" (not measured with --pg)" if args.pg else ""))
    print(f"load average at end {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
