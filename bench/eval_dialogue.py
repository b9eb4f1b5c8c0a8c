"""The pack on whole conversations written by others: CANARD, GECOR-CamRest676 and TREC CAsT 2021-22.

Reads ``../shared/eval/dialogue/`` (each user turn with the conversation before
it, role-tagged, the human rewrite and the answer that followed; labels derived
from the rewrites, see that folder's README) and prints, per dataset:

* **detection**: context-dependent turns (``follow_up`` label) classified
  ``follow_up``, and how many of them were actually combined with something;
  standalone turns (``substantive``) classified ``substantive``; turns wrongly
  classified ``correction``; social turns (closings, nods) classified
  ``follow_up``;
* **query quality** on the context-dependent turns, for each way of forming the
  searched query:

  ``raw``          the message as typed,
  ``user``         the pack's query with user-only history (strings),
  ``roles``        the pack's query with role-tagged history (user and
                   assistant turns),
  ``append``       the message followed by the whole last assistant reply,
                   blindly, on every context-dependent turn (a yardstick),
  ``rewrite``      the human rewrite (the ceiling);

  mean cosine similarity of the query to the human rewrite, and
  answer-recall@5: the turn's own answer among the 5 nearest of every distinct
  assistant utterance in the file (turns whose answer is known). Both are also
  split by where the words the rewrite adds come from: mostly (>= 50%) in
  earlier user turns, or not (in the assistant's replies or nowhere).

**All-turn answer-recall@5** (``--all-turns``, the follow-up-queries target):
over every turn labelled ``follow_up`` or ``substantive`` that has an answer
and a message of at least 10 characters, split context-dependent /
standalone, for ``raw``, ``append`` (the message and the whole last reply on
*every* turn, no classifier), ``user``, ``roles``, ``rewrite``, and an
ablation of the role-tagged query with each of its parts removed in turn.
The standalone line also gives the net change in hits against ``raw``.

Then the same two figures for ``raw``, ``roles`` and ``rewrite`` split by how
the role-tagged query was built (a referent found by a rule; the anchor and
an excerpt of the last reply; searched as typed), which shows where the gap
to the rewrite is. A PNG chart of answer-recall@5 by mode goes to
``out/eval_dialogue.png``.

``cast_replies`` is TREC CAsT 2021 and 2022 read as such conversations
(``../shared/eval/cast_turns.jsonl``; see :func:`cast_replies`): the one set
whose assistant turns are long passages. It has no rewrite-word split and is
measured with ``--all-turns`` (or ``--no-embed``) only.

``sgd_train`` is task dialogue of every domain of the Schema-Guided Dialogue
train split (``bench/data/task_dialogue/``, its README says how it was
drawn): whole conversations, each user turn's answer the assistant turn after
it, no rewrites and no labels, so no turn is context-dependent or standalone.
It is reported **per domain** (and in total), for every turn with an answer
and a message of at least 10 characters and for those turns after the first:
how the pack classified them (role-tagged), and, when embedding, the
answer-recall@5 of ``raw``, ``append`` (the last assistant reply appended)
and ``cleo-rules`` (the role-tagged query), with cleo-rules' hits less raw's
and the domains where cleo-rules recalls less than raw. As for the other
sets, a query is ranked among every distinct assistant utterance of the file
(one pool for all domains). Chosen with ``--dataset sgd_train`` only (it is
not among the defaults); about two minutes of CPU. ``--show-losses`` lists,
by domain, the turns whose answer raw finds and cleo-rules does not.

Usage::

    .venv/bin/python bench/eval_dialogue.py [--pack DIR] [--dataset NAME]
        [--show LABEL:KIND] [--limit N] [--no-embed] [--all-turns] [--show-losses]
        (--dataset canard|gecor_camrest|cast_replies|sgd_train, repeatable;
        the first three by default)

``--show follow_up:substantive`` lists the context-dependent turns the pack
searched as typed, to read what the rules miss. ``--no-embed`` prints the
detection figures only (no model, a few seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from evaldata import EVAL_DIR, TASK_DIALOGUE_DIR, read_jsonl, task_dialogue_rows  # noqa: E402

from cleo_rules import load_pack  # noqa: E402

DIALOGUE_DIR = EVAL_DIR / "dialogue"
DATASETS = {"canard": "canard.jsonl", "gecor_camrest": "gecor_camrest.jsonl",
            "cast_replies": "../cast_turns.jsonl"}
#: task conversations of many domains, without rewrites (``bench/data/task_dialogue/``): reported per domain
TASK_SETS = {"sgd_train": "sgd_train.jsonl"}
MODES = ("raw", "user", "roles", "append", "rewrite")
K = 5


def load(name: str, eval_dir: Path = DIALOGUE_DIR) -> list[dict]:
    if name in TASK_SETS:
        return task_dialogue_rows(TASK_DIALOGUE_DIR / TASK_SETS[name])
    if name == "cast_replies":
        return cast_replies(Path(eval_dir) / DATASETS[name])
    return list(read_jsonl(Path(eval_dir) / DATASETS[name]))


def cast_replies(path: Path) -> list[dict]:
    """TREC CAsT 2021 and 2022 as rows of the dialogue format: the only conversations here whose assistant turns
    are long (the canonical response passages, tens to hundreds of words).

    Each user turn of a conversation (a 2022 tree is read path by path) gets
    the turns before it, role-tagged: every earlier user utterance and the
    canonical response that followed it, where there is one (responses from
    the Washington Post are omitted in the data); its ``answer`` is the
    canonical response to it, that is the next turn's previous response, and
    its label is ``follow_up`` when the manual rewrite differs from the raw
    utterance (the CAsT mapping of ``bench/eval_shared.py``), ``substantive``
    otherwise. Turns with no next response have no answer.
    """
    import ast

    rows = [r for r in read_jsonl(path) if str(r["year"]) in ("2021", "2022")]

    def before(r) -> list[str]:
        p = r["previous_raw_utterances"]
        return list(p if isinstance(p, list) else ast.literal_eval(p or "[]"))

    by_path = {(r["topic_id"], tuple(before(r)) + (r["raw_utterance"],)): r for r in rows}
    first_child: dict[tuple, dict] = {}  # a turn's path -> the first turn in the file that follows it
    for (topic, p), c in by_path.items():
        first_child.setdefault((topic, p[:-1]), c)
    out = []
    for r in rows:
        path = before(r) + [r["raw_utterance"]]
        turns = []
        for j, said in enumerate(path[:-1]):
            turns.append({"role": "user", "content": said})
            nxt = by_path.get((r["topic_id"], tuple(path[: j + 2])))
            if nxt is not None and nxt.get("prev_canonical_response"):
                turns.append({"role": "assistant", "content": nxt["prev_canonical_response"]})
        child = first_child.get((r["topic_id"], tuple(path)))
        answer = child.get("prev_canonical_response") if child is not None else None
        last = next((t["content"] for t in reversed(turns) if t["role"] == "assistant"), None)
        out.append({"dataset": "cast_replies", "conv_id": f"{r['year']}/{r['topic_id']}", "turn": r["turn_id"],
                    "message": r["raw_utterance"], "history": path[:-1], "turns": turns, "answer": answer,
                    "label": "follow_up" if str(r["rewrite_differs"]) == "True" else "substantive",
                    "rewrite": r["manual_rewritten_utterance"] or r["raw_utterance"], "prev_system": last})
    return out


def decide(pack, rows):
    """Both decisions per row: with user-only history and with role-tagged history."""
    out = []
    roles = True
    for r in rows:
        du = pack.classify(r["message"], r["history"])
        dr = du
        if roles:
            try:
                dr = pack.classify(r["message"], r["turns"])
            except TypeError:  # a pack or version that reads user messages only
                roles = False
        out.append((du, dr))
    if not roles:
        print("  (this version takes user messages only: 'roles' repeats 'user')")
    return out


def ratio(hit: int, total: int) -> str:
    return f"{hit / total:6.3f} ({hit}/{total})" if total else "   n/a"


def detection(rows, decisions) -> dict:
    by_label = Counter(r["label"] for r in rows)
    counts = Counter()
    for r, (du, dr) in zip(rows, decisions):
        for tag, d in (("user", du), ("roles", dr)):
            counts[(tag, r["label"], d.kind)] += 1
            if r["label"] == "follow_up" and d.kind == "follow_up" and d.query != r["message"]:
                counts[(tag, "combined")] += 1
    return {"by_label": by_label, "counts": counts}


def print_detection(name, det):
    by_label, c = det["by_label"], det["counts"]
    fu, sub, soc = by_label["follow_up"], by_label["substantive"], by_label["social"]
    not_corr = sum(v for k, v in by_label.items() if k != "skip")
    print(f"\n{name}: detection ({sum(by_label.values())} turns: {dict(by_label)})")
    print(f"  {'':44}{'user-only history':>22}{'role-tagged history':>24}")
    rows = [
        ("context-dependent -> follow_up", lambda t: ratio(c[(t, "follow_up", "follow_up")], fu)),
        ("  ... combined with something", lambda t: ratio(c[(t, "combined")], fu)),
        ("standalone -> substantive", lambda t: ratio(c[(t, "substantive", "substantive")], sub)),
        ("social -> follow_up", lambda t: ratio(c[(t, "social", "follow_up")], soc)),
        ("classified correction (no label is one)",
         lambda t: ratio(sum(v for k, v in c.items() if len(k) == 3 and k[0] == t and k[2] == "correction"), not_corr)),
    ]
    for label, f in rows:
        print(f"  {label:<44}{f('user'):>22}{f('roles'):>24}")


def queries(rows, decisions) -> dict[str, list[str]]:
    """The query each mode searches, for the context-dependent turns."""
    out = {m: [] for m in MODES}
    for r, (du, dr) in zip(rows, decisions):
        if r["label"] != "follow_up":
            continue
        out["raw"].append(r["message"])
        out["user"].append(du.query or r["message"])
        out["roles"].append(dr.query or r["message"])
        last = r.get("prev_system") or ""
        out["append"].append(f"{r['message']}\n{last}" if last else r["message"])
        out["rewrite"].append(r["rewrite"])
    return out


class Vectors:
    """Normalised embeddings, each distinct text encoded once.

    The torch (sentence-transformers) reference backend at one thread unless
    ``embedder`` is given, so figures compare across versions whatever the
    default embedding backend (bench/bench_embed.py passes the ONNX one).
    """

    def __init__(self, embedder=None):
        if embedder is None:
            from cleo_rules.retrieval.embed import Embedder

            embedder = Embedder(backend="torch", threads=1)
        self.embedder = embedder
        self.cache: dict[str, object] = {}

    def __call__(self, texts):
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            for t, v in zip(todo, self.embedder.encode(todo)):
                self.cache[t] = v
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 384), dtype="float32")


def quality(rows, qs, vectors) -> dict:
    """Per mode: cosine to the rewrite and answer hits, overall and by where the added words are."""
    import numpy as np

    fu = [r for r in rows if r["label"] == "follow_up"]
    pool = list(dict.fromkeys(
        [t["content"] for r in rows for t in r["turns"] if t["role"] == "assistant"]
        + [r["answer"] for r in rows if r.get("answer")]))
    pool_v = vectors(pool)
    index = {t: i for i, t in enumerate(pool)}
    rewrite_v = vectors([r["rewrite"] for r in fu])
    in_user = [(r.get("added_in_user_history") or 0.0) >= 0.5 for r in fu]
    with_answer = [bool(r.get("answer")) for r in fu]
    out = {}
    for mode, texts in qs.items():
        qv = vectors(texts)
        cos = np.sum(qv * rewrite_v, axis=1)
        sims = qv @ pool_v.T
        hits = []
        for i, r in enumerate(fu):
            if not with_answer[i]:
                hits.append(None)
                continue
            target = index[r["answer"]]
            rank = int(np.sum(sims[i] > sims[i, target]))
            hits.append(rank < K)
        out[mode] = {"cos": cos, "hits": hits}
    return {"modes": out, "in_user": in_user, "pool": len(pool)}


def _mean(values):
    values = list(values)
    return statistics.fmean(values) if values else float("nan")


def print_quality(name, q):
    in_user = q["in_user"]
    groups = {"all": [True] * len(in_user), "added words in user turns": in_user,
              "added words elsewhere": [not u for u in in_user]}
    print(f"\n{name}: query quality on context-dependent turns (answer pool: {q['pool']} assistant utterances)")
    print(f"  {'mode':<9}" + "".join(f"{g + ' (n)':>30}" for g in groups))
    first = next(iter(q["modes"].values()))
    print("  cosine to the human rewrite")
    for mode, m in q["modes"].items():
        cells = []
        for g, sel in groups.items():
            vals = [c for c, s in zip(m["cos"], sel) if s]
            cells.append(f"{_mean(vals):.3f} ({len(vals)})")
        print(f"  {mode:<9}" + "".join(f"{c:>30}" for c in cells))
    print(f"  answer-recall@{K}")
    for mode, m in q["modes"].items():
        cells = []
        for g, sel in groups.items():
            vals = [h for h, s in zip(m["hits"], sel) if s and h is not None]
            cells.append(f"{_mean(vals):.3f} ({len(vals)})")
        print(f"  {mode:<9}" + "".join(f"{c:>30}" for c in cells))
    del first


def built_from(d) -> str:
    """How a role-tagged decision's query was built: which parts, and whether a referent rule found the referent."""
    if d.kind != "follow_up" or d.query is None or not d.parts:
        return f"searched as typed ({d.kind})"
    names = [p.name for p in d.parts if p.name != "message"]
    if not names:
        return "searched as typed (follow_up, nothing to combine)"
    referent = next((p for p in d.parts if p.name == "referent"), None)
    if referent is not None:
        names[names.index("referent")] = "referent (rule)" if referent.rule else "reply excerpt"
    return " + ".join(names) + " + message"


