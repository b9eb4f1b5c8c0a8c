"""The pack on a small business owner's conversations: detection, subject kept, rejected words, bare referents.

Reads ``../shared/eval/business/cases.jsonl`` (conversations of small
businesses written independently of the rules; see that folder's README):
each case is a message, the role-tagged conversation before it (a string is
a user message, ``{"role", "content"}`` a reply), its label (``follow_up``,
``correction`` or ``substantive``), the subject stems a good query contains
and, for a correction that rejects a named option, that option's words.
Classifies each message with its history through the bundled pack (or
``--pack``) and prints, per label:

* **detection**: the share classified as the label (a skip is not detected);
* **subject kept**: the share of follow-ups and corrections whose query
  (``Decision.query``; none for a skip) contains one of the subject stems,
  a case-insensitive substring;
* **rejected words searched**: the queries (any label) holding a word of the
  rejected option that the message itself does not hold (whole words, lower case);
* **bare-value referents**: decisions whose referent part is only digits,
  punctuation, currency, units, times or dates (``bench/bare_value.py``).

Then the headline figures beside the targets of issue 31.

Usage::

    .venv/bin/python bench/eval_business.py [--eval DIR] [--pack DIR] [--misses] [--json]

``--eval`` is the folder of ``cases.jsonl``: by default ``business/`` under
``$CLEO_RULES_EVAL_DIR`` when set, else under ``../shared/eval``.

``--misses`` adds one line per miss (id, label -> kind, rule, what was missed,
the query cut short); ``--json`` prints the figures and every case's
decision as one JSON document instead of the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bare_value import is_bare_value  # noqa: E402
from evaldata import EVAL_DIR, read_jsonl  # noqa: E402

from cleo_rules import CleoError, load_pack  # noqa: E402

#: the cases' folder: ``$CLEO_RULES_EVAL_DIR/business`` when that is set (a checkout elsewhere), else ../shared/eval
BUSINESS_DIR = Path(os.environ.get("CLEO_RULES_EVAL_DIR") or EVAL_DIR) / "business"
LABELS = ("follow_up", "correction", "substantive")
#: the targets of issue 31 on this set: (figure, comparison, value)
TARGETS = {
    "follow_up detected": (">=", 0.75),
    "correction detected": (">=", 0.50),
    "substantive detected": (">=", 0.90),
    "subject kept": (">=", 0.85),
    "rejected words searched": ("==", 0),
    "bare-value referents": ("==", 0),
}
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def words(text: str | None) -> set[str]:
    """The lowercase words of ``text`` (letters and digits, inner apostrophes kept); none for ``None``."""
    return {w.lower() for w in _WORD.findall(text or "")}


def subject_kept(query: str | None, stems) -> bool:
    """Whether the query holds one of the subject stems (lowercase substring); a skip keeps nothing."""
    low = (query or "").lower()
    return query is not None and any(stem.lower() in low for stem in stems)


def rejected_searched(query: str | None, message: str, rejected) -> list[str]:
    """The rejected words the query holds and the message does not (whole words, lower case)."""
    said, searched = words(message), words(query)
    return sorted({w.lower() for w in rejected if w.lower() in searched and w.lower() not in said})


def judge(case: dict, decision) -> dict:
    """One case's decision and what it scores on each figure."""
    label, query = case["label"], decision.query
    referent = decision.referent
    row = {
        "id": case["id"], "label": label, "kind": str(decision.kind), "rule": decision.rule,
        "message": case["message"], "query": query, "referent": referent,
        "detected": str(decision.kind) == label,
        "subject_kept": subject_kept(query, case.get("subject") or ()) if label != "substantive" else None,
        "rejected_searched": rejected_searched(query, case["message"], case.get("rejected") or ()),
        "bare_referent": referent is not None and is_bare_value(referent),
    }
    return row


def ratio(hit: int, total: int) -> dict:
    return {"share": hit / total if total else None, "hit": hit, "total": total}


def figures(rows: list[dict]) -> dict:
    """Every figure from the judged rows: per label and overall."""
    by_label = Counter(r["label"] for r in rows)
    kinds = {label: Counter(r["kind"] for r in rows if r["label"] == label) for label in LABELS}
    detected = {label: ratio(sum(r["detected"] for r in rows if r["label"] == label), by_label[label])
                for label in LABELS}
    kept = {label: ratio(sum(bool(r["subject_kept"]) for r in rows if r["label"] == label), by_label[label])
            for label in ("follow_up", "correction")}
    dependent = [r for r in rows if r["label"] != "substantive"]
    kept["overall"] = ratio(sum(bool(r["subject_kept"]) for r in dependent), len(dependent))
    rejected = {label: sum(bool(r["rejected_searched"]) for r in rows if r["label"] == label) for label in LABELS}
    rejected["overall"] = sum(rejected[label] for label in LABELS)
    bare = {label: sum(r["bare_referent"] for r in rows if r["label"] == label) for label in LABELS}
    bare["overall"] = sum(bare[label] for label in LABELS)
    referents = sum(r["referent"] is not None for r in rows)
    return {"cases": dict(by_label), "kinds": {k: dict(v) for k, v in kinds.items()}, "detected": detected,
            "subject_kept": kept, "rejected_searched": rejected, "bare_referents": bare,
            "referents": referents}


