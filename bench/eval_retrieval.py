"""Evaluate the whole idea: does shaping the query make retrieval more relevant?

Part 1, the labelled evaluation set (``cleo_rules/data/eval/``): a small
pottery business's memory of conversations and documents, and scripted
dialogues whose turns are labelled with their expected kind, the ids of the
items relevant to them and an oracle query written by hand. Every turn is
replayed three ways:

* ``raw``    the message searched as typed (the old behaviour; under ten
             characters nothing is searched),
* ``shaped`` the query the rule pack decides (this project),
* ``oracle`` the hand-written query,

plus a diagnostic fourth way, ``labelled``: the query the pack's combine
template would give if the classifier agreed with every label (a labelled
follow-up combined with the last labelled-substantive message before it,
everything else searched as typed). It separates the idea of combining from
the classifier's coverage.

and the irrelevant share of the top-k is reported by expected kind: among the
items returned in the top k, the fraction whose conversation or document is
not in the turn's relevant set (pooled over turns). k is 3 by default: a turn's
relevant set holds one to four conversations or documents, so at k=5 even a
perfect query often has to fill the last places with something else. It is printed as a table
and drawn as a PNG bar chart. The classifier's accuracy against the expected
kinds is printed too, with every turn it got wrong.

Part 2, TREC CAsT (``../shared/eval/cast_turns.jsonl``): the mean cosine
similarity between the searched query and the manual rewrite, raw versus
shaped; and, with all manual rewrites indexed, the share of the top-5 results
that come from another topic when each follow-up turn is searched raw versus
shaped (the turn's own rewrite left out of its results).

Usage::

    .venv/bin/python bench/eval_retrieval.py [--k 3] [--chart out/eval_retrieval.png]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from cleo_rules.shaping import fill_template  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
EVAL_DIR = REPO / "cleo_rules" / "data" / "eval"
SHARED_EVAL = REPO / ".." / "shared" / "eval"
KINDS = ("substantive", "follow_up", "correction")
MODES = ("raw", "shaped", "roles", "labelled", "oracle")
MODE_HELP = {
    "raw": "the message as typed (old behaviour)",
    "shaped": "the query the rule pack decides from the user's messages only",
    "roles": "the query the rule pack decides with role-tagged history (the assistant's replies too)",
    "labelled": "shaped as the pack would if it classified every turn as labelled",
    "oracle": "the query written by hand",
}
RAW_MIN_CHARS = 10  # the old behaviour: shorter messages were not searched


# --------------------------------------------------------------------------
# The labelled evaluation set
# --------------------------------------------------------------------------

def load_memory(path: Path = EVAL_DIR / "memory.yaml") -> dict:
    """The evaluation memory: ``{"conversations": [...], "documents": [...]}``."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_dialogues(path: Path = EVAL_DIR / "dialogues.yaml") -> list[dict]:
    """The scripted dialogues, checked against the memory's ids."""
    dialogues = yaml.safe_load(path.read_text(encoding="utf-8"))["dialogues"]
    memory = load_memory()
    ids = {c["id"] for c in memory["conversations"]} | {d["id"] for d in memory["documents"]}
    for dialogue in dialogues:
        for n, turn in enumerate(dialogue["turns"], 1):
            unknown = set(turn["relevant"]) - ids
            if unknown:
                raise SystemExit(f"{path}: dialogue {dialogue['id']} turn {n}: unknown ids {sorted(unknown)}")
            if turn["kind"] not in (*KINDS, "skip"):
                raise SystemExit(f"{path}: dialogue {dialogue['id']} turn {n}: unknown kind {turn['kind']!r}")
    return dialogues


def build_store(directory, embedder, memory: dict | None = None):
    """A MemoryStore in ``directory`` holding the evaluation memory."""
    from cleo_rules.retrieval import MemoryStore

    memory = memory or load_memory()
    store = MemoryStore.open(directory, embedder=embedder)
    for c in memory["conversations"]:
        store.add_conversation(c["id"], c["title"], c["date"], c["messages"])
    for d in memory["documents"]:
        store.add_document(d["id"], d["title"], d["date"], d["text"])
    return store


def raw_query(message: str) -> str | None:
    """The old behaviour: the message as typed, nothing when under ten characters."""
    return message if len(message.strip()) >= RAW_MIN_CHARS else None


