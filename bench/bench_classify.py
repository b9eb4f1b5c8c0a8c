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

Then, over every turn of the dialogue sets (``../shared/eval/dialogue/``:
CANARD and GECOR, each with the whole conversation before it), the median
time of ``pack.classify(message, history)`` with user-only history (plain
strings, the original format) and with role-tagged history (the assistant's
replies too, from which referents are drawn), side by side, and their ratio.
Two ways each: best of ``--rounds`` calls (caches warm), and one call per
turn in conversation order on a new pack (as a running assistant meets them:
a conversation's earlier turns were read on earlier calls, the newest reply
is read now). ``--library DIR`` imports cleo_rules from another checkout, to
record the figure of an earlier version (which may take user-only history
only) in the same way.

Usage: python bench/bench_classify.py [--rounds N] [--library DIR] [--dialogue-only]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import regex

ROOT = Path(__file__).resolve().parent.parent
if "--library" in sys.argv:  # an earlier checkout's cleo_rules, measured the same way
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--library") + 1]).resolve()))
else:
    sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))

from cleo_rules import load_pack  # noqa: E402
from cleo_rules.text import normalize  # noqa: E402
from evaldata import EVAL_DIR, read_jsonl, sgd_turns  # noqa: E402

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


def dialogue_turns(eval_dir: Path):
    """Every turn of the dialogue sets, in conversation order: (message, user-only history, role-tagged history)."""
    out = []
    for name in ("canard.jsonl", "gecor_camrest.jsonl"):
        path = Path(eval_dir) / "dialogue" / name
        if path.exists():
            out += [(r["message"], r["history"], r["turns"]) for r in read_jsonl(path)]
    return out


def takes_roles(pack) -> bool:
    try:
        pack.classify("Tell me more.", [{"role": "assistant", "content": "Hadley is 2,140."}])
    except TypeError:
        return False
    return True


def dialogue_bench(rounds: int, eval_dir: Path) -> None:
    turns = dialogue_turns(eval_dir)
    if not turns:
        print(f"(no dialogue sets under {eval_dir / 'dialogue'})")
        return
    pack = load_pack()
    roles = takes_roles(pack)
    modes = [("user-only history", 1)] + ([("role-tagged history", 2)] if roles else [])
    print(f"\n{len(turns)} dialogue turns (CANARD, GECOR), each with the conversation before it")
    print(f"{'':22}{'best of ' + str(rounds) + ': median us':>24}{'mean us':>10}{'in order: median us':>22}{'mean us':>10}")
    figures = {}
    for label, field in modes:
        tight = per_message(lambda t: pack.classify(t[0], t[field]), turns, rounds)
        fresh = load_pack()  # its readings of earlier turns fill in as the conversations go
        in_order = per_message(lambda t: fresh.classify(t[0], t[field]), turns, 1)
        figures[label] = (tight, in_order)
        print(f"{label:22}{tight[0] / 1000:24.2f}{tight[1] / 1000:10.2f}{in_order[0] / 1000:22.2f}"
              f"{in_order[1] / 1000:10.2f}")
    if len(figures) == 2:
        (ut, uo), (rt, ro) = figures["user-only history"], figures["role-tagged history"]
        print(f"{'role-tagged / user-only':22}{rt[0] / ut[0]:24.2f}{rt[1] / ut[1]:10.2f}{ro[0] / uo[0]:22.2f}"
              f"{ro[1] / uo[1]:10.2f}")
    else:
        print("(this version takes user messages only)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--eval", type=Path, default=EVAL_DIR)
    ap.add_argument("--library", type=Path, default=None, help="a checkout whose cleo_rules to measure")
    ap.add_argument("--dialogue-only", action="store_true", help="only the dialogue turns")
    args = ap.parse_args(argv)
    if args.dialogue_only:
        dialogue_bench(args.rounds, args.eval)
        return
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
    dialogue_bench(args.rounds, args.eval)


if __name__ == "__main__":
    main()
