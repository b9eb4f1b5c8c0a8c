"""The time inside the service for ``/v1/classify`` and a batch, in process, beside another checkout.

Each round builds the app of one checkout (``--baseline``, by default
``/work/baseline``, then this one) in a fresh process, sends it requests
through Starlette's test client and records ``Server-Timing: app`` (the
milliseconds from receiving a request to starting its answer): 1,500
classify requests of one message after a 20-turn history (strings and
assistant replies), then 150 batches of 50 such items. The rounds alternate
between the checkouts, so a machine busy with other work weighs on both;
the table gives each checkout's median over the rounds of its per-round
medians, and its best round.

No network, no memory store: it measures what the service adds around
``Pack.classify`` (reading the body, the checks, the answer).

Usage::

    .venv/bin/python bench/bench_serve_app.py [--baseline /work/baseline] [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import cleo_rules.serve as serve
from starlette.testclient import TestClient

settings = (getattr(serve, "ServeSettings", None) or serve.Settings)(watch_interval=0)
app = serve.create_app(settings)
history = ["Compare the two van insurance quotes",
           {"role": "assistant", "content": "Hadley is the cheaper of the two; Brook covers your tools."}] * 10
one = json.dumps({"message": "Yes, go with the second one.", "history": history}).encode()
batch = json.dumps({"items": [{"message": "Tell me more.", "history": history}] * 50}).encode()
headers = {"Content-Type": "application/json"}


def inside(response):
    assert response.status_code == 200, response.text
    return float(response.headers["server-timing"].split(",")[0].split("dur=")[1])


with TestClient(app, base_url="http://127.0.0.1") as client:
    deadline = time.monotonic() + 120
    while not app.state.service.ready and time.monotonic() < deadline:
        time.sleep(0.05)
    for _ in range(200):
        client.post("/v1/classify", content=one, headers=headers)
    classify = [inside(client.post("/v1/classify", content=one, headers=headers)) for _ in range(1500)]
    batches = [inside(client.post("/v1/classify/batch", content=batch, headers=headers)) for _ in range(150)]
print(json.dumps([statistics.median(classify), statistics.median(batches)]))
'''


def run(checkout: Path) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(checkout)], capture_output=True, text=True, cwd="/tmp",
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{checkout}: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    classify, batch = json.loads(out.stdout.strip().splitlines()[-1])
    return classify, batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, default=Path("/work/baseline"), help="the checkout to compare with")
    parser.add_argument("--rounds", type=int, default=9, help="rounds per checkout, alternating (default 9)")
    args = parser.parse_args()
    checkouts = {"baseline": args.baseline.resolve(), "this checkout": ROOT}
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in checkouts}
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    for _ in range(args.rounds):
        for name, checkout in checkouts.items():
            rounds[name].append(run(checkout))
    print(f"{'':14} {'classify ms':>12} {'best':>7} {'batch of 50 ms':>15} {'best':>7}")
    for name, rows in rounds.items():
        classify, batch = [r[0] for r in rows], [r[1] for r in rows]
        print(f"{name:14} {statistics.median(classify):12.3f} {min(classify):7.3f} {statistics.median(batch):15.2f} "
              f"{min(batch):7.2f}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
