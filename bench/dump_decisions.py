"""Every decision the bundled pack makes on the turns we have, one JSON line each.

A record of behaviour to compare two versions of the code by: a change that
should not alter any decision is checked by dumping before and after and
comparing the two files. Each line holds a stable id (dataset, then the
item's own id or line), the message, the history it was classified with,
and the decision's ``kind``, ``rule``, ``span``, ``matched``, ``query``,
``anchor`` and ``note``.

Items, in this order (each dataset in its file's order):

* ``sgd``: every SGD user turn (``../shared/eval/sgd_user_turns.jsonl``),
  with the earlier user utterances of the same dialogue as history;
* ``cast``: every TREC CAsT turn (``cast_turns.jsonl``), with its
  ``previous_raw_utterances`` (the earlier user turns of its topic, or of
  its branch in 2022) as history;
* ``canard`` and ``gecor``: every turn of ``dialogue/canard.jsonl`` and
  ``dialogue/gecor_camrest.jsonl``, with their ``history`` field (user
  messages only);
* ``corpus``: every case of ``corpus/generated/*.yaml`` and
  ``corpus/regressions.yaml``, with its history;
* ``dialogues``: every turn of ``cleo_rules/data/eval/dialogues.yaml``,
  with the earlier user messages of its dialogue as history;
* ``canard-roles`` and ``gecor-roles``: every turn of the dialogue sets again,
  with the role-tagged conversation before it (their ``turns`` field), and
  the decision's ``parts`` (each with where it came from) as well.

A file ending in ``.gz`` is written and read gzip-compressed (with no
timestamp, so the same decisions give the same bytes).

Usage:
  python bench/dump_decisions.py [OUT]              (default bench/decisions/main.jsonl.gz)
  python bench/dump_decisions.py --compare A B      per-dataset count of differences, then the differing lines
"""

from __future__ import annotations

import argparse
import collections
import gzip
import io
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cleo_rules import load_pack  # noqa: E402
from evaldata import EVAL_DIR, read_jsonl  # noqa: E402

DEFAULT_OUT = ROOT / "bench" / "decisions" / "main.jsonl.gz"
FIELDS = ("kind", "rule", "span", "matched", "query", "anchor", "note")


def sgd_items(eval_dir: Path):
    seen: dict[tuple[str, str], list[tuple[int, str]]] = collections.defaultdict(list)
    rows = list(read_jsonl(eval_dir / "sgd_user_turns.jsonl"))
    for row in rows:
        seen[(row["split"], row["dialogue_id"])].append((row["turn_index"], row["utterance"]))
    for row in rows:
        earlier = sorted(t for t in seen[(row["split"], row["dialogue_id"])] if t[0] < row["turn_index"])
        yield (f"{row['split']}/{row['dialogue_id']}#{row['turn_index']}", row["utterance"],
               [u for _, u in earlier])


def cast_items(eval_dir: Path):
    for row in read_jsonl(eval_dir / "cast_turns.jsonl"):
        yield f"{row['year']}/{row['turn_id']}", row["raw_utterance"], list(row.get("previous_raw_utterances") or [])


def dialogue_items(eval_dir: Path, name: str, field: str = "history"):
    for row in read_jsonl(eval_dir / "dialogue" / name):
        yield f"{row['conv_id']}#{row['turn']}", row["message"], list(row.get(field) or [])


def corpus_items(corpus_dir: Path):
    files = sorted((corpus_dir / "generated").glob("*.yaml")) + [corpus_dir / "regressions.yaml"]
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for number, case in enumerate(data.get("cases") or []):
            rel = path.relative_to(corpus_dir).as_posix()
            yield f"{rel}/{case['id']}#{number}", case["message"], list(case.get("history") or [])


