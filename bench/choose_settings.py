"""The shaping settings chosen from data, each chosen on all dev sets and, per set, on the others only.

Three settings of ``rules/pack.yaml`` were chosen by measuring: ``reply_words``
(outside an information-seeking conversation, how many words of the last
reply an unresolved follow-up carries), ``reply_max_words`` (in one, the most
words of the last reply a follow-up carries; 0: no conversation is
information-seeking) and ``long_reply_words`` (a reply this long is a passage:
no anchor or topic then; 0: never). For each, a small grid of values is tried,
**one setting varied at a time, the others at their shipped values**: each
value is a copy of the bundled pack with that one line of ``pack.yaml``
changed, compiled from a temporary directory (the compiled-pack cache is off,
so nothing is written to it).

The figure is all-turn answer-recall@5 of the role-tagged query, as
``bench/eval_dialogue.py --all-turns`` measures it (``roles``): on CANARD,
GECOR-CamRest676 and TREC CAsT 2021-22 (``cast_replies``) the turns of the
all-turn filter, and on the Schema-Guided Dialogue train task dialogue
(``sgd_train``) every turn with an answer and a message of 10+ characters,
as its per-domain report counts them (``cleo-rules``); each query ranked among
every distinct assistant utterance of its file, with the torch reference
backend at one thread. Every text is embedded once: the vectors are kept on
disk (``--cache``, keyed by a digest of the text, one file per model and
backend), so a second run, and the many queries the variants share, embed
nothing again.

Per setting, one table: each set's raw figure and its figure at every value
(``*`` marks the shipped one), then the value **chosen on all sets** (most
hits in total; a tie goes to the shipped value, else to the value nearest it,
else the smaller) and, for each set, the value chosen on the **other** sets
(leave-one-dataset-out) and that set's figure with it, beside raw and the
shipped value. A setting whose left-out figure is below raw on any set is
flagged **not to ship**. For the task set, whose figures go by domain, the
domains where the role-tagged query recalls less than raw are listed with the
set's left-out value and with the shipped one (shown, not part of the flag). The line "examples" says whether the variant's pack
still passes its own rule examples.

Usage::

    .venv/bin/python bench/choose_settings.py [--eval DIR] [--cache DIR]
        [--setting NAME ...] [--dataset NAME ...] [--limit N]

``--eval`` is the dialogue folder, as for ``eval_dialogue.py``
(``$CLEO_RULES_EVAL_DIR/dialogue`` when that is set, else ``../shared/eval/dialogue``); ``--limit N`` keeps the first N turns of each set (a quick
look, not a figure). The first run embeds about 30,000 texts (some ten minutes
of one core); later runs take the classifications only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cleo_rules import Pack  # noqa: E402
from eval_dialogue import (DIALOGUE_DIR, K, TASK_SETS, Vectors, all_turn, answer_pool, load,  # noqa: E402
                           task_turn)

#: each setting's grid of values, around the shipped one
GRID = {
    "reply_words": (0, 20, 40, 80, 120),
    "reply_max_words": (0, 50, 100, 150, 250),
    "long_reply_words": (0, 40, 60, 100, 150),
}
SETS = ("canard", "gecor_camrest", "cast_replies", "sgd_train")
#: the dialogue folder: ``$CLEO_RULES_EVAL_DIR/dialogue`` when that is set (a checkout elsewhere), else eval_dialogue's
EVAL_DIALOGUE = Path(os.environ["CLEO_RULES_EVAL_DIR"]) / "dialogue" if os.environ.get("CLEO_RULES_EVAL_DIR") \
    else DIALOGUE_DIR


# ---------------------------------------------------------------- choosing (pure)

def choose(hits: dict[int, int], shipped: int) -> int:
    """The value with the most hits; a tie goes to the shipped value, else to the value nearest it, else the
    smaller."""
    best = max(hits.values())
    tied = [v for v, h in hits.items() if h == best]
    return min(tied, key=lambda v: (abs(v - shipped), v))


def leave_one_out(hits: dict[str, dict[int, int]], shipped: int) -> dict[str, int]:
    """For each set, the value chosen on the hits of the other sets (summed over them)."""
    out = {}
    for left in hits:
        others = [h for name, h in hits.items() if name != left]
        values = hits[left].keys()
        out[left] = choose({v: sum(h[v] for h in others) for v in values}, shipped)
    return out


def below_raw(hits: dict[str, dict[int, int]], raw: dict[str, int], chosen: dict[str, int]) -> list[str]:
    """The sets whose figure with the value chosen for them (``chosen``) is below raw's: a setting with any is
    not to ship."""
    return [name for name in hits if hits[name][chosen[name]] < raw[name]]


# ---------------------------------------------------------------- measuring

class DiskVectors(Vectors):
    """:class:`eval_dialogue.Vectors` whose vectors are also kept on disk, keyed by a digest of the text: texts
    embedded by an earlier run, or by another variant, are read back, never embedded again."""

    def __init__(self, folder: Path):
        super().__init__()
        import numpy as np

        self.folder = Path(folder)
        stem = f"vectors-{self.embedder.model_name}-{self.embedder.backend}"
        self.keys_path, self.data_path = self.folder / f"{stem}.json", self.folder / f"{stem}.npy"
        self.keys: list[str] = []
        self.data = np.zeros((0, 384), dtype="float32")
        if self.keys_path.exists() and self.data_path.exists():
            self.keys = json.loads(self.keys_path.read_text(encoding="utf-8"))
            self.data = np.load(self.data_path)
            if len(self.keys) != len(self.data):
                sys.exit(f"{self.folder}: keys and vectors disagree; remove the two files")
        self.row = {k: i for i, k in enumerate(self.keys)}
        self.saved = len(self.keys)
        self.embedded = 0

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def __call__(self, texts):
        import numpy as np

        keys = [self.key(t) for t in texts]
        todo = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in self.row))
        if todo:
            new = self.embedder.encode(todo)
            for t in todo:
                self.row[self.key(t)] = len(self.keys)
                self.keys.append(self.key(t))
            self.data = np.concatenate([self.data, np.asarray(new, dtype="float32")])
            self.embedded += len(todo)
        return self.data[[self.row[k] for k in keys]] if texts else np.zeros((0, 384), dtype="float32")

    def save(self):
        """Write the vectors out when there are new ones (each file written whole, then moved into place)."""
        import numpy as np

        if len(self.keys) == self.saved:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.data_path.with_suffix(".tmp.npy"), "wb") as fh:
            np.save(fh, self.data)
        self.keys_path.with_suffix(".tmp").write_text(json.dumps(self.keys), encoding="utf-8")
        os.replace(self.data_path.with_suffix(".tmp.npy"), self.data_path)
        os.replace(self.keys_path.with_suffix(".tmp"), self.keys_path)
        self.saved = len(self.keys)


def shipped_settings(rules: Path) -> dict[str, int]:
    """The shipped value of each setting of the grid, read from ``pack.yaml``."""
    from cleo_rules import load_pack

    settings = load_pack(str(rules), check_examples=False).settings
    return {name: getattr(settings, name) for name in GRID}


def variant(rules: Path, into: Path, setting: str, value: int) -> Path:
    """A copy of the pack in ``rules`` with ``setting`` set to ``value`` in its ``pack.yaml``."""
    shutil.copytree(rules, into)
    manifest = into / "pack.yaml"
    text, n = re.subn(rf"^(\s*{setting}:\s*)\d+", rf"\g<1>{value}", manifest.read_text(encoding="utf-8"),
                      count=1, flags=re.M)
    if n != 1:
        sys.exit(f"{manifest}: no line '{setting}: <number>' to change")
    manifest.write_text(text, encoding="utf-8")
    return into


def compile_variant(folder: Path):
    """The pack in ``folder``, and whether it passes its own rule examples (``"hold"`` or the first problem)."""
    from cleo_rules import load_pack
    from cleo_rules.errors import PackError

    try:
        return load_pack(str(folder)), "hold"
    except PackError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return load_pack(str(folder), check_examples=False), f"FAIL: {first[:100]}"


def picked_rows(name: str, eval_dir: Path, limit: int | None) -> tuple[list[dict], list[dict]]:
    """A set's rows (for its answer pool) and the turns measured: the all-turn filter, or for a task set every
    turn with an answer and a message of 10+ characters (its per-domain report's)."""
    rows = load(name, eval_dir)[:limit]
    keep = task_turn if name in TASK_SETS else all_turn
    return rows, [r for r in rows if keep(r)]


def hit_rows(vectors, queries: list[str], pool_v, targets) -> list[bool]:
    """Whether each query ranks its own answer (``targets``, rows of ``pool_v``) among the top ``K``."""
    import numpy as np

    sims = vectors(queries) @ pool_v.T
    own = sims[np.arange(len(queries)), targets]
    return (np.sum(sims > own[:, None], axis=1) < K).tolist()


def measure(packs: dict[tuple, Pack], sets, eval_dir: Path, vectors: DiskVectors, limit: int | None):
    """Per set: the number of turns, each turn's domain (task sets) and whether raw and each variant pack (its
    role-tagged query) find the turn's answer."""
    import numpy as np

    out = {}
    for name in sets:
        t0 = time.perf_counter()
        rows, picked = picked_rows(name, eval_dir, limit)
        pool = answer_pool(rows)
        pool_v = vectors(pool)
        index = {t: i for i, t in enumerate(pool)}
        targets = np.array([index[r["answer"]] for r in picked])
        res = {"n": len(picked), "raw": hit_rows(vectors, [r["message"] for r in picked], pool_v, targets),
               "variants": {}, "domains": [r.get("domain") for r in picked]}
        for key, pack in packs.items():
            queries = [pack.classify(r["message"], r["turns"]).query or r["message"] for r in picked]
            res["variants"][key] = hit_rows(vectors, queries, pool_v, targets)
        vectors.save()
        out[name] = res
        print(f"  {name}: {len(picked)} turns, {len(packs)} variants in {time.perf_counter() - t0:.0f} s "
              f"({vectors.embedded} texts embedded so far)", flush=True)
    return out


# ---------------------------------------------------------------- reporting

def _cell(hits: int, n: int) -> str:
    return f"{hits / n:.3f} ({hits})" if n else "n/a"


def domains_below(domains: list[str], hits: list[bool], raw: list[bool]) -> str:
    """The domains where ``hits`` are fewer than raw's, each with the difference."""
    net: dict[str, int] = {}
    for domain, h, r in zip(domains, hits, raw):
        net[domain] = net.get(domain, 0) + int(h) - int(r)
    below = [f"{d} {n:+d}" for d, n in sorted(net.items()) if n < 0]
    return f"{len(below)} of {len(net)}" + (f" ({', '.join(below)})" if below else "")


def report(setting: str, shipped: int, values, results: dict, examples: dict[int, str]) -> bool:
    """Print the setting's table; whether it is flagged not to ship."""
    key = (lambda v: ("shipped",) if v == shipped else (setting, v))
    hits = {name: {v: sum(res["variants"][key(v)]) for v in values} for name, res in results.items()}
    raw = {name: sum(res["raw"]) for name, res in results.items()}
    on_all = choose({v: sum(h[v] for h in hits.values()) for v in values}, shipped)
    left_out = leave_one_out(hits, shipped) if len(hits) > 1 else {}
    below = below_raw(hits, raw, left_out) if left_out else []
    names = [f"{v}{'*' if v == shipped else ''}" for v in values]
    print(f"\n{setting}: all-turn answer-recall@{K} (hits) by value; * shipped ({shipped}); "
          "the other settings at their shipped values")
    print(f"  {'set':<14}{'n':>6}{'raw':>15}" + "".join(f"{v:>15}" for v in names)
          + f"{'left out: value':>17}{'figure':>15}{'vs raw':>8}{'vs shipped':>12}")
    for name, res in results.items():
        n = res["n"]
        line = f"  {name:<14}{n:>6}{_cell(raw[name], n):>15}" + "".join(f"{_cell(hits[name][v], n):>15}" for v in values)
        if left_out:
            v = left_out[name]
            line += (f"{v:>17}{_cell(hits[name][v], n):>15}{hits[name][v] - raw[name]:>+8d}"
                     f"{hits[name][v] - hits[name][shipped]:>+12d}")
        print(line)
    total_n = sum(res["n"] for res in results.values())
    print(f"  {'total':<14}{total_n:>6}{_cell(sum(raw.values()), total_n):>15}"
          + "".join(f"{_cell(sum(h[v] for h in hits.values()), total_n):>15}" for v in values))
    print(f"  {'examples':<20}{'':>15}" + "".join(f"{examples[v][:13]:>15}" for v in values))
    for v in values:
        if examples[v] != "hold":
            print(f"    {setting}={v}: {examples[v]}")
    print(f"  chosen on all sets: {on_all}" + (" (the shipped value)" if on_all == shipped else
                                               f" (shipped {shipped})"))
    for name, res in results.items():
        if left_out and any(res["domains"]):
            shown = {f"left-out value {left_out[name]}": res["variants"][key(left_out[name])],
                     f"shipped value {shipped}": res["variants"][key(shipped)]}
            for label, rows in shown.items():
                print(f"  {name} domains below raw with the {label}: {domains_below(res['domains'], rows, res['raw'])}")
    if left_out:
        print(f"  left-out figure below raw: {', '.join(below) if below else 'nowhere'}"
              + (f" -> {setting} NOT TO SHIP" if below else ""))
    return bool(below)


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--eval", type=Path, default=EVAL_DIALOGUE,
                    help="the dialogue folder, as for eval_dialogue.py (cast_turns.jsonl beside it)")
    ap.add_argument("--cache", type=Path, default=ROOT / "out" / "choose_settings",
                    help="where the embedded vectors are kept between runs")
    ap.add_argument("--rules", type=Path, default=ROOT / "rules", help="the pack whose settings are varied")
    ap.add_argument("--setting", choices=sorted(GRID), action="append", help="repeatable; all by default")
    ap.add_argument("--dataset", choices=SETS, action="append", help="repeatable; all by default")
    ap.add_argument("--limit", type=int, default=None, help="first N turns of each set only")
    args = ap.parse_args(argv)
    if not (args.eval / "canard.jsonl").exists():
        sys.exit(f"dialogue data not found under {args.eval}")
    os.environ["CLEO_RULES_CACHE"] = "off"  # the variants are compiled, never cached
    start, cpu = time.perf_counter(), time.process_time()
    settings = args.setting or list(GRID)
    shipped = shipped_settings(args.rules)
    print(f"shipped: {', '.join(f'{s}={v}' for s, v in shipped.items())}; grid: "
          + "; ".join(f"{s} {list(GRID[s])}" for s in settings))
    packs, examples = {}, {s: {} for s in settings}
    with tempfile.TemporaryDirectory(prefix="cleo-settings-") as tmp:
        packs[("shipped",)], held = compile_variant(variant(args.rules, Path(tmp, "shipped"), settings[0],
                                                            shipped[settings[0]]))
        for s in settings:
            for v in GRID[s]:
                if v == shipped[s]:
                    examples[s][v] = held
                    continue
                packs[(s, v)], examples[s][v] = compile_variant(variant(args.rules, Path(tmp, f"{s}-{v}"), s, v))
    print(f"{len(packs)} packs compiled in {time.perf_counter() - start:.0f} s", flush=True)
    vectors = DiskVectors(args.cache)
    results = measure(packs, args.dataset or SETS, args.eval, vectors, args.limit)
    flagged = [s for s in settings
               if report(s, shipped[s], sorted(set(GRID[s]) | {shipped[s]}), results, examples[s])]
    print(f"\nnot to ship: {', '.join(flagged) if flagged else 'none'}")
    print(f"({vectors.embedded} texts embedded, {len(vectors.keys)} in {args.cache}; "
          f"{time.perf_counter() - start:.0f} s wall, {time.process_time() - cpu:.0f} s CPU)")


if __name__ == "__main__":
    main()