def print_by_parts(name, rows, decisions, q):
    """Cosine and answer-recall@5 of the role-tagged query, raw and rewrite, by how the query was built."""
    fu = [(r, dr) for r, (_, dr) in zip(rows, decisions) if r["label"] == "follow_up"]
    groups: dict[str, list[int]] = {}
    for i, (_, dr) in enumerate(fu):
        groups.setdefault(built_from(dr), []).append(i)
    modes = ("raw", "roles", "rewrite")
    print(f"\n{name}: context-dependent turns by how the role-tagged query was built (cosine / answer-recall@{K})")
    print(f"  {'built from':<46}{'n':>5}" + "".join(f"{m:>17}" for m in modes))
    for label, idx in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        cells = []
        for m in modes:
            cos = _mean(q["modes"][m]["cos"][i] for i in idx)
            hits = [q["modes"][m]["hits"][i] for i in idx if q["modes"][m]["hits"][i] is not None]
            cells.append(f"{cos:.3f} / {_mean(hits):.3f}")
        print(f"  {label:<46}{len(idx):>5}" + "".join(f"{c:>17}" for c in cells))


# ---------------------------------------------------------------- all turns

ALL_TURN_LABELS = ("follow_up", "substantive")
MIN_MESSAGE = 10


def all_turn(row) -> bool:
    """The all-turn filter: labelled follow_up or substantive, with an answer, a message of 10+ characters."""
    return row["label"] in ALL_TURN_LABELS and bool(row.get("answer")) and len(row["message"]) >= MIN_MESSAGE


