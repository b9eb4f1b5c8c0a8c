"""How the bundled pack classifies real, externally written turns.

Reads ../shared/eval/ (Schema-Guided Dialogue user turns and TREC CAsT turns,
with labels derived from their annotations; see that folder's README) and
prints, per source and mapping rule, how many turns each kind took, then the
headline figures:

* SGD ``ack_only`` turns of 10+ characters classified ``follow_up``;
* SGD ``new_intent_first_turn`` turns classified ``substantive``;
* CAsT ``rewrite_differs`` turns classified ``follow_up``;
* CAsT first turns classified ``substantive``.

Usage: python bench/eval_shared.py [--eval DIR] [--pack DIR] [--show RULE:KIND]
``--show`` prints the messages of one cell, to read what the rules miss.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cleo_rules import CleoError, load_pack  # noqa: E402

KINDS = ("skip", "correction", "follow_up", "substantive")


def rows(path: Path):
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def history_of(row) -> list[str]:
    if "previous_raw_utterances" in row:
        return list(row.get("previous_raw_utterances") or [])
    prev = row.get("prev_user_utterance")
    return [prev] if prev else []


def tabulate(pack, items, message_key):
    table = collections.defaultdict(collections.Counter)
    cells = collections.defaultdict(list)
    for row in items:
        msg = row[message_key]
        d = pack.classify(msg, history_of(row))
        table[row["mapping_rule"]][d.kind] += 1
        cells[(row["mapping_rule"], d.kind)].append((msg, d.rule))
    return table, cells


def print_table(title, table):
    print(f"\n{title}")
    print(f"  {'mapping rule':<32}" + "".join(f"{k:>12}" for k in KINDS) + f"{'turns':>8}")
    for rule in sorted(table, key=lambda r: -sum(table[r].values())):
        counts = table[rule]
        total = sum(counts.values())
        print(f"  {rule:<32}" + "".join(f"{counts[k]:>12}" for k in KINDS) + f"{total:>8}")


def share(table, rule, kind, *, min_chars_only=False):
    counts = table.get(rule, collections.Counter())
    total = sum(v for k, v in counts.items() if not (min_chars_only and k == "skip"))
    return (counts[kind] / total if total else float("nan")), counts[kind], total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval", type=Path, default=ROOT.parent / "shared" / "eval")
    ap.add_argument("--pack", default=None)
    ap.add_argument("--show", default=None, help="RULE:KIND, e.g. ack_only:substantive")
    args = ap.parse_args(argv)
    sgd_path, cast_path = args.eval / "sgd_user_turns.jsonl", args.eval / "cast_turns.jsonl"
    if not sgd_path.exists() or not cast_path.exists():
        sys.exit(f"evaluation data not found under {args.eval} (expected sgd_user_turns.jsonl and cast_turns.jsonl)")
    try:
        pack = load_pack(args.pack)
    except CleoError as exc:
        sys.exit(f"Error: {exc.report() if hasattr(exc, 'report') else exc}")
    print(f"pack {pack.name} {pack.version} ({pack.content_hash})")

    sgd = list(rows(sgd_path))
    cast = list(rows(cast_path))
    for row in cast:
        if row["mapping_rule"] == "rewrite_equal" and row.get("position") == 1:
            row["mapping_rule"] = "first_turn"
    sgd_table, sgd_cells = tabulate(pack, sgd, "utterance")
    cast_table, cast_cells = tabulate(pack, cast, "raw_utterance")
    print_table(f"SGD user turns ({len(sgd)}): kind given by the pack, per mapping rule", sgd_table)
    print_table(f"TREC CAsT turns ({len(cast)}): kind given by the pack, per mapping rule", cast_table)

    figures = [
        ("SGD ack_only (10+ chars) -> follow_up", share(sgd_table, "ack_only", "follow_up", min_chars_only=True), 0.90),
        ("SGD new_intent_first_turn -> substantive", share(sgd_table, "new_intent_first_turn", "substantive"), 0.90),
        ("CAsT rewrite_differs -> follow_up", share(cast_table, "rewrite_differs", "follow_up"), None),
        ("CAsT first turns -> substantive", share(cast_table, "first_turn", "substantive"), None),
    ]
    print("\nHeadline figures")
    for name, (value, hit, total), target in figures:
        aim = f"  (aim >= {target:.2f}: {'met' if value >= target else 'NOT met'})" if target else ""
        print(f"  {name:<44} {value:6.3f}  ({hit}/{total}){aim}")
    extra = [
        ("SGD closing_only -> follow_up", share(sgd_table, "closing_only", "follow_up", min_chars_only=True)),
        ("SGD no_more_closing -> follow_up", share(sgd_table, "no_more_closing", "follow_up", min_chars_only=True)),
        ("SGD new_intent_later_turn -> substantive", share(sgd_table, "new_intent_later_turn", "substantive")),
        ("SGD inform_answer -> substantive", share(sgd_table, "inform_answer", "substantive")),
        ("CAsT hand_labelled_rejection -> correction", share(cast_table, "hand_labelled_rejection", "correction")),
    ]
    print("\nOther figures (no target; the labels are derived and looser)")
    for name, (value, hit, total) in extra:
        print(f"  {name:<44} {value:6.3f}  ({hit}/{total})")

    if args.show:
        rule, kind = args.show.split(":")
        cells = {**sgd_cells, **cast_cells}
        print(f"\n{args.show}:")
        for msg, fired in cells.get((rule, kind), []):
            print(f"  [{fired}] {msg}")


if __name__ == "__main__":
    main()
