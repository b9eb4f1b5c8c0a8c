"""Classification cost per message, beside its floor and a naive matcher.

Over the SGD user utterances in ../shared/eval/ (or a built-in sample when
that folder is absent), prints the median time per message of:

* ``floor``: one compiled ``regex.search`` of a single simple pattern;
* ``naive``: normalise, then ``regex.search`` every pattern of the pack one
  by one, compiling from the pattern text each time (cache hits after the
  first), with no vocabulary test;
* ``classify``: ``pack.classify(message)`` (normalise, corrections,
  follow-up patterns, vocabulary test, decision);
* ``classify+anchor``: ``pack.classify(message, history)`` with the previous
  user turn as history (what a runtime calls).

Usage: python bench/bench_classify.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import regex

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cleo_rules import load_pack  # noqa: E402
from cleo_rules.text import normalize  # noqa: E402
from evaldata import EVAL_DIR, sgd_turns  # noqa: E402

SAMPLE = ["Yes, go with the second one.", "We tried that one already.", "What is the weather in Leeds tomorrow?",
          "Thanks, that's all for now.", "Can you find me a plumber near York?", "Tell me more about it."]


def messages(eval_dir: Path):
    turns = sgd_turns(eval_dir)
    if turns is None:
        print(f"(no SGD turns under {eval_dir}; using a built-in sample)")
        return [(m, []) for m in SAMPLE * 50]
    return turns


def per_message(fn, items, rounds):
    """Median over messages of the best-of-``rounds`` time for one call (ns)."""
    clock = time.perf_counter_ns
    times = []
    for item in items:
        best = None
        for _ in range(rounds):
            t0 = clock()
            fn(item)
            t = clock() - t0
            best = t if best is None or t < best else best
        times.append(best)
    return statistics.median(times), statistics.fmean(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--eval", type=Path, default=EVAL_DIR)
    args = ap.parse_args(argv)
    pack = load_pack()
    items = messages(args.eval)
    floor_re = regex.compile(r"\bwe tried\b")
    patterns = [r.pattern for r in pack.corrections + pack.follow_ups]

    def floor(item):
        floor_re.search(item[0])

    def naive(item):
        text = normalize(item[0])
        for p in patterns:
            regex.search(p, text)

    def classify(item):
        pack.classify(item[0])

    def classify_anchor(item):
        pack.classify(item[0], item[1])

    for fn in (floor, naive, classify, classify_anchor):  # warm caches
        for item in items[:200]:
            fn(item)
    rows = [(name, *per_message(fn, items, args.rounds)) for name, fn in
            (("floor (one regex.search)", floor), ("naive loop over patterns", naive),
             ("classify", classify), ("classify + anchor lookup", classify_anchor))]
    base = rows[0][1]
    print(f"{len(items)} messages, {len(patterns)} patterns, {len(pack.vocab_sets)} vocabulary sets, "
          f"best of {args.rounds} per message")
    print(f"{'':28}{'median us':>12}{'mean us':>10}{'x floor':>10}{'x naive':>10}")
    for name, med, mean in rows:
        print(f"{name:28}{med / 1000:12.2f}{mean / 1000:10.2f}{med / base:10.1f}{med / rows[1][1]:10.2f}")
    embed_ms = 6.4
    print(f"\nclassify median is {rows[2][1] / 1e6 / embed_ms * 100:.2f}% of one sentence embedding "
          f"({embed_ms} ms, all-MiniLM-L6-v2 on this CPU)")


if __name__ == "__main__":
    main()