def all_turn_rows(rows, decisions):
    """The rows the all-turn filter keeps, with their two decisions."""
    return [(r, du, dr) for r, (du, dr) in zip(rows, decisions) if all_turn(r)]


def answer_pool(rows) -> list[str]:
    """Every distinct assistant utterance in the file (the turns' own and their answers): what a query is ranked in."""
    return list(dict.fromkeys([t["content"] for r in rows for t in r["turns"] if t["role"] == "assistant"]
                              + [r["answer"] for r in rows if r.get("answer")]))


def without_part(d, name: str, message: str) -> str:
    """The role-tagged query with the parts called ``name`` left out (its other parts, in order)."""
    if d.query is None or not d.parts:
        return message
    kept = [p.text for p in d.parts if p.name != name and p.text]
    return "\n".join(kept) if kept else message


def all_turn_queries(picked) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {m: [] for m in ("raw", "append", "user", "roles", "rewrite")}
    part_names = sorted({p.name for _, _, dr in picked for p in dr.parts if p.name != "message"})
    for name in part_names:
        out[f"roles - {name}"] = []
    for r, du, dr in picked:
        msg = r["message"]
        last = r.get("prev_system") or ""
        out["raw"].append(msg)
        out["append"].append(f"{msg}\n{last}" if last else msg)
        out["user"].append(du.query or msg)
        out["roles"].append(dr.query or msg)
        out["rewrite"].append(r["rewrite"])
        for name in part_names:
            out[f"roles - {name}"].append(without_part(dr, name, msg))
    return out


