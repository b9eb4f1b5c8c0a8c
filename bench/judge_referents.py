"""Referent precision: a fixed sample of resolved referents from every dev set, judged by reading.

``python bench/judge_referents.py sample OUT.jsonl`` classifies every turn of
the dev dialogue sets (CANARD, GECOR, CAsT with its replies, the business set,
SGD with its one previous exchange) with role-tagged history, keeps the turns
whose referent a referent rule found, and writes a sample of them (seed 31,
the same number from each set where it has that many) with the message, the
end of the reply before it, the referent and its rule, and ``correct: null``
for a reader to fill in (``true``/``false``, with a short ``reason`` for a
false one), and ``where``: the text around the referent in the turn it came
from. Another checkout's referents are sampled by running this script from a
copy of that checkout (its ``bench/``, with ``shared/`` beside it).

``python bench/judge_referents.py score JUDGED.jsonl`` prints the precision per
set and over all (judged rows only). Beside this script,
``referents_judged.jsonl`` holds the judgements of this code's sample and
``referents_judged_main.jsonl`` those of the sample drawn with main's code
(another state of the referent rules; a row with the same set, turn and
referent is the same judgement).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SHARED = ROOT.parent / "shared" / "eval"
SEED = 31


def rows():
    """``(dataset, id, message, history)`` of every turn with an assistant turn before it."""
    from eval_dialogue import load

    for name in ("canard", "gecor_camrest", "cast_replies"):
        for r in load(name):
            if any(t["role"] == "assistant" for t in r["turns"]):
                yield name, f"{r['conv_id']}#{r['turn']}", r["message"], r["turns"]
    for r in map(json.loads, open(SHARED / "business" / "cases.jsonl", encoding="utf-8")):
        yield "business", r["id"], r["message"], r["history"]
    for r in map(json.loads, open(SHARED / "sgd_user_turns.jsonl", encoding="utf-8")):
        if r.get("prev_system_utterance"):
            history = ([r["prev_user_utterance"]] if r.get("prev_user_utterance") else []) + \
                [{"role": "assistant", "content": r["prev_system_utterance"]}]
            yield "sgd", f"{r['dialogue_id']}#{r['turn_index']}", r["utterance"], history


def resolved(pack, message, history):
    """``(referent, rule, where)`` of a turn whose referent a rule found, else None; ``where`` is the text around
    the referent in the turn it came from (what a reader needs to judge it)."""
    d = pack.classify(message, history)
    for p in d.parts:
        if p.name == "referent" and p.rule is not None:
            where = ""
            if p.index is not None and p.span is not None and 0 <= p.index < len(history):
                turn = history[p.index]
                text = turn["content"] if isinstance(turn, dict) else str(turn)
                where = text[max(0, p.span[0] - 120):p.span[1] + 80]
            return p.text, p.rule, where
    return None


def sample(out: Path, per_set: int) -> None:
    from cleo_rules import load_pack

    pack = load_pack()
    found: dict[str, list] = {}
    for name, rid, message, history in rows():
        hit = resolved(pack, message, history)
        if hit is not None:
            reply = next((t["content"] for t in reversed(history) if isinstance(t, dict) and
                          t.get("role") == "assistant"), "")
            found.setdefault(name, []).append({"dataset": name, "id": rid, "message": message,
                                               "reply": reply[-300:], "referent": hit[0], "rule": hit[1],
                                               "where": hit[2], "correct": None})
    rng = random.Random(SEED)
    with open(out, "w", encoding="utf-8") as f:
        for name in sorted(found):
            items = found[name]
            picked = rng.sample(items, min(per_set, len(items)))
            print(f"{name}: {len(items)} resolved, {len(picked)} sampled")
            for item in picked:
                f.write(json.dumps(item, ensure_ascii=False) + "\n")


def score(path: Path) -> None:
    per: dict[str, list[int]] = {}
    for item in map(json.loads, open(path, encoding="utf-8")):
        if item.get("correct") is None:
            continue
        good = per.setdefault(item["dataset"], [0, 0])
        good[0] += bool(item["correct"])
        good[1] += 1
    total = [sum(v[0] for v in per.values()), sum(v[1] for v in per.values())]
    for name, (ok, n) in sorted(per.items()) + [("all", total)]:
        print(f"{name:14} {ok:4}/{n:<4} precision {ok / n:.3f}" if n else f"{name:14} none judged")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample")
    s.add_argument("out", type=Path)
    s.add_argument("--per-set", type=int, default=46)
    c = sub.add_parser("score")
    c.add_argument("judged", type=Path, nargs="?", default=Path(__file__).with_name("referents_judged.jsonl"))
    args = ap.parse_args()
    if args.command == "sample":
        sample(args.out, args.per_set)
    else:
        score(args.judged)


if __name__ == "__main__":
    main()
