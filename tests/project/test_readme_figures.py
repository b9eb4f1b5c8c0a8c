"""The README's headline figures table: `make figures` (bench/figures.py) writes it between two markers, and the
counts it quotes are the bundled pack's, as `cleo-rules check` counts them (the measured figures are rewritten
by the script, not checked here: measuring takes minutes)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from helpers import ROOT
from helpers.readme import example_env

spec = importlib.util.spec_from_file_location("figures", ROOT / "bench" / "figures.py")
assert spec and spec.loader
figures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(figures)


def the_table() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")  # as it is now: later edits are checked too
    assert text.count(figures.BEGIN) == 1 and text.count(figures.END) == 1, "the figures table's markers"
    start, end = text.index(figures.BEGIN) + len(figures.BEGIN), text.index(figures.END)
    assert start < end
    return text[start:end].strip()


def rows() -> dict[str, str]:
    lines = the_table().splitlines()
    assert lines[:2] == ["| figure | value | command |", "| --- | --- | --- |"]
    cells = [line.strip("|").split(" | ") for line in lines[2:]]
    assert all(len(c) == 3 for c in cells), lines
    return {name.strip(): value.strip() for name, value, _ in cells}


def test_the_table_sits_between_its_markers_with_a_row_per_script():
    table = the_table()
    assert len(table.splitlines()) >= 2 + 8
    for script in ("cleo-rules check", "eval_shared.py", "eval_business.py", "eval_retrieval.py"):
        assert script in table, script


def test_the_counts_the_table_quotes_are_the_bundled_packs(tmp_path):
    done = subprocess.run([sys.executable, "-m", "cleo_rules", "check", "--format", "json"], cwd=tmp_path,
                          env=example_env(tmp_path), capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout)
    summary = report["corpus"]["summary"]
    quoted = rows()
    assert quoted["the bundled pack cleo-en's rules"] == (
        f"{report['corrections']} corrections, {report['follow_ups']} follow-up patterns, "
        f"{report['vocabulary_sets']} vocabulary sets")
    assert quoted["its corpus"] == f"{summary['cases']:,} cases over {summary['rules']} rules"


def test_the_script_rewrites_only_what_lies_between_the_markers():
    text = f"before\n{figures.BEGIN}\n| old |\n{figures.END}\nafter {figures.BEGIN[:4]}\n"
    new = figures.rewrite(text, "| figure | value | command |")
    assert new == f"before\n{figures.BEGIN}\n| figure | value | command |\n{figures.END}\nafter {figures.BEGIN[:4]}\n"
    assert figures.rewrite(new, "| figure | value | command |") == new
    assert figures.table([("a", "1", "`x`")]).splitlines()[-1] == "| a | 1 | `x` |"
