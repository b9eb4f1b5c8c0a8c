"""Any mutation of the bundled pack's files: ``check`` passes or names located errors (issue 12, "Done when").

Hypothesis mutates one file of a copy of the bundled pack (random bytes,
truncation, deep nesting, YAML tags and anchors, values of another type) and
runs ``cleo-rules check --json`` on it in a fresh interpreter with at most
5 s of CPU time (``RLIMIT_CPU``) and 1 GB of address space (``RLIMIT_AS``).
The outcome is exit 0, or exit 1 with a first error placed at
``file:line:col`` with a code and help; never a traceback, an internal error,
a kill or a hang. The examples are derandomised and their number fixed, so
every run tries the same mutations.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cleo_rules.resources import corpus_dir, rules_dir

from helpers.hostile import run_python

FILES = sorted(p.name for p in rules_dir().glob("*.yaml"))
# a bound against a hang or a runaway pattern, not a speed target (bench/bench_corpus.py measures that): a check of
# the whole bundled pack and its 6,798 corpus cases, one file mutated, takes 4.7-5.3 s of CPU here
CPU_SECONDS = 10
MEMORY = 1 << 30

CHECK = f'''
import resource
resource.setrlimit(resource.RLIMIT_CPU, ({CPU_SECONDS}, {CPU_SECONDS}))
import sys
from cleo_rules.cli import main
main(["check", "--json", sys.argv[1]])
'''

NESTING = st.integers(1, 3000).map(lambda n: "[" * n + "]" * n) | st.integers(1, 600).map(
    lambda n: "".join("\n" + "  " * (i + 1) + f"k{i}:" for i in range(n)) + " v")
TAGS = st.sampled_from(["!!int ", "!!float ", "!!bool ", "!!str ", "!!binary ", "!!python/object:os.system ",
                        "!!python/name:os.system ", "!custom ", "&a ", "*a ", "!!set ", "!!timestamp "])
OTHER_VALUES = st.sampled_from(["42", "-1", "10.0", "1:30", ".nan", ".inf", "~", "''", "[]", "{}", "[a, b]",
                                "{x: 1}", "yes", "9" * 5000, "'\\x00'", '"\\0"', "\"\\u2028\"", "- a"])


@st.composite
def mutations(draw):
    """``(file name, mutated text)`` for one file of the bundled pack."""
    name = draw(st.sampled_from(FILES))
    text = (rules_dir() / name).read_text(encoding="utf-8")
    lines = text.split("\n")
    kind = draw(st.sampled_from(["bytes", "truncate", "nesting", "tag", "type"]))
    if kind == "truncate":
        return name, text[: draw(st.integers(0, len(text)))]
    if kind == "bytes":
        at = draw(st.integers(0, len(text)))
        junk = draw(st.binary(min_size=1, max_size=16)).decode("latin-1")
        return name, text[:at] + junk + text[at:]
    index = draw(st.integers(0, len(lines) - 1))
    line = lines[index]
    head, sep, tail = line.partition(": ")
    if not sep:  # a line with no value: put the mutation at its end
        head, sep, tail = line, (": " if line.strip() and not line.strip().startswith(("-", "#")) else " "), ""
    if kind == "nesting":
        new = head + sep + draw(NESTING)
    elif kind == "tag":
        new = head + sep + draw(TAGS) + tail
    else:
        new = head + sep + draw(OTHER_VALUES)
    lines[index] = new
    return name, "\n".join(lines)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A copy of the bundled pack and its corpus, restored file by file after each example."""
    root = tmp_path_factory.mktemp("mutations")
    shutil.copytree(rules_dir(), root / "rules")
    shutil.copytree(corpus_dir(), root / "corpus")
    return root


def _corpus_only_mutation() -> tuple[str, str]:
    """A byte that leaves the pack compiling but breaks corpus cases: a space before a pattern's first word."""
    text = (rules_dir() / "corrections.yaml").read_text(encoding="utf-8")
    at = text.index("\\bbeen there")
    return "corrections.yaml", text[:at] + " " + text[at:]


@settings(max_examples=28, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mutation=mutations())
@example(mutation=_corpus_only_mutation())  # found by a newer hypothesis: only corpus cases fail
def test_any_mutation_of_the_bundled_pack_passes_check_or_is_a_located_error(workdir, mutation):
    name, text = mutation
    target: Path = workdir / "rules" / name
    original = (rules_dir() / name).read_bytes()
    target.write_bytes(text.encode("utf-8", "surrogateescape"))
    try:
        res = run_python(CHECK, str(workdir / "rules"), memory=MEMORY, seconds=60)
    finally:
        target.write_bytes(original)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr[-3000:]
    assert res.returncode in (0, 1), (res.returncode, res.stderr[-3000:])  # a kill by a limit is negative
    doc = json.loads(res.stdout)
    if res.returncode == 0:
        assert doc["ok"] is True
        return
    # a pack that compiles is judged by its corpus: those problems are the corpus report's, and a
    # case that fails is placed at its line in the corpus
    corpus = doc.get("corpus") or {}
    problems = doc.get("problems") or corpus.get("problems") or []
    errors = [p for p in problems if p["severity"] == "error"]
    failures = [f for group in (*corpus.get("rules", ()), *corpus.get("groups", ())) for f in group["failures"]]
    assert doc["ok"] is False and (errors or failures), doc
    if not errors:
        assert all(f["file"] and f["line"] >= 1 and f["reasons"] for f in failures), failures
        return
    first = errors[0]
    assert first["code"].startswith("E") and first["help"] and first["file"]
    assert first["line"] >= 1 and first["col"] >= 1, first
    assert all(p["code"] and p["file"] for p in errors), errors
