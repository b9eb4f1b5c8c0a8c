"""``bench_turn.py`` on two checkouts, interleaved: each stage's median per run, and the median of the runs.

Runs ``bench/bench_turn.py`` of another checkout (``--before``, a directory
holding ``cleo_rules/`` and ``bench/``, imported ahead of the installed
package) and of this one in turn, ``--runs`` times each, the order swapped
every run so that neither always goes first on a busy machine. Each run is a
process of its own with ``--passes`` timed passes. Prints, for every stage,
the median over the runs of each run's median, before and after side by
side, and their ratio; then the targets of issue 23: a turn's median (``total``) at most a
third of the checkout before's, and classification inside a turn at most 200 µs (median); the
exit status is 1 when either is missed.

Usage::

    .venv/bin/python bench/compare_turn.py --before /path/to/checkout [--runs 5] [--passes 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("classify", "embed", "search", "metadata", "context", "trace", "total")
CLASSIFY_TARGET_US = 200
_ROW = re.compile(r"^(\w+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)")


def run_once(checkout: Path, passes: int) -> dict[str, float]:
    """One ``bench_turn.py`` process of ``checkout``: each stage's median in ms."""
    env = dict(os.environ, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, str(checkout / "bench" / "bench_turn.py"), "--passes", str(passes)],
                         cwd=checkout, env=env, capture_output=True, text=True, timeout=1800)
    medians = {}
    for line in out.stdout.splitlines():
        m = _ROW.match(line)
        if m and m[1] in STAGES:
            medians[m[1]] = float(m[3])
    if set(medians) != set(STAGES):
        raise SystemExit(f"bench_turn.py of {checkout} printed no table:\n{out.stdout}\n{out.stderr}")
    return medians


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--runs", type=int, default=5, help="processes per checkout (default 5)")
    parser.add_argument("--passes", type=int, default=5, help="timed passes per process (default 5)")
    args = parser.parse_args(argv)
    checkouts = {"before": args.before.resolve(), "after": ROOT}
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for n in range(args.runs):
        for name in (("before", "after") if n % 2 == 0 else ("after", "before")):
            runs[name].append(run_once(checkouts[name], args.passes))
            print(f"run {n + 1} {name:<6}: total {runs[name][-1]['total']:.4f} ms", flush=True)
    print(f"\nbefore: {checkouts['before']}\nafter:  {checkouts['after']}\n"
          f"median over {args.runs} runs of each run's median (ms), {args.passes} passes per run\n")
    print(f"{'stage':<10}{'before':>10}{'after':>10}{'after/before':>14}   runs before | after")
    for stage in STAGES:
        before = [r[stage] for r in runs["before"]]
        after = [r[stage] for r in runs["after"]]
        b, a = statistics.median(before), statistics.median(after)
        print(f"{stage:<10}{b:>10.4f}{a:>10.4f}{a / b:>14.3f}   "
              f"{' '.join(f'{v:.3f}' for v in before)} | {' '.join(f'{v:.3f}' for v in after)}")
    turn = statistics.median(r["total"] for r in runs["after"]) / statistics.median(r["total"] for r in runs["before"])
    classify_us = 1000 * statistics.median(r["classify"] for r in runs["after"])
    turn_met, classify_met = turn <= 1 / 3, classify_us <= CLASSIFY_TARGET_US
    print(f"\nturn p50 after/before {turn:.3f} (target at most 0.333): {'met' if turn_met else 'NOT met'}; "
          f"classify in a turn {classify_us:.0f} µs median (target at most {CLASSIFY_TARGET_US} µs): "
          f"{'met' if classify_met else 'NOT met'}")
    return 0 if turn_met and classify_met else 1


if __name__ == "__main__":
    sys.exit(main())