def all_turn_recall(rows, decisions, vectors) -> dict:
    """Per mode, the hit (turn's own answer in the top 5) of every all-turn row, and each row's label."""
    import numpy as np

    picked = all_turn_rows(rows, decisions)
    pool = answer_pool(rows)
    pool_v = vectors(pool)
    index = {t: i for i, t in enumerate(pool)}
    targets = np.array([index[r["answer"]] for r, _, _ in picked])
    hits = {}
    for mode, texts in all_turn_queries(picked).items():
        sims = vectors(texts) @ pool_v.T
        own = sims[np.arange(len(picked)), targets]
        hits[mode] = [int(np.sum(sims[i] > own[i])) < K for i in range(len(picked))]
    return {"hits": hits, "labels": [r["label"] for r, _, _ in picked], "pool": len(pool)}


def print_all_turns(name, res):
    labels = res["labels"]
    dep = [lab == "follow_up" for lab in labels]
    groups = {"all": [True] * len(labels), "context-dependent": dep, "standalone": [not x for x in dep]}
    raw = res["hits"]["raw"]
    print(f"\n{name}: all-turn answer-recall@{K} (labels follow_up + substantive, with an answer, "
          f"message >= {MIN_MESSAGE} chars; pool {res['pool']})")
    print(f"  {'mode':<22}" + "".join(f"{g + ' (n=' + str(sum(sel)) + ')':>28}" for g, sel in groups.items())
          + f"{'standalone net vs raw':>24}")
    for mode, h in res["hits"].items():
        cells = []
        for sel in groups.values():
            vals = [x for x, s in zip(h, sel) if s]
            cells.append(f"{_mean(vals):.3f} ({sum(vals)})")
        net = sum(x for x, s in zip(h, groups["standalone"]) if s) - sum(x for x, s in zip(raw, groups["standalone"]) if s)
        print(f"  {mode:<22}" + "".join(f"{c:>28}" for c in cells) + f"{net:>+24d}")