def eval_dialogue_items(path: Path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for dialogue in data["dialogues"]:
        earlier: list[str] = []
        for number, turn in enumerate(dialogue["turns"]):
            yield f"{dialogue['id']}#{number}", turn["message"], list(earlier)
            earlier.append(turn["message"])


def datasets(eval_dir: Path):
    """``(dataset, items)`` in dump order; items are ``(id, message, history)``."""
    return [
        ("sgd", sgd_items(eval_dir)),
        ("cast", cast_items(eval_dir)),
        ("canard", dialogue_items(eval_dir, "canard.jsonl")),
        ("gecor", dialogue_items(eval_dir, "gecor_camrest.jsonl")),
        ("corpus", corpus_items(ROOT / "corpus")),
        ("dialogues", eval_dialogue_items(ROOT / "cleo_rules" / "data" / "eval" / "dialogues.yaml")),
        ("canard-roles", dialogue_items(eval_dir, "canard.jsonl", "turns")),
        ("gecor-roles", dialogue_items(eval_dir, "gecor_camrest.jsonl", "turns")),
    ]


ROLE_DATASETS = ("canard-roles", "gecor-roles")


def dump(out: Path, eval_dir: Path, pack_dir=None) -> collections.Counter:
    pack = load_pack(pack_dir)
    counts: collections.Counter = collections.Counter()
    ids: set[str] = set()
    lines = []
    for name, items in datasets(eval_dir):
        for item_id, message, history in items:
            key = f"{name}/{item_id}"
            if key in ids:
                raise SystemExit(f"duplicate id {key}")
            ids.add(key)
            d = pack.classify(message, history)
            record = {"id": key, "message": message, "history": history}
            record.update((f, getattr(d, f)) for f in FIELDS)
            record["span"] = list(d.span) if d.span else None
            if name in ROLE_DATASETS:
                record["parts"] = [p.to_dict() for p in d.parts]
            lines.append(json.dumps(record, ensure_ascii=False, sort_keys=False))
            counts[name] += 1
    body = ("\n".join(lines) + "\n").encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".gz":
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
            gz.write(body)
        out.write_bytes(buf.getvalue())
    else:
        out.write_bytes(body)
    return counts


def read(path: Path) -> dict[str, str]:
    """id -> line (the JSON text, as written) of a dump."""
    raw = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    out = {}
    for line in raw.decode("utf-8").splitlines():
        if line.strip():
            out[json.loads(line)["id"]] = line
    return out


def compare(a: Path, b: Path, *, show: int | None = None) -> int:
    """Print per-dataset counts of differing items, then the items; the number of differences."""
    left, right = read(a), read(b)
    order = list(left) + [k for k in right if k not in left]
    per: collections.Counter = collections.Counter()
    total: collections.Counter = collections.Counter()
    diffs = []
    for key in order:
        dataset = key.split("/", 1)[0]
        total[dataset] += 1
        x, y = left.get(key), right.get(key)
        if x is None or y is None or json.loads(x) != json.loads(y):
            per[dataset] += 1
            diffs.append((key, x, y))
    print(f"{'dataset':<12}{'items':>8}{'differ':>8}")
    for dataset in total:
        print(f"{dataset:<12}{total[dataset]:>8}{per[dataset]:>8}")
    print(f"{'all':<12}{sum(total.values()):>8}{sum(per.values()):>8}")
    for key, x, y in diffs[:show]:
        if x is None or y is None:
            print(f"\n{key}: only in {b if x is None else a}")
            continue
        dx, dy = json.loads(x), json.loads(y)
        fields = [f for f in list(dx) + [f for f in dy if f not in dx] if dx.get(f) != dy.get(f)]
        print(f"\n{key}: {', '.join(fields)} differ")
        print(f"- {x}")
        print(f"+ {y}")
    return sum(per.values())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    ap.add_argument("--show", type=int, default=None, help="with --compare: show at most this many items")
    ap.add_argument("--eval", type=Path, default=EVAL_DIR)
    ap.add_argument("--pack", default=None)
    args = ap.parse_args(argv)
    if args.compare:
        sys.exit(1 if compare(*args.compare, show=args.show) else 0)
    counts = dump(args.out, args.eval, args.pack)
    print(f"{sum(counts.values())} decisions written to {args.out}: "
          + ", ".join(f"{name} {n}" for name, n in counts.items()))


if __name__ == "__main__":
    main()
