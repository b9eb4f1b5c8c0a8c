"""How far can combining go? Follow-up turns searched with different anchors.

A follow-up is searched as its anchor combined with it (the pack's combine
template). The specified anchor is the user's last substantive message.
This replays the evaluation set's follow-up turns (``cleo_rules/data/eval/``)
with other anchors too, under two classifications: the labelled kinds
(perfect classification) and the pack's own.

* ``raw``          the message as typed (the old behaviour),
* ``last``         the last substantive message (the specified rule),
* ``previous``     the message just before,
* ``last+since``   the last substantive message and every message after it,
* ``oracle``       the query written by hand.

It prints the irrelevant share of the top-k on follow-up turns (pooled), and
its ratio to ``raw``: the bound the combine rule puts on what shaping can
reach on this set, whatever the classifier does.

Usage::

    .venv/bin/python bench/eval_anchors.py [--k 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cleo_rules.shaping import fill_template  # noqa: E402
from eval_retrieval import build_store, load_dialogues, load_memory, raw_query  # noqa: E402

ANCHORS = ("raw", "last", "previous", "last+since", "oracle")


def queries(pack, turns, n: int, kinds) -> dict:
    """The query each way for turn ``n`` of a dialogue, given every turn's kind."""
    message = turns[n]["message"]
    combine = pack.settings.combine
    out = {"raw": raw_query(message), "oracle": turns[n]["oracle"]}
    if kinds[n] != "follow_up":
        out.update({a: message for a in ("last", "previous", "last+since")})
        return out
    last = max((i for i in range(n) if kinds[i] == "substantive"), default=None)
    out["last"] = message if last is None else fill_template(combine, anchor=turns[last]["message"], message=message)
    out["previous"] = message if n == 0 else fill_template(combine, anchor=turns[n - 1]["message"], message=message)
    if last is None:
        out["last+since"] = message
    else:
        since = "\n".join(turns[i]["message"] for i in range(last, n) if kinds[i] != "skip")
        out["last+since"] = fill_template(combine, anchor=since, message=message)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=3, help="top-k to score (default 3)")
    parser.add_argument("--pack", default=None, help="rule pack directory (default: the bundled pack)")
    args = parser.parse_args(argv)

    from cleo_rules import load_pack
    from cleo_rules.retrieval.embed import Embedder

    pack = load_pack(args.pack)
    dialogues = load_dialogues()
    rows = {}
    with tempfile.TemporaryDirectory(prefix="cleo-anchors-") as tmp:
        store = build_store(tmp, Embedder(), load_memory())
        for label in ("labelled kinds", "pack's kinds"):
            counts = {a: [0, 0] for a in ANCHORS}
            turns_seen = 0
            for dialogue in dialogues:
                turns = dialogue["turns"]
                if label == "labelled kinds":
                    kinds = [t["kind"] for t in turns]
                else:
                    kinds = [pack.classify(t["message"], history=tuple(x["message"] for x in turns[:i])).kind
                             for i, t in enumerate(turns)]
                for n, turn in enumerate(turns):
                    if turn["kind"] != "follow_up":
                        continue
                    turns_seen += 1
                    relevant = set(turn["relevant"])
                    for anchor, query in queries(pack, turns, n, kinds).items():
                        if query is None:
                            continue
                        results = store.search(query, k=args.k).results
                        counts[anchor][0] += sum(1 for r in results if r.id not in relevant)
                        counts[anchor][1] += len(results)
            rows[label] = (turns_seen, counts)
        store.close()

    print(f"Follow-up turns of the evaluation set: irrelevant share of the top-{args.k} by anchor "
          f"(pack {pack.name} {pack.version})")
    head = f"{'classified by':<16}{'turns':>6}" + "".join(f"{a:>20}" for a in ANCHORS)
    print(head)
    print("-" * len(head))
    for label, (n, counts) in rows.items():
        raw_share = counts["raw"][0] / counts["raw"][1]
        cells = []
        for a in ANCHORS:
            bad, total = counts[a]
            share = bad / total if total else float("nan")
            cells.append(f"{100 * share:5.1f}% ({share / raw_share:.2f})".rjust(20))
        print(f"{label:<16}{n:>6}" + "".join(cells))
    print("(in brackets: the share over the raw message's; halved when <= 0.50)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