# ---------------------------------------------------------------- task dialogue, per domain

DOMAIN_MODES = ("raw", "append", "cleo-rules")


def task_turn(row) -> bool:
    """A task set's turn that is reported: with an answer and a message of 10+ characters (there are no labels)."""
    return bool(row.get("answer")) and len(row["message"]) >= MIN_MESSAGE


def domain_recall(pack, rows, vectors) -> dict:
    """Task conversations without rewrites: per turn of the all-turn filter's length and answer conditions, the
    role-tagged decision and whether each of raw / append / cleo-rules ranks the turn's own answer in the top 5 of
    every distinct assistant utterance in the file (one pool for all domains, as for the other sets)."""
    import numpy as np

    picked = [r for r in rows if task_turn(r)]
    decisions = [pack.classify(r["message"], r["turns"]) for r in picked]
    out = {"rows": picked, "decisions": decisions, "hits": {}, "pool": 0}
    if vectors is None:
        return out
    pool = answer_pool(rows)
    pool_v = vectors(pool)
    index = {t: i for i, t in enumerate(pool)}
    targets = np.array([index[r["answer"]] for r in picked])
    texts = {"raw": [r["message"] for r in picked],
             "append": [f"{r['message']}\n{r['prev_system']}" if r.get("prev_system") else r["message"]
                        for r in picked],
             "cleo-rules": [d.query or r["message"] for r, d in zip(picked, decisions)]}
    for mode in DOMAIN_MODES:
        sims = vectors(texts[mode]) @ pool_v.T
        own = sims[np.arange(len(picked)), targets]
        out["hits"][mode] = [int(np.sum(sims[i] > own[i])) < K for i in range(len(picked))]
    out["pool"] = len(pool)
    return out