def headline(fig: dict) -> list[tuple[str, float | int, str]]:
    """``(figure, value, as printed)`` for the figures issue 31 sets targets for."""
    out = []
    for label in LABELS:
        d = fig["detected"][label]
        out.append((f"{label} detected", d["share"], f"{d['share']:.3f} ({d['hit']}/{d['total']})"))
    k = fig["subject_kept"]["overall"]
    out.append(("subject kept", k["share"], f"{k['share']:.3f} ({k['hit']}/{k['total']})"))
    out.append(("rejected words searched", fig["rejected_searched"]["overall"],
                f"{fig['rejected_searched']['overall']} queries"))
    out.append(("bare-value referents", fig["bare_referents"]["overall"],
                f"{fig['bare_referents']['overall']} of {fig['referents']} referents"))
    return out


def met(name: str, value) -> bool:
    op, target = TARGETS[name]
    return value is not None and (value >= target if op == ">=" else value == target)


def misses(row: dict) -> list[str]:
    """What a case missed: its detection, its subject, a rejected word searched, a bare referent."""
    out = []
    if not row["detected"]:
        out.append("detection")
    if row["subject_kept"] is False:
        out.append("subject")
    if row["rejected_searched"]:
        out.append("rejected " + ",".join(row["rejected_searched"]))
    if row["bare_referent"]:
        out.append(f"bare referent {row['referent']!r}")
    return out


def cut(text: str | None, width: int = 70) -> str:
    if text is None:
        return "-"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_report(pack, fig: dict, rows: list[dict], show_misses: bool) -> None:
    print(f"pack {pack.name} {pack.version} ({pack.content_hash})")
    print(f"business cases: {sum(fig['cases'].values())} {fig['cases']}")
    print(f"\n  {'label':<14}{'skip':>8}{'correction':>12}{'follow_up':>11}{'substantive':>13}"
          f"{'detected':>20}{'subject kept':>20}{'rejected':>10}{'bare ref':>10}")
    for label in LABELS:
        kinds, d = fig["kinds"][label], fig["detected"][label]
        k = fig["subject_kept"].get(label)
        kept = f"{k['share']:.3f} ({k['hit']}/{k['total']})" if k else "-"
        print(f"  {label:<14}{kinds.get('skip', 0):>8}{kinds.get('correction', 0):>12}{kinds.get('follow_up', 0):>11}"
              f"{kinds.get('substantive', 0):>13}{d['share']:>8.3f} ({d['hit']:>2}/{d['total']:>2})"
              f"{kept:>20}{fig['rejected_searched'][label]:>10}{fig['bare_referents'][label]:>10}")
    print("\nHeadline figures (issue 31 targets)")
    print(f"  {'figure':<26}{'measured':>22}   {'target':<10}")
    for name, value, shown in headline(fig):
        op, target = TARGETS[name]
        aim = f"{op} {target:.2f}" if isinstance(target, float) else f"{op} {target}"
        print(f"  {name:<26}{shown:>22}   {aim:<10}{'met' if met(name, value) else 'NOT met'}")
    if show_misses:
        print("\nMisses (id, label -> kind, rule: what was missed | query)")
        for row in rows:
            missed = misses(row)
            if missed:
                print(f"  {row['id']} {row['label']} -> {row['kind']}, {row['rule'] or '-'}: {'; '.join(missed)}"
                      f" | {cut(row['query'])}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--eval", type=Path, default=BUSINESS_DIR, help="the folder of cases.jsonl")
    ap.add_argument("--pack", default=None, help="a rule pack folder (default: the bundled pack)")
    ap.add_argument("--misses", action="store_true", help="one line per case that misses a figure")
    ap.add_argument("--json", action="store_true", help="the figures and every case as JSON")
    args = ap.parse_args(argv)
    path = args.eval / "cases.jsonl"
    if not path.is_file():
        sys.exit(f"evaluation data not found: {path} (expected the business cases.jsonl)")
    try:
        pack = load_pack(args.pack)
    except CleoError as exc:
        sys.exit(f"Error: {exc}")
    cases = list(read_jsonl(path))
    rows = [judge(case, pack.classify(case["message"], case["history"])) for case in cases]
    fig = figures(rows)
    if args.json:
        doc = {"pack": {"name": pack.name, "version": pack.version, "hash": pack.content_hash},
               "figures": fig,
               "headline": [{"figure": name, "value": value, "target": list(TARGETS[name]), "met": met(name, value)}
                            for name, value, _ in headline(fig)],
               "cases": rows}
        print(json.dumps(doc, ensure_ascii=False, indent=1))
    else:
        print_report(pack, fig, rows, args.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
