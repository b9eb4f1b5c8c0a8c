"""How long the corpus takes: running every case, and the whole `corpus check`.

    python bench/bench_corpus.py [--repeat 5] [--pack rules/] [--corpus corpus/]

Prints the case count, then for each stage the best and median of the
repeats: total time and time per case.

* run:    classify and judge every checked-in case (the corpus proper)
* check:  check_corpus end to end: read the corpus files, regenerate the
          templates to detect staleness, run every case, tally
* cli:    `cleo-rules corpus check` as a process (interpreter start, pack load)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cleo_rules import load_pack
from cleo_rules.corpus import default_corpus_dir, run_corpus
from cleo_rules.corpus.judge import Evaluator
from cleo_rules.corpus.run import load_cases


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pack", default=None)
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--no-cli", action="store_true", help="skip the subprocess measurement")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    pack = load_pack(args.pack)
    load_s = time.perf_counter() - t0
    corpus_dir = Path(args.corpus) if args.corpus else default_corpus_dir(pack)
    cases, hand, _, problems = load_cases(corpus_dir)
    if problems:
        print(f"warning: {len(problems)} problem(s) reading {corpus_dir}", file=sys.stderr)
    n = len(cases)
    with_history = sum(1 for c in cases if c.history)
    ev = Evaluator(pack)

    def run():
        return [ev.run(c) for c in cases]

    def check():
        return run_corpus(pack, corpus_dir)

    print(f"pack {pack.name} {pack.version} ({pack.content_hash}), loaded in {load_s:.3f} s")
    print(f"corpus {corpus_dir}: {n:,} cases ({n - hand:,} generated, {hand:,} hand-written; "
          f"{with_history:,} with a history, so their query is checked too)")
    print(f"{'stage':<8}{'best s':>9}{'median s':>10}{'per case':>12}")
    rows = [("run", timed(run, args.repeat)), ("check", timed(check, args.repeat))]
    if not args.no_cli:
        cmd = [sys.executable, "-m", "cleo_rules", "corpus", "check"]
        if args.pack:
            cmd.append(args.pack)
        if args.corpus:
            cmd += ["--corpus", args.corpus]
        rows.append(("cli", timed(lambda: subprocess.run(cmd, capture_output=True, check=False),
                                   max(1, min(args.repeat, 3)))))
    for name, (best, med) in rows:
        print(f"{name:<8}{best:>9.3f}{med:>10.3f}{best / n * 1e6:>10.1f} us")
    report = check()
    print(f"result: {report.summary_line()}")
    return 0 if rows[1][1][1] < 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