def _domain_groups(picked) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(picked):
        groups.setdefault(r["domain"], []).append(i)
    return dict(sorted(groups.items())) | {"total": list(range(len(picked)))}


def print_domain_kinds(name, res):
    """How the pack classified each domain's turns (role-tagged), and how many follow-ups it combined."""
    picked, decisions = res["rows"], res["decisions"]
    print(f"\n{name}: kinds per domain, role-tagged (turns with an answer, message >= {MIN_MESSAGE} chars; "
          "no labels: the set has no rewrites)")
    print(f"  {'domain':<13}{'n':>6}{'follow_up':>11}{'combined':>10}{'substantive':>13}{'correction':>12}")
    for domain, idx in _domain_groups(picked).items():
        kinds = Counter(decisions[i].kind for i in idx)
        combined = sum(decisions[i].kind == "follow_up" and decisions[i].query not in (None, picked[i]["message"])
                       for i in idx)
        print(f"  {domain:<13}{len(idx):>6}{kinds['follow_up']:>11}{combined:>10}{kinds['substantive']:>13}"
              f"{kinds['correction']:>12}")


def print_domain_recall(name, res):
    """Answer-recall@5 per domain for raw / append / cleo-rules, all turns and turns after the first; ``net`` is
    cleo-rules' hits less raw's."""
    picked, hits = res["rows"], res["hits"]
    later = [r["turn"] > 1 for r in picked]
    print(f"\n{name}: answer-recall@{K} per domain, role-tagged (turns with an answer, message >= {MIN_MESSAGE} "
          f"chars; pool {res['pool']}: every distinct assistant utterance of the file)")
    head = "".join(f"{m:>11}" for m in DOMAIN_MODES) + f"{'net':>6}"
    width = len(head) + 6
    print(f"  {'':<13}{'all turns':<{width}}{'  turns after the first':<{width + 2}}")
    print(f"  {'domain':<13}{'n':>6}{head}{'n':>8}{head}")
    below = []
    for domain, idx in _domain_groups(picked).items():
        cells = []
        for part, sel in (("all", idx), ("after the first", [i for i in idx if later[i]])):
            means = {m: _mean(hits[m][i] for i in sel) for m in DOMAIN_MODES}
            net = sum(hits["cleo-rules"][i] for i in sel) - sum(hits["raw"][i] for i in sel)
            cells.append(f"{len(sel):>6}" if part == "all" else f"{len(sel):>8}")
            cells.append("".join(f"{means[m]:>11.3f}" for m in DOMAIN_MODES) + f"{net:>+6d}")
            if net < 0:
                below.append(f"{domain} ({part}, {net:+d})")
        print(f"  {domain:<13}" + "".join(cells))
    print(f"  cleo-rules below raw: {', '.join(below) if below else 'nowhere'}")


def print_domain_losses(name, res):
    """The turns whose answer raw finds in the top 5 and cleo-rules does not, by domain: the rule and the query."""
    picked, decisions, hits = res["rows"], res["decisions"], res["hits"]
    print(f"\n{name}: turns raw finds and cleo-rules does not (rule, message -> query)")
    for domain, idx in _domain_groups(picked).items():
        lost = [i for i in idx if hits["raw"][i] and not hits["cleo-rules"][i]]
        if domain == "total" or not lost:
            continue
        print(f"  {domain} ({len(lost)})")
        for i in lost:
            d = decisions[i]
            print(f"    [{d.rule}] {picked[i]['message']!r} -> {(d.query or picked[i]['message'])[:160]!r}")