def labelled_query(pack, turn: dict, anchor: str | None) -> str | None:
    """The query shaping gives when the kind is the labelled one."""
    if turn["kind"] == "skip":
        return None
    if turn["kind"] == "follow_up" and anchor is not None:
        return fill_template(pack.settings.combine, anchor=anchor, message=turn["message"])
    return turn["message"]


def replay(pack, store, dialogues, k: int) -> list[dict]:
    """Search every turn every way (see MODES); one record per turn."""
    records = []
    for dialogue in dialogues:
        history: list[str] = []
        turns: list[dict] = []  # role-tagged: the user's messages and the assistant's replies
        anchor = None  # the last labelled-substantive message
        for n, turn in enumerate(dialogue["turns"], 1):
            decision = pack.classify(turn["message"], history=tuple(history))
            with_roles = pack.classify(turn["message"], history=turns)
            queries = {"raw": raw_query(turn["message"]), "shaped": decision.query, "roles": with_roles.query,
                       "labelled": labelled_query(pack, turn, anchor), "oracle": turn["oracle"]}
            relevant = set(turn["relevant"])
            record = {
                "dialogue": dialogue["id"], "turn": n, "message": turn["message"],
                "expected": turn["kind"], "kind": decision.kind, "rule": decision.rule,
                "referent": with_roles.referent,
                "relevant": sorted(relevant), "queries": queries, "results": {},
            }
            for mode, query in queries.items():
                if query is None:
                    record["results"][mode] = []
                    continue
                response = store.search(query, k=k)
                record["results"][mode] = [
                    {"id": r.id, "item": r.item, "source": r.source, "score": round(float(r.score), 4),
                     "relevant": r.id in relevant}
                    for r in response.results
                ]
            records.append(record)
            history.append(turn["message"])
            turns += [{"role": "user", "content": turn["message"]}, {"role": "assistant", "content": turn["assistant"]}]
            if turn["kind"] == "substantive":
                anchor = turn["message"]
    return records


def irrelevant_table(records: list[dict]) -> dict:
    """``{row: {mode: (irrelevant, returned), "turns": n}}`` by expected kind, plus ``all``."""
    table: dict = defaultdict(lambda: {m: [0, 0] for m in MODES} | {"turns": 0})
    for r in records:
        if r["expected"] == "skip":
            continue
        agreed = "classified alike" if r["kind"] == r["expected"] else "classified otherwise"
        for row in (r["expected"], f"{r['expected']}: {agreed}", "all"):
            table[row]["turns"] += 1
            for mode in MODES:
                results = r["results"][mode]
                table[row][mode][0] += sum(1 for x in results if not x["relevant"])
                table[row][mode][1] += len(results)
    return table


def pct(irrelevant: int, returned: int) -> str:
    return f"{100 * irrelevant / returned:5.1f}%" if returned else "    -"


def share(cell) -> float:
    return cell[0] / cell[1] if cell[1] else float("nan")


SUBROW_LABELS = {"classified alike": "pack agreed", "classified otherwise": "pack differed"}


def format_table(table: dict, k: int, skipped: int) -> str:
    head = f"{'expected kind':<14}{'turns':>6}  " + "  ".join(f"{m:>17}" for m in MODES)
    lines = [f"Irrelevant share of the top-{k} (returned items not in the turn's relevant set, pooled)", head,
             "-" * len(head)]
    for row in (*KINDS, "all"):
        if row not in table:
            continue
        for name in (row, f"{row}: classified alike", f"{row}: classified otherwise"):
            if name not in table or (name != row and row == "all"):
                continue
            cells = table[name]
            parts = [f"{pct(*cells[m])} ({cells[m][0]:>3}/{cells[m][1]:<3})".rjust(17) for m in MODES]
            label = row if name == row else "  " + SUBROW_LABELS[name.split(": ")[1]]
            lines.append(f"{label:<14}{cells['turns']:>6}  " + "  ".join(parts))
    lines.append(f"(skip turns, not searched in any mode: {skipped}; 'pack agreed/differed': "
                 "the turns the classifier put in the labelled kind, and the rest)")
    for mode in MODES:
        lines.append(f"  {mode:<9} {MODE_HELP[mode]}")
    return "\n".join(lines)


