"""``bench_classify.py`` and ``bench_turn.py`` for two checkouts of the library, interleaved, side by side.

The scripts are this checkout's, the same for both sides; only the ``cleo_rules``
they import differs: each runs in a process that imports ``cleo_rules`` from a
checkout DIR (holding ``cleo_rules/`` and its bundled pack) before the script
starts, and ``bench_classify.py`` is given ``--library DIR`` too. Each benchmark
runs ``--runs`` times per checkout, each run a process of its own, the two
checkouts taking turns and the order swapped every run so that neither always
goes first on a busy machine. Prints, for every figure, the median over the
runs, A and B side by side, B/A, and each run's figure.

Usage::

    .venv/bin/python bench/compare_checkouts.py --a /path/before --b /path/after [--runs 5] [--passes 5] [--rounds 5]

``--b`` defaults to this checkout. The exit status is 0; the figures are to be read.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
TURN_STAGES = ("classify", "embed", "search", "metadata", "context", "trace", "total")
CLASSIFY_ROWS = {  # label printed by bench_classify.py -> short name
    "floor (one regex.search)": "floor",
    "naive loop over patterns": "naive",
    "classify + anchor lookup": "classify+anchor",
    "classify": "classify",
}
_TURN_ROW = re.compile(r"^(\w+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)")
_ALONE = re.compile(r"^classify alone, .*: ([0-9.]+) µs per turn")
_DIALOGUE = re.compile(r"^(user-only history|role-tagged history)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)")


def _run(script: str, args: list[str], checkout: Path) -> str:
    """``script`` (this checkout's) with ``args``, ``checkout``'s ``cleo_rules`` imported before it runs.

    The package is imported first, from ``checkout``, so that a script which puts this checkout on
    ``sys.path`` (``eval_retrieval.py`` does) still measures the other one.
    """
    code = ("import runpy, sys; sys.path.insert(0, sys.argv[1]); import cleo_rules; "
            "assert cleo_rules.__file__.startswith(sys.argv[1] + '/'), cleo_rules.__file__; "
            "sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    command = [sys.executable, "-P", "-c", code, str(checkout), str(BENCH / script), *args]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if out.returncode not in (0, 1):  # bench_turn.py exits 1 when its classify target is missed
        raise SystemExit(f"{script} for {checkout} failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def classify_figures(checkout: Path, rounds: int) -> dict[str, float]:
    """One ``bench_classify.py`` process: each row's median per message, µs."""
    out = _run("bench_classify.py", ["--rounds", str(rounds), "--library", str(checkout)], checkout)
    figures = {}
    for line in out.splitlines():
        m = _DIALOGUE.match(line)
        if m:
            kind = "user-only" if m[1].startswith("user") else "role-tagged"
            figures[f"dialogue {kind} best"] = float(m[2])
            figures[f"dialogue {kind} in order"] = float(m[4])
            continue
        for label, name in CLASSIFY_ROWS.items():
            rest = line[len(label):]
            if line.startswith(label) and rest[:1] == " " and rest.split()[0].replace(".", "").isdigit():
                figures[name] = float(rest.split()[0])
                break
    missing = set(CLASSIFY_ROWS.values()) - set(figures)
    if missing:
        raise SystemExit(f"bench_classify.py for {checkout} printed no {sorted(missing)}:\n{out}")
    return figures


def turn_figures(checkout: Path, passes: int) -> dict[str, float]:
    """One ``bench_turn.py`` process: each stage's median in a turn, µs, and classification alone."""
    out = _run("bench_turn.py", ["--passes", str(passes)], checkout)
    figures = {}
    for line in out.splitlines():
        m = _TURN_ROW.match(line)
        if m and m[1] in TURN_STAGES:
            figures[f"turn {m[1]}"] = 1000 * float(m[3])
        m = _ALONE.match(line)
        if m:
            figures["turn: classify alone"] = float(m[1])
    if len(figures) != len(TURN_STAGES) + 1:
        raise SystemExit(f"bench_turn.py for {checkout} printed no table:\n{out}")
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="the checkout before")
    parser.add_argument("--b", type=Path, default=ROOT, help="the checkout after (default: this one)")
    parser.add_argument("--runs", type=int, default=5, help="processes per checkout and benchmark (default 5)")
    parser.add_argument("--passes", type=int, default=5, help="bench_turn.py --passes (default 5)")
    parser.add_argument("--rounds", type=int, default=5, help="bench_classify.py --rounds (default 5)")
    args = parser.parse_args(argv)
    checkouts = {"A": args.a.resolve(), "B": args.b.resolve()}
    runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for n in range(args.runs):
        for name in (("A", "B") if n % 2 == 0 else ("B", "A")):
            figures = classify_figures(checkouts[name], args.rounds)
            figures.update(turn_figures(checkouts[name], args.passes))
            runs[name].append(figures)
            print(f"run {n + 1} {name}: classify {figures['classify']:.2f} µs, "
                  f"turn total {figures['turn total']:.1f} µs", flush=True)
    print(f"\nA: {checkouts['A']}\nB: {checkouts['B']}\n"
          f"median over {args.runs} runs per checkout (µs; bench_classify --rounds {args.rounds}, "
          f"bench_turn --passes {args.passes})\n")
    print(f"{'figure':<32}{'A':>10}{'B':>10}{'B/A':>8}   runs A | B")
    names = [k for k in runs["A"][0] if all(k in r for r in runs["A"] + runs["B"])]
    for key in names:
        a = [r[key] for r in runs["A"]]
        b = [r[key] for r in runs["B"]]
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{key:<32}{ma:>10.2f}{mb:>10.2f}{mb / ma:>8.3f}   "
              f"{' '.join(f'{v:.1f}' for v in a)} | {' '.join(f'{v:.1f}' for v in b)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