def chart(results: dict, path: Path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no chart)")
        return
    names = list(results)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / len(MODES)
    for j, mode in enumerate(MODES):
        vals = [_mean(h for h in results[n]["modes"][mode]["hits"] if h is not None) for n in names]
        bars = ax.bar([i + j * width for i in range(len(names))], vals, width, label=mode)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks([i + width * (len(MODES) - 1) / 2 for i in range(len(names))], names)
    ax.set_ylabel(f"answer-recall@{K}")
    ax.set_title("Context-dependent turns: the turn's own answer among the top 5")
    ax.legend(fontsize=8, ncols=len(MODES), loc="upper left")
    ax.set_ylim(0, 1)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"\nchart: {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pack", default=None)
    ap.add_argument("--eval", type=Path, default=DIALOGUE_DIR)
    ap.add_argument("--dataset", choices=sorted(DATASETS | TASK_SETS), action="append")
    ap.add_argument("--show", default=None, help="LABEL:KIND, e.g. follow_up:substantive")
    ap.add_argument("--history", choices=("user", "roles"), default="roles", help="history used by --show")
    ap.add_argument("--limit", type=int, default=None, help="first N turns of each dataset only")
    ap.add_argument("--no-embed", action="store_true", help="detection figures only")
    ap.add_argument("--all-turns", action="store_true",
                    help="all-turn answer-recall@5 with its ablation only (the follow-up-queries target)")
    ap.add_argument("--show-losses", action="store_true",
                    help="task sets: list the turns raw finds and cleo-rules does not, by domain")
    ap.add_argument("--chart", type=Path, default=ROOT / "out" / "eval_dialogue.png")
    args = ap.parse_args(argv)
    if any(n in DATASETS for n in args.dataset or DATASETS) and not (args.eval / DATASETS["canard"]).exists():
        sys.exit(f"dialogue data not found under {args.eval}")
    pack = load_pack(args.pack)
    print(f"pack {pack.name} {pack.version} ({pack.content_hash})")
    vectors = None if args.no_embed else Vectors()
    results = {}
    for name in args.dataset or DATASETS:
        rows = load(name, args.eval)[: args.limit]
        if name in TASK_SETS:
            t0 = time.perf_counter()
            res = domain_recall(pack, rows, vectors)
            print_domain_kinds(name, res)
            if vectors is not None:
                print_domain_recall(name, res)
                if args.show_losses:
                    print_domain_losses(name, res)
            print(f"  ({len(rows)} user turns, {len(res['rows'])} reported, in {time.perf_counter() - t0:.0f} s)")
            continue
        t0 = time.perf_counter()
        decisions = decide(pack, rows)
        elapsed = time.perf_counter() - t0
        print_detection(name, detection(rows, decisions))
        print(f"  ({2 * len(rows)} classifications in {elapsed:.2f} s)")
        if args.show:
            label, kind = args.show.split(":")
            pick = 0 if args.history == "user" else 1
            print(f"\n{name}: label {label}, classified {kind} ({args.history} history)")
            for r, ds in zip(rows, decisions):
                d = ds[pick]
                if r["label"] == label and d.kind == kind:
                    print(f"  [{d.rule}] {r['message']!r}  ->  {r['rewrite']!r}")
        if vectors is not None and args.all_turns:
            print_all_turns(name, all_turn_recall(rows, decisions, vectors))
            continue
        if vectors is not None and name != "cast_replies":  # its rows carry no rewrite-word split
            results[name] = quality(rows, queries(rows, decisions), vectors)
            print_quality(name, results[name])
            print_by_parts(name, rows, decisions, results[name])
    if results:
        chart(results, args.chart)


if __name__ == "__main__":
    main()
