"""The README's headline figures table, from measurements (`make figures`).

Runs the measuring scripts (eval_shared.py, eval_business.py, eval_retrieval.py; the embedding model at one
thread) and `cleo-rules check` on the bundled pack, and writes their figures into README.md between the
markers below, each row with the command that measures it. Takes minutes (eval_retrieval.py embeds); it is not
part of `make test`, which checks that the markers are there and that the counts quoted are the pack's.

    python bench/figures.py            # rewrite README.md's table
    python bench/figures.py --print    # print the table only
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
README = ROOT / "README.md"
BEGIN = "<!-- figures:begin: bench/figures.py writes this table (make figures); edit the script, not the table -->"
END = "<!-- figures:end -->"
ENV = {**os.environ, "CLEO_EMBED_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def run(*argv: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:  # outside the checkout: the bundled pack, as installed
        done = subprocess.run([sys.executable, *argv], cwd=tmp, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def pack_counts() -> dict:
    """What `cleo-rules check` counts in the bundled pack: its rules and its corpus."""
    report = json.loads(run("-m", "cleo_rules", "check", "--format", "json"))
    summary = report["corpus"]["summary"]
    return {"corrections": report["corrections"], "follow_ups": report["follow_ups"],
            "vocabulary_sets": report["vocabulary_sets"], "cases": summary["cases"], "rules": summary["rules"]}


def pack_rows(c: dict) -> list[tuple[str, str, str]]:
    return [("the bundled pack cleo-en's rules",
             f"{c['corrections']} corrections, {c['follow_ups']} follow-up patterns, {c['vocabulary_sets']} vocabulary sets",
             "`cleo-rules check`"),
            ("its corpus", f"{c['cases']:,} cases over {c['rules']} rules", "`cleo-rules check`")]


def shared_rows() -> list[tuple[str, str, str]]:
    out = run(str(BENCH / "eval_shared.py"))
    head = out[out.index("Headline figures"):out.index("Other figures")]
    return [(name.strip(), f"{value} ({hit}/{total})", "`python bench/eval_shared.py`")
            for name, value, hit, total in re.findall(r"^  (.+?)\s+(\d\.\d{3})  \((\d+)/(\d+)\)", head, re.M)]


def business_rows() -> list[tuple[str, str, str]]:
    figures = json.loads(run(str(BENCH / "eval_business.py"), "--json"))
    rows = []
    for h in figures["headline"]:
        op, aim = h["target"]
        value = f"{h['value']:.3f}" if isinstance(h["value"], float) else str(h["value"])
        rows.append((f"business register: {h['figure']}", f"{value} (aim {op} {aim})", "`python bench/eval_business.py`"))
    return rows


def retrieval_rows() -> list[tuple[str, str, str]]:
    out = run(str(BENCH / "eval_retrieval.py"), "--no-cast")
    sys.path.insert(0, str(BENCH))
    from eval_retrieval import MODES

    rows = []
    for kind in ("follow_up", "substantive"):
        line = re.search(rf"^{kind}\s+(\d+)\s+(.*)$", out, re.M)
        if line is None:
            raise SystemExit(f"eval_retrieval.py printed no {kind} row:\n{out}")
        shares = dict(zip(MODES, re.findall(r"(\d+\.\d)%", line.group(2))))
        rows.append((f"shaped retrieval, {kind} turns ({line.group(1)}): irrelevant share of the top 3",
                     f"raw {shares['raw']}%, user-only history {shares['shaped']}%, with replies {shares['roles']}%",
                     "`python bench/eval_retrieval.py --no-cast`"))
    return rows


def table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| figure | value | command |", "| --- | --- | --- |"]
    lines += [f"| {name} | {value} | {command} |" for name, value, command in rows]
    return "\n".join(lines)


def rewrite(text: str, new_table: str) -> str:
    """README text with the table between the markers replaced."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + new_table + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--print", dest="only_print", action="store_true", help="print the table, leave README.md")
    ap.add_argument("--no-embed", action="store_true", help="leave out the figures that embed (eval_retrieval.py)")
    args = ap.parse_args(argv)
    rows = pack_rows(pack_counts()) + shared_rows() + business_rows()
    if not args.no_embed:
        rows += retrieval_rows()
    new_table = table(rows)
    if args.only_print:
        print(new_table)
        return 0
    README.write_text(rewrite(README.read_text(encoding="utf-8"), new_table), encoding="utf-8")
    print(f"README.md: figures table rewritten ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