def classifier_report(records: list[dict]) -> str:
    by_kind = Counter(r["expected"] for r in records)
    right = Counter(r["expected"] for r in records if r["kind"] == r["expected"])
    confusion = Counter((r["expected"], r["kind"]) for r in records)
    total_right = sum(right.values())
    lines = [f"Classifier accuracy on the expected kinds: {total_right}/{len(records)} "
             f"({100 * total_right / len(records):.1f}%)"]
    got_kinds = ("skip", *KINDS)
    corner = "expected \\ got"
    lines.append(f"{corner:<14}" + "".join(f"{g:>13}" for g in got_kinds) + f"{'accuracy':>11}")
    for e in ("skip", *KINDS):
        if not by_kind[e]:
            continue
        row = "".join(f"{confusion[(e, g)]:>13}" for g in got_kinds)
        lines.append(f"{e:<14}{row}{f'{right[e]}/{by_kind[e]}':>11}")
    wrong = [r for r in records if r["kind"] != r["expected"]]
    if wrong:
        lines.append("Turns classified differently from the label:")
        for r in wrong:
            lines.append(f"  {r['dialogue']}#{r['turn']}: expected {r['expected']}, got {r['kind']}"
                         f" ({r['rule']}): {r['message']!r}")
    return "\n".join(lines)


def draw_chart(table: dict, k: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in (*KINDS, "all") if row in table]
    colours = {"raw": "#c0504d", "shaped": "#4f81bd", "roles": "#1f497d", "labelled": "#8fb4e3", "oracle": "#9bbb59"}
    width = 0.16
    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=120)
    for i, mode in enumerate(MODES):
        values = [100 * share(table[row][mode]) for row in rows]
        xs = [x + (i - (len(MODES) - 1) / 2) * width for x in range(len(rows))]
        bars = ax.bar(xs, values, width, label=mode, color=colours[mode])
        for bar, value in zip(bars, values):
            if value == value:  # not NaN
                ax.annotate(f"{value:.0f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            ha="center", va="bottom", fontsize=8, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{row}\n({table[row]['turns']} turns)" for row in rows])
    ax.set_ylabel(f"irrelevant share of top-{k} (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Recalled items unrelated to the turn, by the query searched", fontsize=11)
    ax.legend(title="query searched")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


# --------------------------------------------------------------------------
# TREC CAsT
# --------------------------------------------------------------------------

