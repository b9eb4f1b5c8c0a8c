"""Hostile clients: one huge history against ``Pack.classify`` and against the service, today's code beside this one.

Two parts, each printing the code before the change (``--baseline``, a
checkout of it: by default ``/work/baseline``) and this checkout side by side:

1. ``Pack.classify`` with one assistant item of 10,000, 100,000 and
   1,000,000 characters ("Yes. He did. The band. " repeated, the issue's
   text) after a user question, for eight follow-ups that read the history
   every way the classifier can (a pronoun's referent, an offered option by
   position and by figure, the other option, an antecedent, a nod's reply
   words). The figure is the total of the eight classifications. Today's
   code runs each size once, in its own interpreter under a time limit
   (``--limit``: it takes the square of the item's length); after each,
   this checkout runs the three sizes in turn in a fresh interpreter, so
   the machine's ups and downs fall on every size alike, ``--repeats``
   rounds in all, and its figure is their median. Both warm up on a short
   reply first; each interpreter has its checkout first on ``sys.path``.
   Target: this checkout's 1M total at most 1.5 times its 100k total.

2. ``/healthz`` latency while four clients each keep sending the largest
   history the body limit allows: ``cleo-rules serve`` on loopback (no
   memory, started from each checkout in turn, stopped by its pid),
   ``/healthz`` asked every 50 ms for ``--window`` seconds. Two bodies:
   with the default limits (1 MiB body, 10,000 characters per message and
   history item, 100 items), 100 items of 10,000 characters, user and
   assistant in turn; and the issue's body, one assistant item of about
   1 MB, with ``--max-message-chars 1048576``. A ``/healthz`` not answered
   within the window counts as not answered. Target: this checkout's median
   within 50 ms.

Figures are wall-clock times on a machine others share: rerun when the load
average printed at the start is high.

Usage::

    .venv/bin/python bench/bench_hostile.py [--baseline /work/baseline] [--repeats 5] [--limit 120] [--window 15]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BAND = "Yes. He did. The band. "
QUESTION = "Who were the Mothers of Invention?"
FOLLOW_UPS = ["When did they break up?", "Yes, go with the second one.", "Tell me more.", "What about the band?",
              "And the cheaper one?", "What about the other one?", "How old is he now?", "Where is it?"]
SIZES = (10_000, 100_000, 1_000_000)
JSON = {"Content-Type": "application/json"}

CLASSIFY = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import cleo_rules
from cleo_rules import load_pack
assert cleo_rules.__file__.startswith(sys.argv[1]), f"imported {cleo_rules.__file__}, not {sys.argv[1]}"
sizes, rounds = json.loads(sys.argv[2]), int(sys.argv[3])
follow_ups, question, band = json.loads(sys.argv[4])
pack = load_pack()
for m in follow_ups:  # warm: every path taken once, on a short reply
    pack.classify(m, [question, {"role": "assistant", "content": band * 4}])
histories = {size: [question, {"role": "assistant", "content": (band * (size // len(band) + 1))[:size]}]
             for size in sizes}
for _ in range(rounds):  # the sizes in turn, so that the machine's ups and downs fall on each alike
    for size, history in histories.items():
        start = time.perf_counter()
        kinds = [pack.classify(m, history).kind for m in follow_ups]
        print(json.dumps({"size": size, "total": time.perf_counter() - start, "kinds": kinds}), flush=True)
'''


def classify_run(checkout: Path, sizes, rounds: int, limit: float) -> tuple[dict, str]:
    """The totals (seconds) of each round by size, and a note; stopped at ``limit`` seconds."""
    args = [sys.executable, "-c", CLASSIFY, str(checkout), json.dumps(list(sizes)), str(rounds),
            json.dumps([FOLLOW_UPS, QUESTION, BAND])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=checkout, env=env)
    note = ""
    try:
        out, err = proc.communicate(timeout=limit)
        if proc.returncode != 0:
            note = f"failed: {err.strip().splitlines()[-1] if err.strip() else proc.returncode}"
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        note = f"stopped after {limit:g} s"
    totals: dict = {}
    for line in out.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            totals.setdefault(row["size"], []).append(row["total"])
    return totals, note


def part_classify(baseline: Path, repeats: int, limit: float) -> bool:
    print(f"\n1. Pack.classify, one assistant item, {len(FOLLOW_UPS)} follow-ups (total seconds, median of the runs)")
    print(f"{'item':>12}  {'today':>14}  {'this checkout':>14}  {'today / this':>12}")
    today: dict = {}
    new_runs: dict = {size: [] for size in SIZES}
    notes = []
    for size in SIZES:  # today's code one size per interpreter, each under its limit; this checkout in between
        runs, note = classify_run(baseline, [size], 1, limit)
        today[size] = (runs[size][0] if runs.get(size) else None, note)
        runs, note = classify_run(ROOT, SIZES, max(1, repeats // len(SIZES)), limit)
        for n, totals in runs.items():
            new_runs[n] += totals
        notes.append(note)
    new_totals = {size: statistics.median(new_runs[size]) if new_runs[size] else None for size in SIZES}
    for size in SIZES:
        figures = {"today": today[size], "new": (new_totals[size], next((n for n in notes if n), ""))}

        def show(f):
            value, note = f
            return f"{value:14.4f}" if value is not None else f"{'> ' + format(limit, 'g') + ' s':>14}"

        ratio = (figures["today"][0] / figures["new"][0]) if figures["today"][0] and figures["new"][0] else None
        print(f"{size:>12,}  {show(figures['today'])}  {show(figures['new'])}  "
              f"{format(ratio, '12.0f') if ratio else '':>12}  {figures['today'][1] or figures['new'][1]}")
    big, mid = new_totals[1_000_000], new_totals[100_000]
    ok = big is not None and mid is not None and big <= 1.5 * mid
    print(f"target: this checkout's 1M total ({big:.4f} s) at most 1.5 x its 100k total ({mid:.4f} s): "
          f"{big / mid:.2f} x -> {'PASS' if ok else 'FAIL'}" if big and mid else "target: FAIL (no figure)")
    return ok


# -- the service -------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(checkout: Path, *args) -> tuple[subprocess.Popen, str]:
    import httpx

    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "serve", "--port", str(port), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=checkout, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    stop(proc)
    raise SystemExit(f"the service from {checkout} was not ready in 60 s")


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM by pid; SIGKILL if it has not exited in 10 s (a frozen event loop never handles SIGTERM)."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)


def load(url: str, body: bytes, window: float) -> dict:
    """Four clients sending ``body`` again and again, ``/healthz`` every 50 ms, for ``window`` seconds."""
    import httpx

    end = time.monotonic() + window
    sent: list[tuple[int, float]] = []
    health: list[float | None] = []

    def client():
        with httpx.Client(base_url=url, timeout=httpx.Timeout(5.0, read=window + 5)) as c:
            while time.monotonic() < end:
                start = time.perf_counter()
                try:
                    status = c.post("/v1/classify", content=body, headers=JSON).status_code
                except httpx.HTTPError:
                    status = 0
                sent.append((status, time.perf_counter() - start))

    clients = [threading.Thread(target=client, daemon=True) for _ in range(4)]
    for t in clients:
        t.start()
    time.sleep(0.2)  # the bodies are on their way
    with httpx.Client(base_url=url) as c:
        while time.monotonic() < end:
            start = time.perf_counter()
            try:
                ok = c.get("/healthz", timeout=max(end - time.monotonic(), 0.1)).status_code == 200
                health.append(time.perf_counter() - start if ok else None)
            except httpx.HTTPError:
                health.append(None)
            time.sleep(0.05)
    for t in clients:
        t.join(window + 10)
    answered = sorted(h for h in health if h is not None)
    return {"health_answered": len(answered), "health_asked": len(health),
            "health_median": statistics.median(answered) if answered else None,
            "health_p95": answered[int(0.95 * (len(answered) - 1))] if answered else None,
            "health_max": answered[-1] if answered else None,
            "classified": sum(1 for s, _ in sent if s == 200), "refused": sum(1 for s, _ in sent if 400 <= s < 500),
            "failed": sum(1 for s, _ in sent if s == 0 or s >= 500),
            "classify_median": statistics.median([t for s, t in sent if s == 200]) if any(s == 200 for s, _ in sent)
            else None}


def bodies() -> list[tuple[str, list[str], bytes]]:
    alternate = []
    for n in range(100):  # 100 items of 10,000 characters, user and assistant in turn
        text = (BAND * 500)[:10_000]
        alternate.append(text if n % 2 == 0 else {"role": "assistant", "content": text})
    largest = json.dumps({"message": "When did they break up?", "history": alternate}).encode()
    issue = json.dumps({"message": "When did they break up?",
                        "history": [QUESTION, {"role": "assistant", "content": BAND * 45_000}]}).encode()
    assert len(largest) < 1 << 20 and len(issue) < 1 << 20
    return [("default limits: 100 items x 10,000 characters", [], largest),
            ("the issue's body: one assistant item of 1,035,000 characters", ["--max-message-chars", "1048576"],
             issue)]


def ms(value) -> str:
    return f"{value * 1000:9.1f}" if value is not None else f"{'-':>9}"


def part_service(baseline: Path, window: float) -> bool:
    print(f"\n2. /healthz while four clients each send the largest history the body limit allows ({window:g} s each)")
    print(f"{'':>14}  {'healthz answered':>17}  {'median ms':>9}  {'p95 ms':>9}  {'max ms':>9}  "
          f"{'classified':>10}  {'refused':>7}  {'failed':>6}  {'classify median ms':>18}")
    ok = True
    for title, args, body in bodies():
        print(f"{title} ({len(body):,} bytes)")
        for name, checkout in (("today", baseline), ("this checkout", ROOT)):
            proc, url = serve(checkout, *args)
            try:
                r = load(url, body, window)
            finally:
                stop(proc)
            print(f"{name:>14}  {r['health_answered']:>8} of {r['health_asked']:<6}  {ms(r['health_median'])}  "
                  f"{ms(r['health_p95'])}  {ms(r['health_max'])}  {r['classified']:>10}  {r['refused']:>7}  "
                  f"{r['failed']:>6}  {ms(r['classify_median']):>18}")
            if checkout == ROOT:
                good = (r["health_median"] is not None and r["health_median"] <= 0.050
                        and r["health_answered"] == r["health_asked"] and r["failed"] == 0)
                ok = ok and good
    print(f"target: this checkout's /healthz median within 50 ms, every /healthz answered, no request failed -> "
          f"{'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, default=Path("/work/baseline"),
                        help="a checkout of the code before the change")
    parser.add_argument("--repeats", type=int, default=15, help="runs of this checkout per size (today's: one)")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per size for one checkout")
    parser.add_argument("--window", type=float, default=15.0, help="seconds of load per body and checkout")
    args = parser.parse_args()
    print(f"today: {args.baseline}; this checkout: {ROOT}; load average {os.getloadavg()[0]:.2f}")
    ok = part_classify(args.baseline.resolve(), args.repeats, args.limit)
    ok = part_service(args.baseline.resolve(), args.window) and ok
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