def load_cast(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def cast_report(pack, embedder, turns: list[dict], k: int = 5) -> str:
    import numpy as np

    shaped = [pack.classify(t["raw_utterance"], history=tuple(t["previous_raw_utterances"])) for t in turns]
    raw = [raw_query(t["raw_utterance"]) for t in turns]
    rewrites = [t["manual_rewritten_utterance"] for t in turns]

    texts = sorted({*rewrites, *(q for q in raw if q), *(d.query for d in shaped if d.query)})
    index = {text: i for i, text in enumerate(texts)}
    vectors = embedder.encode(texts)

    def vec(text):
        return vectors[index[text]]

    # 1. cosine(searched query, manual rewrite)
    cos = defaultdict(lambda: {"raw": [], "shaped": []})
    for t, r, d in zip(turns, raw, shaped):
        if r is None or d.query is None:
            continue
        target = vec(t["manual_rewritten_utterance"])
        for row in ("all", t["suggested_class"]):
            cos[row]["raw"].append(float(vec(r) @ target))
            cos[row]["shaped"].append(float(vec(d.query) @ target))
    lines = ["TREC CAsT: cosine similarity between the searched query and the manual rewrite "
             f"({len(turns)} turns; skipped turns left out)"]
    lines.append(f"{'class':<13}{'turns':>6}{'raw':>9}{'shaped':>9}{'combined by pack':>19}")
    for row in ("all", "substantive", "follow_up", "correction"):
        if row not in cos:
            continue
        n = len(cos[row]["raw"])
        members = [d for t, d in zip(turns, shaped) if row in ("all", t["suggested_class"]) and d.query is not None]
        combined = sum(1 for d in members if d.anchor)
        lines.append(f"{row:<13}{n:>6}{np.mean(cos[row]['raw']):>9.3f}{np.mean(cos[row]['shaped']):>9.3f}"
                     f"{f'{combined}/{len(members)}':>19}")

    # 2. topic leakage with all manual rewrites indexed
    matrix = np.stack([vec(text) for text in rewrites])
    topics = [str(t["topic_id"]) for t in turns]
    leak = {"raw": [0, 0], "shaped": [0, 0]}
    n_turns = 0
    for i, (t, r, d) in enumerate(zip(turns, raw, shaped)):
        if t["suggested_class"] != "follow_up" or r is None or d.query is None:
            continue
        n_turns += 1
        for mode, query in (("raw", r), ("shaped", d.query)):
            scores = matrix @ vec(query)
            scores[i] = -np.inf  # the turn's own rewrite is left out
            top = np.argpartition(-scores, k)[:k]
            leak[mode][0] += sum(1 for j in top if topics[j] != topics[i])
            leak[mode][1] += k
    lines.append("")
    lines.append(f"TREC CAsT: share of top-{k} results from other topics, all {len(rewrites)} manual rewrites "
                 f"indexed, {n_turns} follow-up turns searched (own rewrite left out)")
    for mode in ("raw", "shaped"):
        lines.append(f"  {mode:<7} {pct(*leak[mode])} ({leak[mode][0]}/{leak[mode][1]})")
    return "\n".join(lines)


# --------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=3, help="top-k to score (default 3)")
    parser.add_argument("--chart", type=Path, default=REPO / "out" / "eval_retrieval.png",
                        help="where to write the PNG chart (default out/eval_retrieval.png)")
    parser.add_argument("--details", type=Path, default=REPO / "out" / "eval_retrieval_turns.jsonl",
                        help="per-turn queries and results as JSON Lines (default out/eval_retrieval_turns.jsonl)")
    parser.add_argument("--pack", default=None, help="rule pack directory (default: the bundled pack)")
    parser.add_argument("--cast", type=Path, default=SHARED_EVAL / "cast_turns.jsonl",
                        help="TREC CAsT turns (default ../shared/eval/cast_turns.jsonl)")
    parser.add_argument("--no-cast", action="store_true", help="skip the CAsT part")
    args = parser.parse_args(argv)

    if not args.no_cast and not args.cast.is_file():
        print(f"error: TREC CAsT turns not found at {args.cast.resolve()}\n"
              "  The evaluation data lives beside the repository in ../shared/eval/ "
              "(see its README.md); pass --cast PATH, or --no-cast to skip this part.", file=sys.stderr)
        return 2

    from cleo_rules import load_pack
    from cleo_rules.retrieval.embed import Embedder

    started = time.perf_counter()
    pack = load_pack(args.pack)
    embedder = Embedder()
    dialogues = load_dialogues()
    memory = load_memory()
    with tempfile.TemporaryDirectory(prefix="cleo-eval-") as tmp:
        store = build_store(tmp, embedder, memory)
        records = replay(pack, store, dialogues, args.k)
        close = getattr(store, "close", None)
        if callable(close):
            close()

    n_items = len(memory["conversations"]) + len(memory["documents"])
    print(f"Evaluation set: {len(memory['conversations'])} conversations + {len(memory['documents'])} documents "
          f"({n_items} items), {len(dialogues)} dialogues, {len(records)} turns; "
          f"pack {pack.name} {pack.version}; k={args.k}")
    print()
    table = irrelevant_table(records)
    skipped = sum(1 for r in records if r["expected"] == "skip")
    print(format_table(table, args.k, skipped))
    fu, sub = table["follow_up"], table["substantive"]
    ratio = share(fu["shaped"]) / share(fu["raw"]) if share(fu["raw"]) else float("nan")
    roles_ratio = share(fu["roles"]) / share(fu["raw"]) if share(fu["raw"]) else float("nan")
    labelled_ratio = share(fu["labelled"]) / share(fu["raw"]) if share(fu["raw"]) else float("nan")
    print(f"follow_up: roles / raw = {roles_ratio:.2f} (halved when <= 0.50); user-only shaped / raw = {ratio:.2f}; "
          f"labelled / raw = {labelled_ratio:.2f}; substantive: roles - raw = "
          f"{100 * (share(sub['roles']) - share(sub['raw'])):+.1f} points")
    print()
    print(classifier_report(records))

    draw_chart(table, args.k, args.chart)
    args.details.parent.mkdir(parents=True, exist_ok=True)
    with args.details.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print()
    print(f"chart: {args.chart}")
    print(f"per-turn details: {args.details}")

    if not args.no_cast:
        print()
        print(cast_report(pack, embedder, load_cast(args.cast)))
    print(f"\n({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
